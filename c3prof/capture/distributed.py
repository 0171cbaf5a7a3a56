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
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict
from datetime import timedelta
from pathlib import Path

from c3prof.capture.stopping import StoppingRule
from c3prof.errors import C3profError, NoGPUError

ABORT_KEY = "c3prof/abort"
TORCHRUN_ENV = ("RANK", "WORLD_SIZE", "LOCAL_RANK")


class PeerFailed(RuntimeError):
    """Another rank failed (its message is in the abort key) or stopped answering."""


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
    g.add_argument("--dma-collectives", default="nccl_ce,dma_push,dma_pull",
                   help="copy-engine collectives run by the dma strategies (nccl_ce, dma_push, dma_pull)")
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


def under_torchrun() -> bool:
    return all(k in os.environ for k in TORCHRUN_ENV)


def rank_path(out: str | Path, rank: int) -> Path:
    """``x.jsonl`` -> ``x.rank<r>.jsonl`` (the suffix kept; a name without one gets ``.rank<r>``)."""
    out = Path(out)
    return out.with_name(f"{out.stem}.rank{rank}{out.suffix}") if out.suffix else out.with_name(f"{out.name}.rank{rank}")


def visible_gpu_count() -> int:
    from c3prof import _dma

    try:
        return _dma.device_count()
    except _dma.CudaError:
        return 0


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
    n = visible_gpu_count()
    if args.gpus > n and not args.share_gpu:
        raise NoGPUError(f"--gpus {args.gpus}: only {n} GPU(s) visible on this node")
    from c3prof.backends.cuda.device import cuda_env_defaults

    cuda_env_defaults()
    argv = list(sys.argv[1:] if argv is None else argv)
    cmd = spawn_command(argv, args.gpus)
    print("c3prof capture: " + " ".join(cmd[1:]), file=sys.stderr)
    return subprocess.call(cmd, env=os.environ.copy())


# ------------------------------------------------------------------------------------------------
# Control group: host-side agreement over gloo, with an abort key in the rendezvous store
# ------------------------------------------------------------------------------------------------

class Control:
    def __init__(self, dist, group, store, rank: int, world: int, timeout_s: float):
        self.dist, self.group, self.store = dist, group, store
        self.rank, self.world, self.timeout_s = rank, world, timeout_s
        self._last_check = 0.0

    def all_gather(self, obj) -> list:
        self.check_abort()
        out = [None] * self.world
        try:
            self.dist.all_gather_object(out, obj, group=self.group)
        except Exception as exc:
            self.check_abort(force=True)
            raise PeerFailed(f"a peer rank left or did not answer within {self.timeout_s:.0f} s "
                             f"({type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''})") from None
        return out

    def barrier(self) -> None:
        self.all_gather(None)

    def abort(self, message: str) -> None:
        try:
            self.store.set(ABORT_KEY, message)
        except Exception:
            pass

    def check_abort(self, force: bool = False) -> None:
        """Raise PeerFailed if a rank announced a failure (checked at most every 0.5 s)."""
        now = time.monotonic()
        if self.store is None or (not force and now - self._last_check < 0.5):
            return
        self._last_check = now
        try:
            if self.store.check([ABORT_KEY]):
                raise PeerFailed(self.store.get(ABORT_KEY).decode())
        except PeerFailed:
            raise
        except Exception:
            return


class AgreedStoppingRule(StoppingRule):
    """A StoppingRule whose decision is the same on every rank: a phase stops when every rank's
    local rule says stop (the reason recorded is the local one). Not a dataclass of its own: the
    agreement function stays out of describe()/asdict()."""

    def __init__(self, base: StoppingRule, agree):
        super().__init__(**asdict(base))
        object.__setattr__(self, "_agree", agree)

    def stop_reason(self, samples, elapsed_s: float):
        local = super().stop_reason(samples, elapsed_s)
        reasons = self._agree(local)
        if all(r is not None for r in reasons):
            return local
        return None


def plan_digest(plans, extra: dict) -> str:
    doc = {"runs": [[p.id, p.scenario.to_dict(), p.variant.params()] for p in plans], "options": extra}
    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()


def check_agreement(values: list, what: str) -> None:
    """Raise C3profError (the same message on every rank) unless all ranks hold the same value."""
    if all(v == values[0] for v in values):
        return
    groups: dict = {}
    for r, v in enumerate(values):
        groups.setdefault(json.dumps(v, sort_keys=True, default=str), []).append(r)
    parts = [f"ranks {','.join(map(str, rs))}: {k[:160]}" for k, rs in groups.items()]
    raise C3profError(f"ranks disagree on {what}: " + "; ".join(parts) +
                      " (start every rank with the same command line and scenario files)")


def agreed_done(existing_sets: list[list]) -> set:
    """Phases every rank has completed (a rank that died mid-phase re-measures it with the others)."""
    sets = [set(map(tuple, s)) for s in existing_sets]
    return set.intersection(*sets) if sets else set()


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


def run_rank(args, bench_factory=None) -> int:  # noqa: C901 (one linear story)
    """One rank's capture. ``bench_factory(ctrl=..., rank=..., world=..., device=..., timeout=...)``
    replaces the CUDA bench (the GPU-free tests drive this function with a synthetic bench over gloo)."""
    from c3prof.backends.cuda.device import cuda_env_defaults
    from c3prof.capture.cli import _check_output, _load_scenarios, stopping_rule
    from c3prof.capture.strategies import PlanOptions, parse_strategies, plan_runs
    from c3prof.collectives.variants import parse_dma_collectives

    cuda_env_defaults()
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ["LOCAL_RANK"])
    local_world = int(os.environ.get("LOCAL_WORLD_SIZE", world))
    strategies = parse_strategies(args.strategies)
    dma_colls = parse_dma_collectives(args.dma_collectives)
    rule = stopping_rule(args)
    scenarios = _load_scenarios(args)
    out = rank_path(args.out, rank)
    _check_output(out, args.resume)
    gpu = bench_factory is None
    device = 0
    if gpu:
        n_gpus = visible_gpu_count()
        if n_gpus == 0:
            raise NoGPUError(f"rank {rank}: no usable GPU")
        if local_world > n_gpus and not args.share_gpu:
            raise NoGPUError(f"{local_world} ranks on this node but {n_gpus} GPU(s) visible "
                             f"(use at most --nproc-per-node {n_gpus})")
        device = local_rank % n_gpus

    import torch.distributed as dist

    timeout = timedelta(seconds=args.collective_timeout)
    if not gpu or args.share_gpu:
        dist.init_process_group("gloo", timeout=timeout)
    else:
        import torch

        torch.cuda.set_device(device)
        dist.init_process_group("nccl", timeout=timeout, device_id=torch.device("cuda", device))
    store = dist.distributed_c10d._get_default_store()
    ctrl = Control(dist, dist.new_group(backend="gloo", timeout=timeout), store, rank, world, args.collective_timeout)

    def on_term(signum, frame):
        raise Terminated()

    signal.signal(signal.SIGTERM, on_term)
    writer = None
    code = 1
    try:
        if gpu:
            from c3prof.backends.cuda.collectives import DistributedCudaBench
        from c3prof.capture.progress import SweepProgress
        from c3prof.capture.runner import CaptureOptions, Runner
        from c3prof.trace import TraceWriter

        if gpu:
            bench = DistributedCudaBench(device=device, seed=args.seed, ctrl=ctrl, rank=rank, world=world,
                                         nccl=not args.share_gpu, timeout=timeout, dma_api=args.dma_api,
                                         dma_chunks=args.dma_chunks, dma_streams=args.dma_streams,
                                         inplace=not args.out_of_place, deadline_s=args.collective_timeout)
        else:
            bench = bench_factory(ctrl=ctrl, rank=rank, world=world, device=device, timeout=timeout)
        opts = PlanOptions(sm_count=bench.sm_count, greatest_priority=bench.priority_range[1],
                           rp_gemm_sms=args.rp_gemm_sms, rp_comm_ctas=args.rp_comm_ctas,
                           distributed=True, dma_collectives=dma_colls)
        plans = plan_runs(scenarios, strategies, opts)
        if args.share_gpu:
            nccl_runs = [p.id for p in plans if p.variant.transport in ("nccl", "nccl_ce")]
            if nccl_runs:
                raise C3profError(f"--share-gpu: NCCL cannot run two ranks on one GPU, but {len(nccl_runs)} planned "
                                  f"run(s) use it (e.g. {nccl_runs[0]}); use --strategies dma "
                                  f"--dma-collectives dma_push,dma_pull")
        digest = plan_digest(plans, {"rule": asdict(rule), "dma": [args.dma_api, args.dma_chunks, args.dma_streams],
                                     "inplace": not args.out_of_place, "world": world})
        described = {"plan_hash": digest, "world_size": world,
                     "scenarios": [[sc.name, sc.comm.op, sc.comm.bytes, sc.gemm.label] for sc in scenarios],
                     "strategies": list(strategies), "stopping": asdict(rule),
                     "dma": [args.dma_api, args.dma_chunks, args.dma_streams, not args.out_of_place]}
        views = ctrl.all_gather(described)
        for key in ("world_size", "scenarios", "strategies", "stopping", "dma", "plan_hash"):
            check_agreement([v[key] for v in views], f"the capture plan ({key})")
        capture_id = ctrl.all_gather(os.urandom(8).hex())[0]
        # Does every scenario fit on every rank? One rank's failure stops all, with its reason.
        problems = []
        for s in scenarios:
            try:
                bench.check_fits(s, {p.variant.transport for p in plans if p.scenario is s})
            except C3profError as exc:
                problems.append(str(exc))
        all_problems = ctrl.all_gather(problems)
        if any(all_problems):
            r, msgs = next((r, m) for r, m in enumerate(all_problems) if m)
            raise C3profError(f"rank {r}: {msgs[0]}")
        writer = TraceWriter(out, resume=args.resume, rank=rank, world_size=world,
                             command=["c3prof", *sys.argv[1:]])
        existing = writer.existing
        bench.distributed_info = {
            "capture_id": capture_id, "plan_hash": digest, "rank": rank, "world_size": world,
            "local_rank": local_rank, "local_world_size": local_world, "device": device,
            "rank_files": [rank_path(args.out, r).name for r in range(world)],
            "backend": "gloo (control) + " + ("none: --share-gpu" if args.share_gpu else "nccl"),
            "share_gpu": bool(args.share_gpu), "dma_api": args.dma_api, "dma_chunks": args.dma_chunks,
            "dma_streams": args.dma_streams, "inplace": not args.out_of_place}
        done = agreed_done(ctrl.all_gather(sorted(existing.completed_phases()) if existing else []))
        progress = SweepProgress(enabled=not args.quiet and rank == 0)
        if rank != 0:
            progress.scenario_done = lambda name, rows: None

        def agree(local):
            return ctrl.all_gather(local)

        runner = Runner(bench, writer, CaptureOptions(rule=AgreedStoppingRule(rule, agree),
                                                      inject_corruption=args.inject_corruption,
                                                      evidence=not args.no_evidence), progress, existing=existing)
        runner.done = done
        summary = runner.run(plans)
        results = ctrl.all_gather({"phases": summary.phases_measured, "failed": summary.runs_failed,
                                   "invalid": summary.validation_failures, "file": str(out)})
        bad = any(r["failed"] or r["invalid"] for r in results)
        if rank == 0:
            print(f"c3prof capture: {world} ranks finished; traces: " +
                  ", ".join(r["file"] for r in results), file=sys.stderr)
            for r, res in enumerate(results):
                if res["failed"] or res["invalid"]:
                    print(f"c3prof capture: rank {r}: {len(res['failed'])} run(s) failed, {len(res['invalid'])} "
                          f"collective(s) did not validate", file=sys.stderr)
        code = 1 if bad else 0
    except Terminated:
        _rank_print(rank, f"stopped by the launcher (SIGTERM), usually because another rank failed; every "
                          f"completed phase is kept in {out}; continue with the same command plus --resume")
        code = 143
    except KeyboardInterrupt:
        _rank_print(rank, f"interrupted; completed phases are kept in {out}; continue with --resume")
        code = 130
    except PeerFailed as exc:
        _rank_print(rank, f"stopped because another rank failed: {exc}; completed phases are kept in {out}")
        code = 1
    except C3profError as exc:
        ctrl.abort(f"rank {rank}: {exc}")
        _rank_print(rank, f"error: {exc}")
        code = exc.exit_code
    except Exception as exc:
        ctrl.abort(f"rank {rank}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
        _rank_print(rank, f"failed: {type(exc).__name__}: {exc}")
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        if writer is not None:
            writer.close()
    sys.stdout.flush()
    sys.stderr.flush()
    if code == 0:
        try:
            dist.destroy_process_group()
        except Exception:
            pass
        return 0
    # A peer may be stuck in a collective or a device wait that will never finish: leave without
    # running teardown that could wait for it (every record is already on disk).
    os._exit(code)
