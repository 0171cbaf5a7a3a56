"""`c3prof capture`: parse, check everything that can be checked before touching the GPU, run.

Exit status: 0 all measured and validated; 1 some run failed or a transfer did not validate
(everything else is kept in the trace); 2 bad input or no usable GPU; 130 interrupted (every
completed phase is in the trace; continue with --resume).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from c3prof.backends import AUTO, names as backend_names
from c3prof.capture.distributed import add_distributed_arguments
from c3prof.capture.inputs import check_output, load_scenarios, stopping_rule
from c3prof.errors import C3profError, TraceError
from c3prof.plan.model import DEFAULT_STRATEGIES, STRATEGIES


def _int_list(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not values or any(v <= 0 for v in values):
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return values


def add_arguments(p: argparse.ArgumentParser) -> None:
    src = p.add_mutually_exclusive_group()
    src.add_argument("--suite", help="built-in scenario suite (see `c3prof suites`; default: default)")
    src.add_argument("--scenarios", metavar="FILE", help="scenario TOML file (docs/scenarios.md)")
    p.add_argument("--only", metavar="NAMES", help="comma-separated scenario names to keep")
    p.add_argument("--strategies", default=",".join(DEFAULT_STRATEGIES),
                   help=f"comma-separated: {', '.join(STRATEGIES)} (default: %(default)s)")
    p.add_argument("--out", required=True, metavar="TRACE", help="trace file to write (JSON Lines)")
    p.add_argument("--resume", action="store_true", help="continue an interrupted capture in --out")
    p.add_argument("--reps", type=int, default=9, help="minimum repetitions per phase (default 9)")
    p.add_argument("--max-reps", type=int, default=60, help="maximum repetitions per phase (default 60)")
    p.add_argument("--max-noise", type=float, default=0.01,
                   help="stop once the relative noise (1.4826 MAD/median) is at most this (default 0.01)")
    p.add_argument("--phase-timeout", type=float, default=10.0, help="seconds per phase at most (default 10)")
    p.add_argument("--warmup", type=int, default=2, help="unrecorded repetitions before each phase (default 2)")
    p.add_argument("--backend", default=AUTO,
                   help=f"device backend: {', '.join(backend_names())} or {AUTO} (the first that sees a device; "
                        f"default {AUTO})")
    p.add_argument("--device", type=int, default=0, help="device index (default 0)")
    p.add_argument("--rp-gemm-sms", type=_int_list, default=(104, 120),
                   help="GEMM SM counts swept by rp and dma+rp (green contexts; default 104,120)")
    p.add_argument("--rp-comm-ctas", type=_int_list, default=None,
                   help="CTA counts of the SM copy kernel beside an unpartitioned GEMM (rp; default per "
                        "link: 8 for PCIe, 32 for HBM)")
    p.add_argument("--no-evidence", action="store_true", help="skip the NVML GPM engine-evidence probes")
    p.add_argument("--counters", default="none", metavar="SOURCES",
                   help="hardware counters per phase, comma-separated: gpm (NVML GPM windows), ncu (Nsight "
                        "Compute range replay after the sweep), pmsampling (3 us time series through ncu), "
                        "or none (default)")
    p.add_argument("--counter-strategies", default="base,dma",
                   help="strategies whose runs get counters (default base,dma: the falsification pair)")
    p.add_argument("--counter-reps", type=int, default=5, help="repetitions inside each ncu range (default 5)")
    p.add_argument("--ncu-replay", default="app-range", choices=("app-range", "range"),
                   help="Nsight Compute replay mode (default app-range)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random operands and transfer bytes")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--inject-corruption", action="store_true", help=argparse.SUPPRESS)
    add_distributed_arguments(p)


def _check_resume_matches(existing, bench, plans) -> None:
    old_gpu = existing.machine.get("gpu", {}).get("name")
    new_gpu = bench.identity().get("name")
    if old_gpu and new_gpu and old_gpu != new_gpu:
        raise TraceError(f"{existing.path}: captured on {old_gpu}; this machine has {new_gpu}. Resume on the same GPU")
    planned = {p.id: p for p in plans}
    for rid, run in existing.runs.items():
        if rid in planned and run.scenario != planned[rid].scenario.to_dict():
            raise TraceError(f"{existing.path}: scenario of run {rid} differs from the one asked for now")


def run(args) -> int:
    from c3prof.capture import distributed
    from c3prof.capture.counters import parse_sources
    from c3prof.plan.model import PlanOptions, parse_strategies
    from c3prof.plan.strategies import plan_runs

    if getattr(args, "gpus", None) or distributed.under_torchrun():
        return distributed.run(args)   # multi-GPU: one rank per GPU, one trace per rank
    strategies = parse_strategies(args.strategies)
    counter_sources = parse_sources(args.counters)
    counter_strategies = parse_strategies(args.counter_strategies)
    if args.counter_reps < 1:
        raise C3profError("--counter-reps must be positive")
    rule = stopping_rule(args)
    scenarios = load_scenarios(args)
    out = Path(args.out)
    check_output(out, args.resume)

    # Only now touch the GPU (and import torch).
    from c3prof.backends import get_backend
    from c3prof.capture.phases import PhaseTimer
    from c3prof.capture.progress import SweepProgress
    from c3prof.capture.runner import CaptureOptions, Runner
    from c3prof.trace import TraceWriter

    backend = get_backend(args.backend)
    backend.prepare_environment()
    bench = backend.open_bench(args.device, args.seed, PhaseTimer)
    plans = plan_runs(scenarios, strategies, PlanOptions(
        sm_count=bench.sm_count, greatest_priority=bench.priority_range[1], rp_gemm_sms=args.rp_gemm_sms,
        rp_comm_ctas=args.rp_comm_ctas))
    for s in scenarios:
        bench.check_fits(s, {p.variant.transport for p in plans if p.scenario is s})
    writer = TraceWriter(out, resume=args.resume, command=["c3prof", *sys.argv[1:]])
    if writer.repaired_bytes:
        print(f"c3prof capture: dropped an incomplete last line ({writer.repaired_bytes} bytes) left by an "
              f"interrupted write", file=sys.stderr)
    if writer.existing is not None:
        try:
            _check_resume_matches(writer.existing, bench, plans)
        except TraceError:
            writer.close()
            raise
    progress = SweepProgress(enabled=not args.quiet)
    options = CaptureOptions(rule=rule, inject_corruption=args.inject_corruption, evidence=not args.no_evidence,
                             gpm="gpm" in counter_sources, ncu="ncu" in counter_sources,
                             pm_sampling="pmsampling" in counter_sources,
                             counter_strategies=counter_strategies, counter_reps=args.counter_reps,
                             ncu_replay=args.ncu_replay)
    runner = Runner(bench, writer, options, progress, existing=writer.existing)
    try:
        summary = runner.run(plans)
    except KeyboardInterrupt:
        print(f"c3prof capture: interrupted; {runner.summary.phases_measured} phases measured now are kept in "
              f"{out}; continue with the same command plus --resume", file=sys.stderr)
        return 130
    finally:
        writer.close()
    print(f"c3prof capture: {summary.phases_measured} phases written to {out}", file=sys.stderr)
    if summary.runs_failed or summary.validation_failures:
        print(f"c3prof capture: {len(summary.runs_failed)} run(s) failed, {len(summary.validation_failures)} "
              f"transfer(s) did not validate (details in the trace's error/validation records)", file=sys.stderr)
        return 1
    return 0
