"""c3prof: profile and analyze concurrent computation and communication (C3) on GPU nodes.

Data flows one way: scenarios -> capture (GPU) -> trace file -> analysis -> report and figures.
Only ``c3prof.capture`` and ``c3prof.backends`` touch the GPU; everything else runs on any machine.
"""

__version__ = "0.1.0"
