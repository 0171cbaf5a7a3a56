"""Planning: scenarios x strategies -> the runs a capture measures (vendor-neutral, GPU-free).

    model.py        Variant, PlanOptions, RunPlan, the strategy names and the checks they share
    strategies.py   single-GPU transfer scenarios: which variants each strategy runs; plan_runs
    collectives.py  multi-GPU collective scenarios: implementations and their variants
    layout.py       collective buffer layouts, copy plans and the reference byte pattern
"""
