"""NVIDIA backend: torch for GEMMs, the runtime extension (runtime.pyx: streams, events, pinned
memory, copies, IPC) through cuda-bindings, green contexts, NCCL, NVML for machine state and
engine evidence, Nsight Compute for counters. Imported only by `c3prof capture`, through the
registry (c3prof/backends/__init__.py); backend.py is its entry point."""
