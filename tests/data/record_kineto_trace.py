#!/usr/bin/env python3
"""Record a small, real Kineto trace of GEMMs overlapping communication, for c3prof ingest's tests.

Run on one GPU (the H200 device machine), from the repository root:

    python3 tests/data/record_kineto_trace.py --out tests/data

What it runs (fixed order and counts, so the trace's structure is the same on every run):

1. Warm-up outside the profiler (cuBLAS heuristics, NCCL communicator creation, pinned buffers).
2. Under torch.profiler (activities CPU + CUDA, record_shapes=True), one profiled step of:
   * alone instances: each bf16 GEMM shape ``--reps`` times on the compute stream; each pinned
     host<->device copy ``--reps`` times on the copy stream; each collective ``--reps`` times on the
     communication stream, with a device synchronization between the groups so nothing overlaps;
   * overlapped instances: for each GEMM shape and each communication operation, ``--reps`` pairs
     launched together (GEMM on the compute stream, communication on its side stream), each pair
     synchronized before the next.
   GEMMs: torch.mm 4096x4096x4096, torch.nn.functional.linear with m=2048, k=8192, n=8192
   (aten::linear -> aten::addmm) and torch.mm 8192x1024x8192, all bf16.
   Copies: ``--copy-mib`` MiB pinned host -> device and device -> pinned host (copy engines).
   Collectives (only when torch.distributed initializes a single-rank NCCL group: world size 1,
   MASTER_ADDR=127.0.0.1, NCCL_NVLS_ENABLE=0): all_gather_into_tensor of ``--coll-mib`` MiB
   (output) and all_reduce (SUM and AVG) of ``--coll-mib`` MiB. With one rank NCCL may run a
   collective as a device-to-device copy or a one-rank kernel, or skip an in-place SUM entirely:
   the trace records whatever NCCL did, and c3prof ingest classifies copies launched by a
   collective as that collective.
3. Exports the Chrome trace (Kineto JSON), gzips it as
   ``OUT/h200_kineto_<tag>.json.gz`` (``--tag``, default "c3overlap"), and prints what it wrote.

The trace stays small (a few thousand events, well under 5 MB gzipped) and the run takes well
under 60 s on an H200 (most of it torch and NCCL start-up).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import socket
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

GEMM_SHAPES = (("mm", 4096, 4096, 4096), ("linear", 2048, 8192, 8192), ("mm", 8192, 1024, 8192))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _init_nccl(torch, dist) -> tuple[bool, str]:
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(_free_port()))
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    os.environ.setdefault("RANK", "0")
    os.environ.setdefault("WORLD_SIZE", "1")
    try:
        dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda", 0))
        return True, f"NCCL single-rank group (NCCL {'.'.join(map(str, torch.cuda.nccl.version()))})"
    except Exception as exc:  # noqa: BLE001 - any failure means: record without collectives, and say so
        return False, f"no NCCL group ({type(exc).__name__}: {exc}); recording GEMMs and copies only"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="directory for the trace")
    ap.add_argument("--tag", default="c3overlap", help="file name tag: h200_kineto_<tag>.json.gz")
    ap.add_argument("--reps", type=int, default=5, help="instances per alone group and per overlapped pair")
    ap.add_argument("--copy-mib", type=int, default=16, help="pinned host<->device copy size (MiB)")
    ap.add_argument("--coll-mib", type=int, default=64, help="collective size, nccl-tests convention (MiB)")
    ap.add_argument("--no-nccl", action="store_true", help="do not try torch.distributed")
    args = ap.parse_args(argv)

    import torch
    import torch.distributed as dist
    from torch.profiler import ProfilerActivity, profile, record_function

    if not torch.cuda.is_available():
        print("record_kineto_trace: no CUDA device: run this on the GPU machine", file=sys.stderr)
        return 2
    t_start = time.time()
    torch.cuda.set_device(0)
    torch.manual_seed(0)
    dev = torch.device("cuda", 0)
    have_nccl, nccl_note = (False, "NCCL disabled by --no-nccl") if args.no_nccl else _init_nccl(torch, dist)
    print(f"record_kineto_trace: {torch.cuda.get_device_name(0)}, torch {torch.__version__}; {nccl_note}")

    compute = torch.cuda.Stream(dev)
    copy_stream = torch.cuda.Stream(dev)
    comm_stream = torch.cuda.Stream(dev)
    bf16 = torch.bfloat16

    gemms = []
    for kind, m, n, k in GEMM_SHAPES:
        a = torch.randn(m, k, device=dev, dtype=bf16)
        if kind == "linear":
            w = torch.randn(n, k, device=dev, dtype=bf16)  # linear's weight is [n, k]
            bias = torch.randn(n, device=dev, dtype=bf16)
            gemms.append((f"linear {m}x{n}x{k}", lambda a=a, w=w, bias=bias: torch.nn.functional.linear(a, w, bias)))
        else:
            b = torch.randn(k, n, device=dev, dtype=bf16)
            out = torch.empty(m, n, device=dev, dtype=bf16)
            gemms.append((f"mm {m}x{n}x{k}", lambda a=a, b=b, out=out: torch.mm(a, b, out=out)))

    copy_elems = args.copy_mib * (1 << 20) // 2
    host_src = torch.randn(copy_elems, dtype=bf16).pin_memory()
    host_dst = torch.empty(copy_elems, dtype=bf16).pin_memory()
    dev_buf = torch.empty(copy_elems, device=dev, dtype=bf16)
    comms = [
        ("copy HtoD", copy_stream, lambda: dev_buf.copy_(host_src, non_blocking=True)),
        ("copy DtoH", copy_stream, lambda: host_dst.copy_(dev_buf, non_blocking=True)),
    ]
    if have_nccl:
        coll_elems = args.coll_mib * (1 << 20) // 2
        ag_out = torch.empty(coll_elems, device=dev, dtype=bf16)
        ag_in = torch.randn(coll_elems, device=dev, dtype=bf16)  # world size 1: shard == output
        ar_buf = torch.randn(coll_elems, device=dev, dtype=bf16)
        comms += [
            ("all_gather", comm_stream, lambda: dist.all_gather_into_tensor(ag_out, ag_in)),
            ("all_reduce sum", comm_stream, lambda: dist.all_reduce(ar_buf)),
            ("all_reduce avg", comm_stream, lambda: dist.all_reduce(ar_buf, op=dist.ReduceOp.AVG)),
        ]

    def run_on(stream, fn):
        with torch.cuda.stream(stream):
            fn()

    def step():
        with record_function("c3prof/alone_gemms"):
            for _name, fn in gemms:
                for _ in range(args.reps):
                    run_on(compute, fn)
                torch.cuda.synchronize()
        with record_function("c3prof/alone_comms"):
            for _name, stream, fn in comms:
                for _ in range(args.reps):
                    run_on(stream, fn)
                torch.cuda.synchronize()
        with record_function("c3prof/overlapped"):
            for _gname, gfn in gemms:
                for _cname, stream, cfn in comms:
                    for _ in range(args.reps):
                        run_on(compute, gfn)
                        run_on(stream, cfn)
                        torch.cuda.synchronize()

    step()  # warm-up: cuBLAS heuristics, NCCL lazy init, caching allocator
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
        step()
        torch.cuda.synchronize()

    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    final = out_dir / f"h200_kineto_{args.tag}.json.gz"
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "trace.json"
        prof.export_chrome_trace(str(raw))
        doc = json.loads(raw.read_text())
        with open(raw, "rb") as src, gzip.GzipFile(final, "wb", compresslevel=9, mtime=0) as dst:
            shutil.copyfileobj(src, dst)
        raw_size = raw.stat().st_size
    if have_nccl:
        dist.destroy_process_group()

    cats = Counter(e.get("cat", "?") for e in doc.get("traceEvents", []))
    kernels = Counter(e["name"] for e in doc["traceEvents"] if e.get("cat") == "kernel")
    print(f"record_kineto_trace: wrote {final} ({final.stat().st_size / 1e6:.2f} MB gzip, "
          f"{raw_size / 1e6:.2f} MB JSON) in {time.time() - t_start:.1f} s")
    print("  events by category: " + ", ".join(f"{c}={n}" for c, n in cats.most_common()))
    print("  distributedInfo: " + json.dumps(doc.get("distributedInfo")))
    print("  kernels: " + "; ".join(f"{n[:70]} x{c}" for n, c in kernels.most_common(12)))
    print(f"  check it: python -m c3prof ingest {final} --out /tmp/ingest-check")
    if final.stat().st_size > 5e6:
        print("record_kineto_trace: warning: larger than 5 MB; use fewer --reps", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
