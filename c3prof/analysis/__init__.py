"""Analysis of c3prof traces: pure numpy/scipy, no GPU imports (a report runs on a laptop).

One module per analysis, in the order data flows through them:

- ``stats``         bootstrap confidence intervals (generic ``bootstrap_ci``; exact median resampling)
- ``dataset``       read and merge trace files into runs grouped by platform (duplicates handled here)
- ``speedup``       per-run speedups, fraction of ideal and per-kernel slowdowns, each with an interval
- ``strategies``    per-strategy summary over scenarios (hierarchical bootstrap), oracle and default variant
- ``taxonomy``      G-long / C-long / GC-equal, compute- vs memory-bound GEMM, latency- vs bandwidth-bound comm
- ``counters``      hardware-counter summaries (L2 sectors, non-SM share)
- ``falsification`` the no-interference premise of DMA transfers, tested with a stated rule

Nothing here imports torch, CUDA, cuda.bindings or c3prof._dma; tests/test_report_imports.py checks it.
"""
