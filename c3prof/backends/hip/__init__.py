"""AMD backend: the HIP runtime extension (runtime/*.pyx over hip-python's ``hip.chip``: streams with
priority or CU mask, events, pinned memory, copy batches, IPC, stream write/wait of a flag), CU-mask
partitions balanced over XCDs, SDMA transports, an IPC DMA collective, RCCL through torch,
rocprofv3 counters and AMD SMI engine evidence. Imported only by `c3prof capture`, through the
registry (c3prof/backends/__init__.py); backend.py is its entry point. It has never run on an AMD
GPU: docs/backends.md lists what was checked and how."""
