"""Capture: run scenarios under strategies on the GPU and append every measurement to a trace.

    strategies.py   which variants each strategy runs (GPU-free)
    stopping.py     when a phase has enough repetitions (GPU-free, nvbench-style)
    phases.py       enqueue and time the four phases with device events
    runner.py       the sweep: resume, per-run error isolation, validation, trace records
    cli.py          `c3prof capture`
"""
