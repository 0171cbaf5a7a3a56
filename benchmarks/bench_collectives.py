"""Bandwidth of every collective implementation, side by side, in nccl-tests' table form.

Runs under torchrun (one rank per GPU) or alone (world size 1), with nccl-tests' flags
(-b/-e/-f/-i sizes, -n iterations, -w warmup, -c check, -d type, -o reduction, -g GPUs per process):

    torchrun --nproc-per-node 8 benchmarks/bench_collectives.py -b 64K -e 1G -f 2 --json out/collectives.json
    torchrun --nproc-per-node 2 benchmarks/bench_collectives.py --share-gpu --impls dma_push,dma_pull  # 1 GPU: IPC
    python benchmarks/bench_collectives.py --impls nccl,nccl_ce -e 16M                                # world size 1

Output (rank 0): per operation and implementation, nccl-tests' table (size, count, type, redop,
root, then time/algbw/busbw/#wrong out-of-place and in-place) closed by ``# Out of bounds values``
and ``# Avg bus bandwidth`` (benchmarks/nccl_tests_format.py); every other line starts with ``#``.
all_gather is measured in both placements, all_to_all out-of-place, all_reduce in place.

Implementations (c3prof/collectives): ``nccl`` (SM kernels; ``--nccl-max-ctas 8,32`` adds CTA-limited
rows ``nccl[ctas8]``), ``nccl_ce`` (NCCL >= 2.28 copy-engine collectives: CTA policy zero + symmetric
windows), ``dma_push`` / ``dma_pull`` (c3prof's IPC copy-engine collectives; ``--dma-api``,
``--dma-chunks``, ``--dma-streams`` take lists and every combination becomes a row such as
``dma_pull[batch,c4,s2]``). Sizes follow nccl-tests (all_gather: gathered bytes).

Timing as nccl-tests: per size, ``-n`` launches back to back between two events (after ``-w``
launches and a barrier), repeated ``--runs`` times; a rank's time is the median run / iters; the
table shows the slowest rank (nccl-tests' ``-a 3``). With ``-c 1`` (default) every rank then
poisons its output, runs the collective once
more and compares it byte for byte with the reference regenerated from every rank's seeded source:
``#wrong`` is the number of wrong bytes summed over ranks (``--corrupt-check`` also flips one byte
on purpose and must see exactly one wrong byte per rank: the validation itself is checked).

Diagnostics for the copy-engine question (docs/multigpu.md): ``--evidence`` measures NVML GPM SM
utilization while each implementation runs alone (copy engine: SM_UTIL ~0); ``--nccl-debug DIR``
writes NCCL INFO logs and counts the lines in which NCCL says it used the copy engine;
``--loop IMPL:OP:BYTES:SECONDS`` runs one implementation alone in a loop (for an external GPM or
nsys measurement); ``--isolate-devices`` gives each rank only its own GPU (CUDA_VISIBLE_DEVICES),
reproducing the setup suspected of the naive 32 GB/s IPC all-gather.

The last lines printed (rank 0) are a compact summary: per operation and implementation, the
busbw ratio to NCCL at >= 64 MiB (target >= 1.3), the time ratio at 1-16 MiB (target <= 1.5), #wrong.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.nccl_tests_format import (  # noqa: E402
    IN_PLACE,
    PLACEMENTS_BY_OP,
    PRIMARY_PLACEMENT,
    add_nccl_tests_arguments,
    byte_size,
    check_nccl_tests_arguments,
    format_tables,
    parse_size,
    placement_of,
    sweep_sizes,
)
from c3prof.units import format_bytes  # noqa: E402


def _streams(text):
    return None if text == "auto" else int(text)


def _list(kind):
    def parse(text):
        return [kind(x) for x in text.split(",") if x.strip()]
    return parse


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_nccl_tests_arguments(ap)
    ap.add_argument("--ops", type=_list(str), default=["all_gather", "all_to_all"])
    ap.add_argument("--impls", type=_list(str), default=["nccl", "nccl_ce", "dma_push", "dma_pull"])
    ap.add_argument("--sizes", type=_list(byte_size), default=None, help="explicit sizes (overrides -b/-e/-f/-i)")
    ap.add_argument("--nccl-max-ctas", type=_list(int), default=[], help="extra CTA-limited NCCL rows")
    ap.add_argument("--dma-api", type=_list(str), default=["memcpy"])
    ap.add_argument("--dma-chunks", type=_list(int), default=[1])
    ap.add_argument("--dma-streams", type=_list(_streams), default=[1],
                    help="copy streams per launch, or auto (by world size and size: c3prof/plan/dma_schedule.py)")
    ap.add_argument("--dma-local", type=_list(str), default=["stream"],
                    help="all_to_all local block: stream (own stream, first), ce_hint (own stream, batch copy asking "
                         "for a copy engine), inline (after the peer copies; the old behaviour)")
    ap.add_argument("--breakdown", action="store_true",
                    help="latency breakdown of every c3prof DMA row (host enqueue, flag waits, copies, ...)")
    ap.add_argument("--breakdown-launches", type=int, default=12, help="lone launches per breakdown (median)")
    ap.add_argument("--flag-write", default="memcpy", choices=("memcpy", "memop", "batch"),
                    help="ready/done flags: memcpy (a local word copied to each peer), memop (cuStreamWriteValue32 "
                         "into each peer), batch (one cuStreamBatchMemOp for all writes, one for all waits)")
    ap.add_argument("--runs", type=int, default=5, help="timed runs of -n launches per size; the median counts")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", help="write rows, targets and diagnostics here (rank 0)")
    ap.add_argument("--share-gpu", action="store_true", help="ranks share GPU 0 (IPC tests; no NCCL)")
    ap.add_argument("--isolate-devices", action="store_true", help="each rank sees only its own GPU")
    ap.add_argument("--evidence", action="store_true", help="GPM SM utilization of each implementation alone")
    ap.add_argument("--evidence-bytes", type=byte_size, default=256 * 2**20)
    ap.add_argument("--nccl-debug", metavar="DIR", help="NCCL INFO logs here; count copy-engine lines")
    ap.add_argument("--corrupt-check", action="store_true", help="flip one byte per rank and require #wrong == 1")
    ap.add_argument("--loop", metavar="IMPL:OP:BYTES:SECONDS", help="run one implementation alone in a loop")
    ap.add_argument("-T", "--timeout", type=float, default=300.0, help="seconds a collective may take")
    args = ap.parse_args(argv)
    check_nccl_tests_arguments(ap, args)
    if args.corrupt_check and not args.check:
        ap.error("--corrupt-check needs validation: leave out -c 0")
    from c3prof.plan.dma_schedule import LOCAL_MODES

    bad = [x for x in args.dma_local if x not in LOCAL_MODES]
    if bad:
        ap.error(f"--dma-local {bad[0]!r}: known {', '.join(LOCAL_MODES)}")
    return args


class Env:
    """Process group, control group and this rank's device."""

    def __init__(self, args):
        self.rank = int(os.environ.get("RANK", 0))
        self.world = int(os.environ.get("WORLD_SIZE", 1))
        self.local_rank = int(os.environ.get("LOCAL_RANK", 0))
        if args.isolate_devices:   # before CUDA initializes in this process
            from c3prof.backends.cuda.device import isolate_device
            from c3prof.errors import C3profError

            try:
                self.isolated_to = isolate_device(self.local_rank, args.share_gpu)
            except C3profError as exc:
                sys.exit(f"bench_collectives: --isolate-devices: {exc}")
        if args.nccl_debug:
            Path(args.nccl_debug).mkdir(parents=True, exist_ok=True)
            os.environ.update(NCCL_DEBUG="INFO", NCCL_DEBUG_SUBSYS="INIT,COLL,ENV,TUNING",
                              NCCL_DEBUG_FILE=str(Path(args.nccl_debug) / "nccl.%h.%p.log"))
        from c3prof.backends.cuda.device import cuda_env_defaults

        cuda_env_defaults()
        import torch
        import torch.distributed as dist

        from c3prof.backends.cuda import runtime as rt

        self.torch, self.dist, self.rt = torch, dist, rt
        n = torch.cuda.device_count()
        if n == 0:
            sys.exit("bench_collectives: no GPU visible")
        local_world = int(os.environ.get("LOCAL_WORLD_SIZE", self.world))
        # Isolated ranks each see one GPU by design; isolate_device already checked the node's count.
        if local_world > n and not (args.share_gpu or args.isolate_devices):
            sys.exit(f"bench_collectives: {local_world} ranks on this node but {n} GPU(s) visible")
        self.device = 0 if (args.isolate_devices or args.share_gpu) else self.local_rank
        torch.cuda.set_device(self.device)
        rt.set_device(self.device)
        timeout = timedelta(seconds=args.timeout)
        if "MASTER_ADDR" not in os.environ:
            os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(29500 + os.getpid() % 1000), RANK="0",
                              WORLD_SIZE="1")
        self.nccl = not args.share_gpu
        if self.nccl:
            dist.init_process_group("nccl", timeout=timeout, device_id=torch.device("cuda", self.device))
        else:
            dist.init_process_group("gloo", timeout=timeout)
        from c3prof.capture.agreement import Control

        self.ctrl = Control(dist, dist.new_group(backend="gloo", timeout=timeout),
                            dist.distributed_c10d._get_default_store(), self.rank, self.world, args.timeout)
        self.groups = None
        if self.nccl:
            from c3prof.backends.cuda.nccl import NcclGroups

            self.groups = NcclGroups(torch, self.device, timeout)
        from c3prof.backends.cuda.streams import make_stream

        self.stream = make_stream(torch, label="bench")

    def log(self, msg):
        if self.rank == 0:
            print(msg, flush=True)


def configs(args, env):
    """(row name, impl, options) for every implementation configuration asked for."""
    out = []
    for impl in args.impls:
        if impl in ("nccl", "nccl_ce") and not env.nccl:
            env.log(f"# skipping {impl}: NCCL cannot run ranks that share a GPU")
            continue
        if impl == "nccl":
            out.append(("nccl", "nccl", {}))
            out += [(f"nccl[ctas{c}]", "nccl", {"max_ctas": c}) for c in args.nccl_max_ctas]
        elif impl == "nccl_ce":
            out.append(("nccl_ce", "nccl_ce", {}))
        elif impl in ("dma_push", "dma_pull", "dma_auto"):
            options = itertools.product(args.dma_api, args.dma_chunks, args.dma_streams, args.dma_local)
            for api, ch, st, local in options:
                out.append((dma_row_name(impl, api, ch, st, local), impl,
                            {"api": api, "chunks": ch, "streams": st, "local": local}))
        else:
            sys.exit(f"bench_collectives: unknown implementation {impl!r}")
    return out


def dma_row_name(impl, api, chunks, streams, local):
    """``dma_pull`` for the defaults, else e.g. ``dma_pull[batch,c4,sauto,inline]``."""
    if (api, chunks, streams, local) == ("memcpy", 1, 1, "stream"):
        return impl
    parts = [api, f"c{chunks}", f"s{'auto' if streams is None else streams}"] + ([local] if local != "stream" else [])
    return f"{impl}[{','.join(parts)}]"


def make(env, args, impl, opts, op, nbytes, placement=IN_PLACE):
    from c3prof.plan.layout import Layout

    layout = Layout(op, nbytes, env.world, env.rank, inplace=placement == IN_PLACE)
    if impl.startswith("dma_"):
        from c3prof.backends.cuda.dma_collective import DmaCollective

        coll = DmaCollective(env.torch, env.ctrl, layout, env.device, impl.split("_")[1], api=opts["api"],
                             chunks=opts["chunks"], streams=opts["streams"], seed=args.seed, flag_write=args.flag_write,
                             local=opts["local"])
    else:
        from c3prof.backends.cuda.nccl import NcclCollective

        ce = impl == "nccl_ce"
        g = env.groups.get(max_ctas=opts.get("max_ctas"), ce=ce)
        coll = NcclCollective(env.torch, g, layout, env.device, ce=ce, seed=args.seed, max_ctas=opts.get("max_ctas"),
                              group_note=env.groups.notes.get((opts.get("max_ctas"), ce), ""))
    coll.exchange()
    return coll


def time_us(env, coll, args) -> float:
    """nccl-tests style: iters launches between two events, median of runs, this rank's time per launch."""
    torch, s = env.torch, env.stream
    rt = env.rt
    for i in range(args.warmup):
        coll.launch(s, i)
    s.dma.synchronize()
    runs = []
    for _ in range(args.runs):
        env.ctrl.barrier()
        start, end = rt.Event(), rt.Event()
        with torch.cuda.stream(s.torch):
            torch.cuda._sleep(int(2e6))   # ~1 ms: the host enqueues all iterations before they start
        start.record(s.dma)
        for i in range(args.iters):
            coll.launch(s, i)
        end.record(s.dma)
        end.synchronize()
        runs.append(start.elapsed_ms(end) * 1e3 / args.iters)
    return statistics.median(runs)


def rank_breakdown(env, args, coll) -> dict:
    """The latency breakdown with each part's maximum over ranks (and every rank's own)."""
    from benchmarks.breakdown_table import rank_max_parts
    from c3prof.backends.cuda.dma_breakdown import measure_breakdown

    mine = measure_breakdown(coll, env.stream, launches=args.breakdown_launches, deadline_s=args.timeout)
    per_rank = env.ctrl.all_gather({k: mine[k] for k in ("parts_us", "per_copy_us")})
    return {**{k: v for k, v in mine.items() if k != "samples_us"}, "parts_us": rank_max_parts(per_rank),
            "per_rank": per_rank}


def validate(env, coll, corrupt=False) -> int:
    coll.poison()
    env.ctrl.barrier()
    coll.launch(env.stream, 0)
    env.stream.dma.synchronize()
    env.ctrl.barrier()
    return coll.validate(corrupt=corrupt)["mismatched_bytes"]


def measure(env, args, config, op, nbytes, placement, diagnostics):
    """One size in one placement: time it, validate it (-c 1), and return its table row (None if
    the implementation cannot be set up here: noted in diagnostics)."""
    from c3prof.analysis.busbw import make_row

    name, impl, opts = config
    try:
        coll = make(env, args, impl, opts, op, nbytes, placement)
    except Exception as exc:
        env.log(f"# {name} {op} {format_bytes(nbytes)}: setup failed: {type(exc).__name__}: {exc}")
        diagnostics.setdefault(name, {})["error"] = f"{type(exc).__name__}: {exc}"
        return None
    try:
        t = max(env.ctrl.all_gather(time_us(env, coll, args)))
        wrong = sum(env.ctrl.all_gather(validate(env, coll))) if args.check else -1
        params = coll.params()
        if args.breakdown and impl.startswith("dma_"):
            params["breakdown"] = rank_breakdown(env, args, coll)
        if args.corrupt_check and args.check and nbytes == diagnostics["first_size"]:
            caught = env.ctrl.all_gather(validate(env, coll, corrupt=True))
            diagnostics.setdefault(name, {})["corrupt_check"] = caught
            if any(c != 1 for c in caught):
                env.log(f"# CORRUPTION CHECK FAILED for {name}: wrong bytes per rank {caught} (want 1 each)")
    finally:
        coll.close()
        env.torch.cuda.empty_cache()
    peers = params.pop("peers", None)
    if peers is not None and name not in diagnostics.get("peers", {}):
        diagnostics.setdefault("peers", {})[name] = env.ctrl.all_gather(peers)
    row = make_row(name, op, nbytes, t, env.world, wrong, dtype=args.datatype,
                   params={**params, "placement": placement})
    env.log(f"# {op:>10s} {name:<26s} {placement:<12s} {format_bytes(nbytes):>7s} {t:9.1f} us  algbw {row.algbw:7.2f}"
            f"  busbw {row.busbw:7.2f} GB/s  #wrong {wrong if args.check else 'N/A'}")
    return row


def sweep(env, args):
    sizes = args.sizes or sweep_sizes(args)
    rows, diagnostics = [], {"first_size": sizes[0]}
    for op in args.ops:
        for config in configs(args, env):
            if op == "all_reduce" and config[1] != "nccl":
                continue
            measured = (measure(env, args, config, op, nbytes, placement, diagnostics)
                        for nbytes in sizes if nbytes % (8 * env.world) == 0 for placement in PLACEMENTS_BY_OP[op])
            for row in measured:
                if row is None:   # setup failed: the next sizes would fail the same way
                    break
                rows.append(row)
    del diagnostics["first_size"]
    return rows, diagnostics


def evidence(env, args):
    from c3prof.backends.cuda.collectives import collective_evidence
    from c3prof.backends.cuda.nvml import Nvml

    nvml = Nvml(env.device)
    out = []
    for name, impl, opts in configs(args, env):
        for op in [o for o in args.ops if o != "all_reduce"][:1]:
            coll = make(env, args, impl, opts, op, args.evidence_bytes - args.evidence_bytes % (8 * env.world))
            try:
                rec = collective_evidence(env.torch, nvml, coll, env.stream, env.ctrl)
            finally:
                coll.close()
            recs = env.ctrl.all_gather({k: rec.get(k) for k in ("carrier", "metrics", "reason", "expected_carrier")})
            out.append({"impl": name, "op": op, "bytes": coll.nbytes, "per_rank": recs})
            sm_util = [(r.get("metrics") or {}).get("sm_util") for r in recs]
            env.log(f"# evidence {name} {op}: carrier per rank {[r['carrier'] for r in recs]}, SM_UTIL {sm_util} "
                    f"(expected {recs[0]['expected_carrier']})")
    return out


def loop(env, args):
    impl, op, nbytes, seconds = args.loop.split(":")
    nbytes, seconds = parse_size(nbytes), float(seconds)
    cfg = next((c for c in configs(args, env) if c[1] == impl), None)
    if cfg is None:
        sys.exit(f"bench_collectives: --loop {impl}: not available here")
    coll = make(env, args, impl, cfg[2], op, nbytes)
    one = max(env.ctrl.all_gather(time_us(env, coll, argparse.Namespace(warmup=2, iters=5, runs=1))))
    n = max(1, int(seconds * 1e6 / one))
    env.log(f"# loop: {impl} {op} {format_bytes(nbytes)}: {n} launches of {one:.1f} us (~{seconds:.0f} s) start now "
            f"({time.strftime('%H:%M:%S')})")
    env.ctrl.barrier()
    t0 = time.time()
    for i in range(n):
        coll.launch(env.stream, i)
        if i % 256 == 255:
            env.stream.dma.synchronize()
    env.stream.dma.synchronize()
    env.log(f"# loop done after {time.time() - t0:.1f} s ({time.strftime('%H:%M:%S')})")
    coll.close()


def nccl_log_findings(path) -> dict:
    files = sorted(Path(path).glob("nccl.*.log"))
    text = "\n".join(f.read_text(errors="replace") for f in files)
    lines = text.splitlines()
    return {"files": [f.name for f in files],
            "copy_engine_lines": sum("Copy Engine" in ln or "CE " in ln and "AllGather" in ln for ln in lines),
            "cta_policy_lines": [ln.strip()[-160:] for ln in lines if "CTA policy" in ln or "CTAPolicy" in ln][:8],
            "symmetric_lines": [ln.strip()[-160:] for ln in lines if "ymmetric" in ln][:8],
            "sample_copy_engine": [ln.strip()[-200:] for ln in lines if "Copy Engine" in ln][:4]}


def _target(ratio, met) -> str:
    return f"{ratio:.2f} ({'met' if met else 'NOT met'})" if ratio else "  -  (n/a)"


def summary_line(e: dict) -> str:
    return (f"# {e['op']:>10s} {e['impl']:<26s} busbw ratio "
            f"{_target(e['min_busbw_ratio_ge_64MiB'], e['busbw_target_met'])}  time ratio "
            f"{_target(e['max_time_ratio_1_16MiB'], e['latency_target_met'])}  #wrong {e['wrong']}")


def primary_rows(rows):
    """The placement every implementation of an operation has, so that they compare like for like."""
    return [r for r in rows if placement_of(r) == PRIMARY_PLACEMENT[r.op]]


def write_json(path, rows, targets, meta):
    """Every row (both placements, ``params.placement``) and the targets of the primary placement."""
    doc = {"meta": meta, "rows": [r.to_dict() for r in rows], "targets": targets,
           "targets_placement": PRIMARY_PLACEMENT}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1, default=str))


def main(argv=None):
    args = parse_args(argv)
    env = Env(args)
    from c3prof.analysis.busbw import speedup_summary
    from c3prof.backends.cuda.nccl import ce_support

    rt = env.rt
    meta = {"world_size": env.world, "torch": env.torch.__version__, "ce_support": ce_support(env.torch),
            "gpu": env.torch.cuda.get_device_name(env.device), "args": vars(args),
            "driver": rt.driver_version(), "runtime": rt.runtime_version(),
            "visible_gpus": env.torch.cuda.device_count(),
            "peer_matrix": [[i == j or rt.can_access_peer(i, j) for j in range(env.torch.cuda.device_count())]
                            for i in range(env.torch.cuda.device_count())]}
    env.log(f"# bench_collectives: {env.world} rank(s), {meta['gpu']}, torch {meta['torch']}, NCCL "
            f"{meta['ce_support'].get('nccl')}, CE support {meta['ce_support']}")
    if args.loop:
        loop(env, args)
        return 0
    rows, diagnostics = sweep(env, args)
    ev = evidence(env, args) if args.evidence else []
    if args.nccl_debug:
        env.ctrl.barrier()
        diagnostics["nccl_log"] = nccl_log_findings(args.nccl_debug)
    if env.rank == 0:
        print("#")
        print(f"# {meta['gpu']}: {env.world} rank(s), iters: {args.iters} warmup iters: {args.warmup} runs: "
              f"{args.runs} validation: {args.check} type: {args.datatype}")
        print(format_tables(rows, check=bool(args.check)))
        if args.breakdown:
            from benchmarks.breakdown_table import copy_stage_fits, format_breakdown
            from c3prof.backends.cuda.dma_breakdown import fit_startup

            print(format_breakdown(rows, fit_startup))
            meta["copy_stage_fits"] = copy_stage_fits(rows, fit_startup)
        meta["diagnostics"] = diagnostics
        meta["evidence"] = ev
        targets = speedup_summary(primary_rows(rows))
        if args.json:
            write_json(Path(args.json), rows, targets, meta)
        print(f"\n# SUMMARY ({', '.join(f'{op} {p}' for op, p in PRIMARY_PLACEMENT.items() if op in args.ops)}; "
              "targets vs nccl: busbw >= 1.3x at >= 64 MiB, time <= 1.5x at 1-16 MiB)")
        for e in targets:
            print(summary_line(e))
        total_wrong = sum(max(r.wrong, 0) for r in rows)
        print(f"# rows {len(rows)}, total #wrong {total_wrong}, errors "
              f"{ {k: v['error'] for k, v in diagnostics.items() if isinstance(v, dict) and 'error' in v} }")
        if "nccl_log" in diagnostics:
            print(f"# NCCL log: {diagnostics['nccl_log']['copy_engine_lines']} copy-engine lines; "
                  f"{diagnostics['nccl_log']['sample_copy_engine'][:1]}")
        for name, per_rank in diagnostics.get("peers", {}).items():
            d = per_rank[0][0] if per_rank and per_rank[0] else {}
            print(f"# peers[{name}] rank0->peer0: visible={d.get('peer_visible')} same_device={d.get('same_device')} "
                  f"can_access_peer={d.get('can_access_peer')} mapped={d.get('mapped_dst')}")
            break
        return 1 if total_wrong else 0
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)
