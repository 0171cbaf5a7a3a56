"""Multi-GPU capture: one process per GPU under torchrun, each writing its own rank trace.

    torchrun --nproc-per-node 8 -m c3prof capture --suite llama --out runs/llama.jsonl
    c3prof capture --gpus 8 --suite llama --out runs/llama.jsonl      # spawns torchrun itself

Rank ``r`` uses GPU ``LOCAL_RANK`` and writes ``runs/llama.rank<r>.jsonl`` (header rank/world_size;
its machine record carries a ``distributed`` section naming the capture id, the plan hash and every
rank file), so ``c3prof report`` can merge the ranks.

Guarantees, and how:

* Same plan everywhere: a SHA-256 of the planned runs (scenarios, variants, options) is compared
  across ranks before any GPU work; a mismatch stops every rank with one line naming the ranks.
* Batches start together: before each repetition batch the ranks meet at a barrier on the control
  group (gloo) and agree on the GPU gate's length (the longest any rank asked for).
* Same number of repetitions everywhere: the stopping rule's decision is agreed after every batch
  (a phase stops once every rank's local rule says stop; max_reps bounds it).
* Failures are collective decisions: a setup that fails on one rank (out of memory, a partition it
  cannot make) is agreed and recorded as a failed run on every rank, and the sweep continues.
* Never hang: process groups have timeouts; host waits for GPU work poll with a deadline and
  watch an abort key in the rendezvous store, which a failing rank sets with its error; SIGTERM
  (torchrun stopping the others when a rank dies) ends a rank with a message. Every completed
  phase is already flushed to the rank's trace (one fsynced line per record); ``--resume`` continues
  from what *all* ranks completed.

The agreement primitives live in capture/agreement.py; the device side (collectives, polling
event waits) in the backend, which receives the control group through the backend interface.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from dataclasses import asdict, dataclass
from datetime import timedelta
from pathlib import Path

from c3prof.backends import get_backend, isolate_devices
from c3prof.capture.agreement import (AgreedStoppingRule, Control, agreed_done, check_agreement, first_line, plan_digest,
                                      with_agreed_carrier)
from c3prof.capture.inputs import check_output, load_scenarios, plan_options, stopping_rule
from c3prof.errors import C3profError, NoGPUError, PeerFailed
from c3prof.plan.collectives import parse_dma_collectives
from c3prof.plan.dma_schedule import LOCAL_MODES
from c3prof.plan.model import DMA_IMPLEMENTATIONS, NCCL_IMPLEMENTATIONS, parse_strategies
from c3prof.plan.strategies import plan_runs

TORCHRUN_ENV = ("RANK", "WORLD_SIZE", "LOCAL_RANK")


class Terminated(KeyboardInterrupt):
    """SIGTERM: the launcher stops this rank (usually because another rank died)."""


# ------------------------------------------------------------------------------------------------
# Command line
# ------------------------------------------------------------------------------------------------

def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if v <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return v


def add_distributed_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("multi-GPU capture (under torchrun, or --gpus N)")
    g.add_argument("--gpus", type=_positive_int, metavar="N",
                   help="spawn N ranks on this node (torch.distributed.run) and capture collective scenarios")
    g.add_argument("--dma-collectives", default=",".join(DMA_IMPLEMENTATIONS),
                   help=f"copy-engine collectives run by the dma strategies ({', '.join(DMA_IMPLEMENTATIONS)}; "
                        f"default %(default)s)")
    g.add_argument("--dma-api", default="memcpy", choices=("memcpy", "batch", "peer"),
                   help="how c3prof's DMA collectives enqueue copies (default memcpy)")
    g.add_argument("--dma-chunks", type=_positive_int, default=1, help="pieces per peer transfer (default 1)")
    g.add_argument("--dma-streams", type=_positive_int, default=1, help="streams the pieces are spread over (default 1)")
    g.add_argument("--out-of-place", action="store_true",
                   help="out-of-place all-gather (default in place: each shard already sits in its output slot)")
    g.add_argument("--collective-timeout", type=float, default=300.0,
                   help="seconds any rank waits for the others before failing (default 300)")
    g.add_argument("--share-gpu", action="store_true",
                   help="allow several ranks on one GPU (IPC tests only; NCCL variants are then impossible)")
    g.add_argument("--dma-local", default="stream", choices=LOCAL_MODES,
                   help="where c3prof's DMA all_to_all copies its local block: stream (first, on its own stream), "
                        "ce_hint (the same, asking the driver for a copy engine), inline (after the peer copies)")
    g.add_argument("--isolate-devices", action="store_true",
                   help="each rank sees only its own GPU (CUDA_VISIBLE_DEVICES): the control for copies that "
                        "cannot use peer access")


def under_torchrun() -> bool:
    return all(k in os.environ for k in TORCHRUN_ENV)


def rank_path(out: str | Path, rank: int) -> Path:
    """``x.jsonl`` -> ``x.rank<r>.jsonl`` (the suffix kept; a name without one gets ``.rank<r>``)."""
    out = Path(out)
    return out.with_name(f"{out.stem}.rank{rank}{out.suffix}") if out.suffix else out.with_name(f"{out.name}.rank{rank}")


def visible_gpu_count(backend) -> int:
    return backend.device_count()


def spawn_command(argv: list[str], gpus: int) -> list[str]:
    """The torch.distributed.run command that ``c3prof capture --gpus N ...`` runs."""
    rest, skip = [], False
    for i, a in enumerate(argv):
        if skip:
            skip = False
            continue
        if a == "--gpus":
            skip = True
            continue
        if a.startswith("--gpus="):
            continue
        rest.append(a)
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={gpus}",
            "-m", "c3prof", *rest]


def spawn(args, argv: list[str] | None = None) -> int:
    backend = get_backend(args.backend)
    n = visible_gpu_count(backend)
    if args.gpus > n and not args.share_gpu:
        raise NoGPUError(f"--gpus {args.gpus}: only {n} GPU(s) visible on this node")
    backend.prepare_environment()
    argv = list(sys.argv[1:] if argv is None else argv)
    cmd = spawn_command(argv, args.gpus)
    print("c3prof capture: " + " ".join(cmd[1:]), file=sys.stderr)
    return subprocess.call(cmd, env=os.environ.copy())


# ------------------------------------------------------------------------------------------------
# One rank's capture
# ------------------------------------------------------------------------------------------------

def _rank_print(rank: int, msg: str) -> None:
    print(f"c3prof capture: rank {rank}: {msg}", file=sys.stderr, flush=True)


def run(args) -> int:
    """Entry from `c3prof capture`: spawn torchrun (--gpus) or run this rank's part of the capture."""
    if args.gpus and not under_torchrun():
        return spawn(args)
    return run_rank(args)


@dataclass(frozen=True)
class RankPlace:
    """Where this process sits in the torchrun job (from its environment)."""

    rank: int
    world: int
    local_rank: int
    local_world: int

    @classmethod
    def from_environ(cls) -> "RankPlace":
        world = int(os.environ["WORLD_SIZE"])
        return cls(int(os.environ["RANK"]), world, int(os.environ["LOCAL_RANK"]),
                   int(os.environ.get("LOCAL_WORLD_SIZE", world)))


def _choose_device(backend, place: RankPlace, share_gpu: bool) -> int:
    n_gpus = visible_gpu_count(backend)
    if n_gpus == 0:
        raise NoGPUError(f"rank {place.rank}: no usable GPU")
    if place.local_world > n_gpus and not share_gpu:
        raise NoGPUError(f"{place.local_world} ranks on this node but {n_gpus} GPU(s) visible "
                         f"(use at most --nproc-per-node {n_gpus})")
    return place.local_rank % n_gpus


def _on_sigterm(signum, frame):
    raise Terminated()


def run_rank(args, bench_factory=None) -> int:
    """One rank's capture: agree on the plan, set up, sweep, tear down.

    ``bench_factory(ctrl=..., rank=..., world=..., device=..., timeout=...)`` replaces the backend's
    bench (the GPU-free tests drive this function with a synthetic bench over gloo)."""
    place = RankPlace.from_environ()
    args.isolated_to = None
    if bench_factory is None and args.isolate_devices:
        # Before the backend is chosen: choosing one queries devices, which fixes the visible set.
        try:
            args.isolated_to = isolate_devices(args.backend, place.local_rank, args.share_gpu)
        except C3profError as exc:
            _rank_print(place.rank, f"error: --isolate-devices: {exc}")
            return 2
    backend = None if bench_factory is not None else get_backend(args.backend)
    if backend is not None:
        backend.prepare_environment()
    rank_capture = RankCapture(args, place, backend, bench_factory)
    rank_capture.connect()
    signal.signal(signal.SIGTERM, _on_sigterm)
    return rank_capture.teardown(rank_capture.guarded_sweep())


class RankCapture:
    """The four stages of one rank's capture, in order: inputs and device (__init__), connection
    to the other ranks (connect), agreed setup and sweep (guarded_sweep), teardown."""

    def __init__(self, args, place: RankPlace, backend, bench_factory):
        self.args, self.place, self.backend, self.bench_factory = args, place, backend, bench_factory
        # Everything checkable before touching a device or a peer.
        self.strategies = parse_strategies(args.strategies)
        self.dma_collectives = parse_dma_collectives(args.dma_collectives)
        self.rule = stopping_rule(args)
        self.scenarios = load_scenarios(args)
        self.out = rank_path(args.out, place.rank)
        check_output(self.out, args.resume)
        # An isolated rank sees its own GPU only (index 0); the node's count was checked when isolating.
        self.device = 0 if backend is None or args.isolate_devices else _choose_device(backend, place, args.share_gpu)
        args.shares_gpu = bool(args.share_gpu)
        self.timeout = timedelta(seconds=args.collective_timeout)
        self.writer = None
        self.dist = self.ctrl = None

    # -- connection ----------------------------------------------------------------------------------

    def connect(self) -> None:
        import torch.distributed as dist

        if self.backend is None:
            dist.init_process_group("gloo", timeout=self.timeout)
        else:
            self.backend.init_process_group(dist, self.device, self.timeout,
                                            device_collectives=not self.args.share_gpu)
        store = dist.distributed_c10d._get_default_store()
        group = dist.new_group(backend="gloo", timeout=self.timeout)
        self.dist = dist
        self.ctrl = Control(dist, group, store, self.place.rank, self.place.world, self.args.collective_timeout)

    # -- setup ---------------------------------------------------------------------------------------

    def open_bench(self):
        from c3prof.capture.phases import PhaseTimer

        if self.backend is None:
            return self.bench_factory(ctrl=self.ctrl, rank=self.place.rank, world=self.place.world,
                                      device=self.device, timeout=self.timeout)
        return self.backend.open_distributed_bench(self.device, self.args.seed, PhaseTimer, self.ctrl,
                                                   self.timeout, self.args)

    def plan(self, bench) -> list:
        args = self.args
        opts = plan_options(args, bench, distributed=True, dma_collectives=self.dma_collectives)
        plans = plan_runs(self.scenarios, self.strategies, opts)
        if args.share_gpu:
            nccl_runs = [p.id for p in plans if p.variant.transport in NCCL_IMPLEMENTATIONS]
            if nccl_runs:
                raise C3profError(f"--share-gpu: NCCL cannot run two ranks on one GPU, but {len(nccl_runs)} planned "
                                  f"run(s) use it (e.g. {nccl_runs[0]}); use --strategies dma "
                                  f"--dma-collectives dma_push,dma_pull")
        return plans

    def agree_on_plan(self, plans) -> tuple[str, str]:
        """Every rank must run the same plan; returns (plan digest, capture id)."""
        args, rule = self.args, self.rule
        dma = [args.dma_api, args.dma_chunks, args.dma_streams, args.dma_local]
        digest = plan_digest(plans, {"rule": asdict(rule), "dma": dma, "inplace": not args.out_of_place,
                                     "world": self.place.world})
        described = {"plan_hash": digest, "world_size": self.place.world,
                     "scenarios": [[sc.name, sc.comm.op, sc.comm.bytes, sc.gemm.label] for sc in self.scenarios],
                     "strategies": list(self.strategies), "stopping": asdict(rule),
                     "dma": [*dma, not args.out_of_place]}
        views = self.ctrl.all_gather(described)
        for key in ("world_size", "scenarios", "strategies", "stopping", "dma", "plan_hash"):
            check_agreement([v[key] for v in views], f"the capture plan ({key})")
        return digest, self.ctrl.all_gather(os.urandom(8).hex())[0]

    def agree_fits(self, bench, plans) -> None:
        """Does every scenario fit on every rank? One rank's failure stops all, with its reason."""
        problems = []
        for s in self.scenarios:
            try:
                bench.check_fits(s, {p.variant.transport for p in plans if p.scenario is s})
            except C3profError as exc:
                problems.append(str(exc))
        all_problems = self.ctrl.all_gather(problems)
        if any(all_problems):
            r, msgs = next((r, m) for r, m in enumerate(all_problems) if m)
            raise C3profError(f"rank {r}: {msgs[0]}")

    def distributed_info(self, digest: str, capture_id: str) -> dict:
        args, place = self.args, self.place
        return {"capture_id": capture_id, "plan_hash": digest, "rank": place.rank, "world_size": place.world,
                "local_rank": place.local_rank, "local_world_size": place.local_world, "device": self.device,
                "rank_files": [rank_path(args.out, r).name for r in range(place.world)],
                "backend": "gloo (control) + " + ("none: --share-gpu" if args.share_gpu else "nccl"),
                "share_gpu": bool(args.share_gpu), "dma_api": args.dma_api, "dma_chunks": args.dma_chunks,
                "dma_streams": args.dma_streams, "dma_local": args.dma_local, "inplace": not args.out_of_place,
                "isolated_devices": getattr(args, "isolated_to", None)}

    # -- sweep ---------------------------------------------------------------------------------------

    def sweep(self) -> int:
        from c3prof.capture.progress import SweepProgress
        from c3prof.capture.runner import Runner
        from c3prof.trace import TraceWriter

        args, rank, world = self.args, self.place.rank, self.place.world
        bench = self.open_bench()
        plans = self.plan(bench)
        digest, capture_id = self.agree_on_plan(plans)
        self.agree_fits(bench, plans)
        self.writer = TraceWriter(self.out, resume=args.resume, rank=rank, world_size=world,
                                  command=["c3prof", *sys.argv[1:]])
        existing = self.writer.existing
        bench.distributed_info = self.distributed_info(digest, capture_id)
        done = agreed_done(self.ctrl.all_gather(sorted(existing.completed_phases()) if existing else []))
        progress = SweepProgress(enabled=not args.quiet and rank == 0)
        if rank != 0:
            progress.scenario_done = lambda name, rows: None
        runner = Runner(bench, self.writer, self.capture_options(), progress, existing=existing)
        runner.done = done
        self.agree_on_evidence(runner)
        self.note_unwired_counters()
        summary = runner.run(plans)
        return self.report(summary)

    def capture_options(self):
        """The runner's options: agreed stopping, evidence, GPM counters on every rank."""
        from c3prof.capture.counters import parse_sources
        from c3prof.capture.runner import CaptureOptions

        args = self.args
        return CaptureOptions(rule=AgreedStoppingRule(self.rule, self.ctrl.all_gather),
                              inject_corruption=args.inject_corruption, evidence=not args.no_evidence,
                              gpm="gpm" in parse_sources(args.counters),
                              counter_strategies=parse_strategies(args.counter_strategies),
                              visits=getattr(args, "visits", 1))

    def note_unwired_counters(self) -> None:
        """ncu and PM sampling replay phases in a separate process per GPU, which for a collective would
        need every rank's worker in one job: not wired here; said once and recorded, not skipped silently."""
        from c3prof.capture.counters import parse_sources
        from c3prof.trace import counter_source_record

        for source in ("ncu", "pmsampling"):
            if source in parse_sources(self.args.counters):
                reason = "not wired into the multi-GPU capture (its worker replays phases alone, one process)"
                self.writer.write(counter_source_record(source, False, reason=reason))
                if self.place.rank == 0:
                    _rank_print(0, f"counters: {source} {reason}; continuing with the others")

    def agree_on_evidence(self, runner) -> None:
        """Probe again what any rank lacks, and decide on carriers every rank holds (evidence probes of
        collectives are collective, and a run skipped on one rank only would desynchronize the ranks)."""
        existing = self.writer.existing
        mine = {e["transport"]: e.get("carrier_agreed", e["carrier"]) for e in (existing.engine_evidence if existing else [])}
        views = self.ctrl.all_gather(mine)
        common = set.intersection(*(set(v) for v in views))
        runner.evidence_seen = common
        runner.carriers = {t: (views[0][t] if all(v[t] == views[0][t] for v in views) else "unknown") for t in common}
        runner.on_evidence = lambda rec: with_agreed_carrier(rec, self.ctrl.all_gather(rec["carrier"]))

    def report(self, summary) -> int:
        results = self.ctrl.all_gather({"phases": summary.phases_measured, "failed": summary.runs_failed,
                                        "invalid": summary.validation_failures, "file": str(self.out)})
        if self.place.rank == 0:
            print(f"c3prof capture: {self.place.world} ranks finished; traces: " +
                  ", ".join(r["file"] for r in results), file=sys.stderr)
            for r, res in enumerate(results):
                if res["failed"] or res["invalid"]:
                    print(f"c3prof capture: rank {r}: {len(res['failed'])} run(s) failed, {len(res['invalid'])} "
                          f"collective(s) did not validate", file=sys.stderr)
        return 1 if any(r["failed"] or r["invalid"] for r in results) else 0

    def guarded_sweep(self) -> int:
        """The sweep, with every way it can end turned into an exit status and one message."""
        rank, out = self.place.rank, self.out
        try:
            return self.sweep()
        except Terminated:
            _rank_print(rank, f"stopped by the launcher (SIGTERM), usually because another rank failed; every "
                              f"completed phase is kept in {out}; continue with the same command plus --resume")
            return 143
        except KeyboardInterrupt:
            _rank_print(rank, f"interrupted; completed phases are kept in {out}; continue with --resume")
            return 130
        except PeerFailed as exc:
            _rank_print(rank, f"stopped because another rank failed: {exc}; completed phases are kept in {out}")
            return 1
        except C3profError as exc:
            self.ctrl.abort(f"rank {rank}: {exc}")
            _rank_print(rank, f"error: {exc}")
            return exc.exit_code
        except Exception as exc:
            self.ctrl.abort(f"rank {rank}: {first_line(exc)}")
            _rank_print(rank, f"failed: {type(exc).__name__}: {exc}")
            import traceback

            traceback.print_exc()
            return 1
        finally:
            if self.writer is not None:
                self.writer.close()

    # -- teardown ------------------------------------------------------------------------------------

    def teardown(self, code: int) -> int:
        sys.stdout.flush()
        sys.stderr.flush()
        if code == 0:
            try:
                self.dist.destroy_process_group()
            except Exception:
                pass
            return 0
        # A peer may be stuck in a collective or a device wait that will never finish: leave without
        # running teardown that could wait for it (every record is already on disk).
        os._exit(code)
