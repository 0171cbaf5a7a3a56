"""Capture: run planned runs on a device and append every measurement to a trace (vendor-neutral).

    cli.py            `c3prof capture`: inputs, the backend from the registry, the sweep
    inputs.py         the output file, stopping rule and scenarios, checked before any device is touched
    stopping.py       when a phase has enough repetitions (GPU-free, nvbench-style)
    phases.py         enqueue and time the four phases with device events
    runner.py         the sweep: resume, per-run error isolation, validation, trace records
    progress.py       progress bar and a one-line result per scenario
    counters.py       counter sources: the worker run under a profiler, records from the backend's hook
    counter_worker.py the process a profiler runs
    agreement.py      cross-rank agreement of a multi-GPU capture (any backend)
    distributed.py    the multi-GPU capture: torchrun, one rank's agreement, setup, sweep, teardown

Nothing here imports a vendor module; the device comes from c3prof.backends (tests/test_layering.py).
"""
