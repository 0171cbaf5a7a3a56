"""The capture's inputs, checked before any device or peer is touched: the output file, the
stopping rule and the scenarios (shared by the single-GPU and the multi-GPU capture)."""

from __future__ import annotations

import os
from pathlib import Path

from c3prof.errors import C3profError, TraceError


def check_output(path: Path, resume: bool) -> None:
    """Catch an unusable --out before the GPU is touched."""
    if resume:
        if not path.exists():
            raise TraceError(f"{path}: nothing to resume (file does not exist)")
        if not os.access(path, os.W_OK):
            raise TraceError(f"{path}: not writable")
        return
    if path.exists() and path.stat().st_size > 0:
        raise TraceError(f"{path}: already exists; use --resume to continue it or choose another --out")
    parent = path.parent if str(path.parent) else Path(".")
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise TraceError(f"{path}: cannot create its folder: {exc.strerror or exc}") from None
    if not os.access(parent, os.W_OK):
        raise TraceError(f"{path}: folder {parent} is not writable")


def stopping_rule(args):
    from c3prof.capture.stopping import StoppingRule

    try:
        return StoppingRule(min_reps=args.reps, max_reps=max(args.max_reps, args.reps), max_noise=args.max_noise,
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
