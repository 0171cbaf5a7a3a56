"""``c3prof report``: trace files in; terminal tables, JSON, CSV, figures and a Perfetto trace out.

``build.build_report`` turns merged traces into one dict (schema: docs/report.md); every writer here
renders that dict, so the outputs always agree. No module here imports torch or CUDA.
"""
