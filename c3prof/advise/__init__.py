"""``c3prof advise``: which strategy and variant to run for a C3 scenario, fitted on measurements.

    data.py      measured scenarios from traces (medians and intervals from c3prof.analysis)
    model.py     the fitted model: partition, carrier and overlap tables with nearest-neighbour lookup
    predict.py   predicted T_cc (with an empirical interval) for every candidate of a scenario
    evaluate.py  leave-one-scenario-out and held-out validation against the oracle and fixed rules
    settings.py  the runtime settings that apply a recommendation (NCCL, PyTorch, cuBLASLt, CUDA)
    inputs.py    what to advise on: scenario files, suites, traces, report JSON, ingest JSON
    render.py    terminal tables
    cli.py       the subcommand

GPU-free: nothing here imports torch, CUDA or a backend (tests/test_report_imports.py).
"""
