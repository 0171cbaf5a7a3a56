"""A stand-alone torch script (no c3prof code) that times the memory-bound GEMM beside copy-engine
and SM traffic the way a user's quick script would: two CUDA streams, device events around the
GEMM, arms interleaved round-robin, median over the repetitions.

Why it exists: analysis/interference.md compares c3prof's runner against a table measured earlier
by such a script (1.064x for one 256 MiB host->device copy, 1.138x for the same bytes as 1 MiB
copies, 2.06x beside an all-SM device copy) and could not reproduce it. This script is the
independent check: if a plain torch script on the same kind of GPU gives c3prof's numbers, the
earlier table is not reproducible by either method; if it gives the earlier numbers, the launch
details here (order, enqueue timing) say what differs.

Each arm is timed in three launch modes: ``side_first`` enqueues the interfering work on the side
stream, then the GEMM; ``gemm_first`` the reverse; ``gated`` holds the GEMM's stream with a sleep
kernel (3 ms) while everything is enqueued, and releases both streams through one event, so that no
CPU enqueue time falls inside the GEMM's events and both start together (what c3prof's runner
does); ``batched`` is gated too, but runs 15 repetitions back to back behind one gate, each
starting when the previous one has ended on both streams (c3prof's runner's scheme); ``primed``
is one repetition whose gate is a 128 MiB host->device copy on the copy's own stream instead of a
sleep, so the copy engine and the PCIe link are busy right up to the release (the test of whether
a copy starting from idle costs the GEMM less). Intervals:
percentile bootstrap of the ratio of medians (repetitions resampled
independently per arm).

    python benchmarks/standalone_interference.py --reps 45 --json out.json
"""

import argparse
import json
import time

import numpy as np
import torch

MiB = 1 << 20


def build_arms(dev: torch.device) -> dict:
    pinned = torch.empty(256 * MiB, dtype=torch.uint8, pin_memory=True)
    dev_buf = torch.empty(256 * MiB, dtype=torch.uint8, device=dev)
    big_src = torch.empty(1024 * MiB, dtype=torch.uint8, device=dev)
    big_dst = torch.empty_like(big_src)
    src_f = torch.ones(128 * MiB, dtype=torch.float16, device=dev)   # 256 MiB
    dst_f = torch.empty_like(src_f)
    chunks_src = [pinned[i * MiB:(i + 1) * MiB] for i in range(256)]
    chunks_dst = [dev_buf[i * MiB:(i + 1) * MiB] for i in range(256)]
    return {
        "alone": lambda: None,
        "sleep_1sm": lambda: torch.cuda._sleep(200_000),
        "ce_h2d_256MiB": lambda: dev_buf.copy_(pinned, non_blocking=True),
        "ce_h2d_256x1MiB": lambda: [d.copy_(s, non_blocking=True) for d, s in zip(chunks_dst, chunks_src)],
        "ce_d2h_256MiB": lambda: pinned.copy_(dev_buf, non_blocking=True),
        "d2d_copy_1GiB": lambda: big_dst.copy_(big_src),
        "sm_add_256MiB": lambda: torch.add(src_f, 0, out=dst_f),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=45)
    ap.add_argument("--json", required=True)
    args = ap.parse_args()
    dev = torch.device("cuda")
    a = torch.randn(64, 16384, dtype=torch.bfloat16, device=dev)
    b = torch.randn(16384, 16384, dtype=torch.bfloat16, device=dev)
    c = torch.empty(64, 16384, dtype=torch.bfloat16, device=dev)
    main_s, side_s = torch.cuda.Stream(), torch.cuda.Stream()
    arms = build_arms(dev)
    times: dict[str, list[float]] = {}
    orders = ("side_first", "gemm_first", "gated", "primed", "batched")
    keys = [(arm, order) for arm in arms for order in orders[:4]]
    prime_src = torch.empty(128 * MiB, dtype=torch.uint8, pin_memory=True)
    prime_dst = torch.empty(128 * MiB, dtype=torch.uint8, device=dev)
    per_batch = 15

    def one(arm: str, order: str) -> float:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        if order == "gated":
            gate = torch.cuda.Event()
            with torch.cuda.stream(main_s):
                torch.cuda._sleep(6_000_000)       # about 3 ms at 1.98 GHz: longer than any enqueue here
                gate.record()
            side_s.wait_event(gate)
        if order == "primed":
            gate = torch.cuda.Event()
            with torch.cuda.stream(side_s):
                prime_dst.copy_(prime_src, non_blocking=True)   # about 2.5 ms: covers every enqueue here
                gate.record()
            main_s.wait_event(gate)
        if order in ("side_first", "gated", "primed"):
            with torch.cuda.stream(side_s):
                arms[arm]()
        with torch.cuda.stream(main_s):
            start.record()
            torch.matmul(a, b, out=c)
            end.record()
        if order == "gemm_first":
            with torch.cuda.stream(side_s):
                arms[arm]()
        torch.cuda.synchronize()
        return start.elapsed_time(end)

    def batch(arm: str) -> list[float]:
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True),
                   torch.cuda.Event(), torch.cuda.Event()) for _ in range(per_batch)]
        torch.cuda.synchronize()
        with torch.cuda.stream(main_s):
            torch.cuda._sleep(80_000_000)          # about 40 ms: the host enqueues the whole batch first
        for start, end, release, side_done in events:
            release.record(main_s)
            side_s.wait_event(release)
            with torch.cuda.stream(side_s):
                arms[arm]()
            side_done.record(side_s)
            with torch.cuda.stream(main_s):
                start.record()
                torch.matmul(a, b, out=c)
                end.record()
            main_s.wait_event(side_done)           # the next repetition starts when both sides are done
        torch.cuda.synchronize()
        return [s.elapsed_time(e) for s, e, _, _ in events]

    for arm, order in keys:                       # warm-up: cuBLAS heuristics, allocator, pinning
        for _ in range(3):
            one(arm, order)
    t0 = time.time()
    for _ in range(args.reps):                    # interleaved round-robin, one repetition per arm
        for arm, order in keys:
            times.setdefault(f"{arm}/{order}", []).append(one(arm, order))
    for _ in range(max(1, args.reps // per_batch)):   # batched: interleaved round-robin, a batch per arm
        for arm in arms:
            times.setdefault(f"{arm}/batched", []).extend(batch(arm))
    rng = np.random.default_rng(0)
    out = {"gpu": torch.cuda.get_device_name(), "uuid": str(getattr(torch.cuda.get_device_properties(0), "uuid", "")),
           "torch": torch.__version__, "reps": args.reps,
           "wall_s": round(time.time() - t0, 1), "gemm": "64x16384x16384 bf16", "arms": {}}
    for order in orders:
        ref = np.array(times[f"alone/{order}"])
        for arm in arms:
            x = np.array(times[f"{arm}/{order}"])
            boot = [np.median(rng.choice(x, x.size)) / np.median(rng.choice(ref, ref.size)) for _ in range(2000)]
            out["arms"][f"{arm}/{order}"] = {
                "median_ms": float(np.median(x)), "slowdown": float(np.median(x) / np.median(ref)),
                "ci95": [float(np.percentile(boot, 2.5)), float(np.percentile(boot, 97.5))]}
            print(f"{arm:18s} {order:10s} {np.median(x):.4f} ms  x{np.median(x) / np.median(ref):.3f} "
                  f"[{np.percentile(boot, 2.5):.3f}, {np.percentile(boot, 97.5):.3f}]")
    with open(args.json, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
