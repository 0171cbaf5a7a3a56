"""`c3prof capture`: parse, check everything that can be checked before touching the GPU, run.

Exit status: 0 all measured and validated; 1 some run failed or a transfer did not validate
(everything else is kept in the trace); 2 bad input or no usable GPU; 130 interrupted (every
completed phase is in the trace; continue with --resume).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from c3prof.backends import AUTO, names as backend_names
from c3prof.capture.distributed import add_distributed_arguments
from c3prof.capture.inputs import check_output, load_scenarios, plan_options, stopping_rule
from c3prof.errors import TraceError
from c3prof.plan.model import DEFAULT_RP_GEMM_SMS, DEFAULT_STRATEGIES, STRATEGIES, parse_strategies


def _int_list(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not values or any(not 0 < v <= 100_000 for v in values):
        raise argparse.ArgumentTypeError(f"expected positive integers up to 100000, got {text!r}")
    return values


EXAMPLES = """examples:
  c3prof capture --suite smoke -o smoke.jsonl
  c3prof capture --scenarios my.toml --strategies base,dma -o my.jsonl -q
  c3prof capture --scenarios my.toml -o my.jsonl --resume      continue an interrupted capture
  c3prof capture --suite llama70b --gpus 2 -o llama.jsonl       one trace per rank: llama.rank<r>.jsonl
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.epilog = EXAMPLES
    src = p.add_mutually_exclusive_group()
    src.add_argument("--suite", metavar="SUITE", help="built-in scenario suite (see `c3prof suites`; default: default)")
    src.add_argument("--scenarios", metavar="FILE", help="scenario TOML file (docs/scenarios.md)")
    p.add_argument("--only", metavar="NAMES", help="comma-separated scenario names to keep")
    p.add_argument("--strategies", default=",".join(DEFAULT_STRATEGIES), metavar="NAMES",
                   help=f"comma-separated: {', '.join(STRATEGIES)}")
    p.add_argument("-o", "--out", required=True, metavar="PATH", help="trace file to write (JSON Lines)")
    p.add_argument("--resume", action="store_true", help="continue an interrupted capture in --out")
    p.add_argument("--reps", type=int, default=9, metavar="N", help="minimum repetitions per phase")
    p.add_argument("--max-reps", type=int, default=60, metavar="N", help="maximum repetitions per phase")
    p.add_argument("--visits", type=int, default=1, metavar="N",
                   help="measure every scenario N times, the whole plan once per visit: the report then puts "
                        "the drift between visits (minutes apart) in its intervals")
    p.add_argument("--max-noise", type=float, default=0.01, metavar="SHARE",
                   help="stop once the relative noise (1.4826 MAD/median) is at most this")
    p.add_argument("--phase-timeout", type=float, default=10.0, metavar="SECONDS", help="time per phase at most")
    p.add_argument("--warmup", type=int, default=2, metavar="N", help="unrecorded repetitions before each phase")
    p.add_argument("--backend", default=AUTO, metavar="NAME",
                   help=f"device backend: {', '.join(backend_names())} or {AUTO} (the first that sees a device)")
    p.add_argument("--device", type=int, default=0, metavar="INDEX", help="device index")
    p.add_argument("--rp-gemm-sms", type=_int_list, default=",".join(map(str, DEFAULT_RP_GEMM_SMS)), metavar="N,N,...",
                   help="GEMM SM counts swept by rp and dma+rp (green contexts)")
    p.add_argument("--rp-comm-ctas", type=_int_list, default=None, metavar="N,N,...",
                   help="CTA counts of the SM copy kernel beside an unpartitioned GEMM (rp; default per "
                        "link: 8 for PCIe, 32 for HBM)")
    p.add_argument("--no-evidence", action="store_true", help="skip the NVML GPM engine-evidence probes")
    p.add_argument("--counters", default="none", metavar="SOURCES",
                   help="hardware counters per phase, comma-separated: gpm (NVML GPM windows), ncu (Nsight "
                        "Compute range replay after the sweep), pmsampling (3 us time series through ncu), rocprofv3 "
                        "(AMD: rocprofv3 counter collection after the sweep), or none")
    p.add_argument("--counter-strategies", default="base,dma", metavar="NAMES",
                   help="strategies whose runs get counters (base,dma is the falsification pair)")
    p.add_argument("--counter-reps", type=int, default=5, metavar="N", help="repetitions inside each ncu range")
    p.add_argument("--ncu-replay", default="app-range", choices=("app-range", "range"),
                   help="Nsight Compute replay mode")
    p.add_argument("--seed", type=int, default=0, metavar="N", help="seed of the random operands and transfer bytes")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    p.add_argument("--inject-corruption", action="store_true", help=argparse.SUPPRESS)
    add_distributed_arguments(p)
    _name_placeholders(p)


# Placeholders of the multi-GPU options (defined in c3prof.capture.distributed) in the words of
# the rest of --help, instead of argparse's upper-cased internal names.
_PLACEHOLDERS = {"dma_collectives": "NAMES", "dma_chunks": "N", "dma_streams": "N", "collective_timeout": "SECONDS"}


def _name_placeholders(p: argparse.ArgumentParser) -> None:
    for action in p._actions:  # argparse has no public accessor for defined options
        if action.dest in _PLACEHOLDERS and action.metavar is None:
            action.metavar = _PLACEHOLDERS[action.dest]


def _check_resume_matches(existing, bench, plans) -> None:
    old_gpu = existing.machine.get("gpu", {}).get("name")
    new_gpu = bench.identity().get("name")
    if old_gpu and new_gpu and old_gpu != new_gpu:
        raise TraceError(f"{existing.path}: captured on {old_gpu}; this machine has {new_gpu}. Resume on the same GPU")
    planned = {p.id: p for p in plans}
    for rid, run in existing.runs.items():
        if rid in planned and run.scenario != planned[rid].scenario.to_dict():
            raise TraceError(f"{existing.path}: scenario of run {rid} differs from the one asked for now")


@dataclass(frozen=True)
class SingleGpuInputs:
    """Everything checked before the device is touched."""

    strategies: tuple[str, ...]
    counter_sources: tuple[str, ...]
    counter_strategies: tuple[str, ...]
    rule: object
    scenarios: list
    out: Path


def _read_inputs(args) -> SingleGpuInputs:
    from c3prof.capture.counters import parse_sources

    # Everything that can be checked without a GPU, before --gpus spawns ranks or a backend is opened.
    strategies = parse_strategies(args.strategies)
    counter_sources = parse_sources(args.counters)
    counter_strategies = parse_strategies(args.counter_strategies)
    rule = stopping_rule(args)
    scenarios = load_scenarios(args)
    out = Path(args.out)
    check_output(out, args.resume, [args.scenarios] if args.scenarios else [])
    return SingleGpuInputs(strategies, counter_sources, counter_strategies, rule, scenarios, out)


def _open_bench(args, inputs: SingleGpuInputs):
    """The backend's bench and the plan it can run (every scenario checked to fit)."""
    from c3prof.backends import get_backend
    from c3prof.capture.phases import PhaseTimer
    from c3prof.plan.strategies import plan_runs

    backend = get_backend(args.backend)
    backend.prepare_environment()
    bench = backend.open_bench(args.device, args.seed, PhaseTimer)
    plans = plan_runs(inputs.scenarios, inputs.strategies, plan_options(args, bench))
    for s in inputs.scenarios:
        bench.check_fits(s, {p.variant.transport for p in plans if p.scenario is s})
    return bench, plans


def _open_writer(out: Path, args, bench, plans):
    from c3prof.trace import TraceWriter

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
    return writer


def _sweep(args, inputs: SingleGpuInputs, bench, plans, writer) -> int:
    from c3prof.capture.progress import SweepProgress
    from c3prof.capture.runner import CaptureOptions, Runner

    sources = inputs.counter_sources
    options = CaptureOptions(rule=inputs.rule, inject_corruption=args.inject_corruption, evidence=not args.no_evidence,
                             gpm="gpm" in sources, ncu="ncu" in sources, pm_sampling="pmsampling" in sources,
                             rocprofv3="rocprofv3" in sources,
                             counter_strategies=inputs.counter_strategies, counter_reps=args.counter_reps,
                             ncu_replay=args.ncu_replay, visits=args.visits)
    runner = Runner(bench, writer, options, SweepProgress(enabled=not args.quiet), existing=writer.existing)
    try:
        summary = runner.run(plans)
    except KeyboardInterrupt:
        print(f"c3prof capture: interrupted; {runner.summary.phases_measured} phases measured now are kept in "
              f"{inputs.out}; continue with the same command plus --resume", file=sys.stderr)
        return 130
    finally:
        writer.close()
    print(f"c3prof capture: {summary.phases_measured} phases written to {inputs.out}", file=sys.stderr)
    if summary.runs_failed or summary.validation_failures:
        print(f"c3prof capture: {len(summary.runs_failed)} run(s) failed, {len(summary.validation_failures)} "
              f"transfer(s) did not validate (details in the trace's error/validation records)", file=sys.stderr)
        return 1
    return 0


def run(args) -> int:
    from c3prof.capture import distributed

    inputs = _read_inputs(args)   # scenarios, strategies and --out checked before any rank or device
    if getattr(args, "gpus", None) or distributed.under_torchrun():
        return distributed.run(args)   # multi-GPU: one rank per GPU, one trace per rank
    # Only now touch the GPU (and import torch).
    bench, plans = _open_bench(args, inputs)
    return _sweep(args, inputs, bench, plans, _open_writer(inputs.out, args, bench, plans))
