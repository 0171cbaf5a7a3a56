"""Device backends. ``cuda`` is the NVIDIA one; an AMD (HIP/HSA) backend would be a sibling package
with the same pieces: device checks, GEMM, transports, partitioning, counters."""
