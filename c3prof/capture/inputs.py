"""The capture's inputs, checked before any device or peer is touched: the output file, the
stopping rule and the scenarios, and the plan options from the command line and the device
(shared by the single-GPU and the multi-GPU capture)."""

from __future__ import annotations

import os
from pathlib import Path

from c3prof.errors import C3profError, TraceError
from c3prof.plan.model import PlanOptions


# (option, lowest, highest): bounds of the numeric options, checked before anything else runs.
# Options a parser does not define (the multi-GPU ones in some entry points) are skipped.
BOUNDS = (("--visits", 1, 10), ("--reps", 1, 1_000_000), ("--max-reps", 1, 1_000_000), ("--max-noise", 1e-9, 1.0),
          ("--phase-timeout", 0.001, 86_400), ("--warmup", 0, 10_000), ("--device", 0, 1023),
          ("--counter-reps", 1, 10_000), ("--seed", 0, 2**32 - 1),
          ("--gpus", 1, 4096), ("--dma-chunks", 1, 4096), ("--dma-streams", 1, 256),
          ("--collective-timeout", 0.001, 86_400))


def check_bounds(args) -> None:
    """Every numeric option within its bounds, named as the user typed it (no internal names)."""
    for option, lo, hi in BOUNDS:
        value = getattr(args, option[2:].replace("-", "_"), None)
        if value is not None and not lo <= value <= hi:  # NaN fails too
            raise C3profError(f"{option} must be between {lo} and {hi}, got {value}")
    if args.max_reps < args.reps:
        raise C3profError(f"--max-reps ({args.max_reps}) must be at least --reps ({args.reps})")


def check_output(path: Path, resume: bool, inputs=()) -> None:
    """Catch an unusable --out before the GPU is touched; creates nothing.

    ``--out`` may not be an input (the scenario file). With --resume the trace is read and
    validated completely (read-only), so a file that is not a c3prof trace, or a trace of another
    version, is refused before anything opens or changes it.
    """
    from c3prof.outputs import Output, check_creatable, check_outputs
    from c3prof.trace import read_for_resume

    check_outputs(inputs, [Output.file("--out", path)])
    if resume:
        if not path.exists():
            raise TraceError(f"{path}: nothing to resume (file does not exist)")
        if not os.access(path, os.W_OK):
            raise TraceError(f"{path}: not writable")
        read_for_resume(path)
        return
    if path.exists() and path.stat().st_size > 0:
        raise TraceError(f"{path}: already exists; use --resume to continue it or choose another --out")
    try:
        check_creatable(Output.file("--out", path))
    except C3profError as exc:
        raise TraceError(f"{path}: cannot create its folder ({exc})") from None


def stopping_rule(args):
    from c3prof.capture.stopping import StoppingRule

    check_bounds(args)
    try:
        return StoppingRule(min_reps=args.reps, max_reps=args.max_reps, max_noise=args.max_noise,
                            timeout_s=args.phase_timeout, warmup=args.warmup)
    except ValueError as exc:
        raise C3profError(str(exc)) from None


def load_scenarios(args):
    from c3prof.scenarios import load_scenario_file, load_suite

    scenarios = load_scenario_file(args.scenarios) if args.scenarios else load_suite(args.suite or "default")
    if args.only:
        keep = [n for n in args.only.split(",") if n]
        unknown = sorted(set(keep) - {s.name for s in scenarios})
        if unknown:
            raise C3profError(f"--only: no scenario named {unknown[0]!r}")
        scenarios = [s for s in scenarios if s.name in keep]
    return scenarios


def plan_options(args, bench, **extra) -> PlanOptions:
    """The plan's options: the device's SM count and highest stream priority, the command line's sweeps."""
    return PlanOptions(sm_count=bench.sm_count, greatest_priority=bench.priority_range[1],
                       rp_gemm_sms=args.rp_gemm_sms, rp_comm_ctas=args.rp_comm_ctas, **extra)
