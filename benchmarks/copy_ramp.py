"""Is a host->device copy-engine copy slower when it starts after idle than inside a stream of copies?

analysis/interference.md found that a copy starting after 3 ms without traffic slows a GEMM beside it
about 4 points less than one in steady copying. This times the copy itself (torch only, device events
right around it, 45 repetitions, medians). Both modes enqueue everything behind a 3 ms sleep kernel
on the same stream (no PCIe traffic for 3 ms, and no host launch inside the timed window):
``after_idle`` times the first copy after the sleep; ``steady`` first runs an untimed copy of the same
size, then times the next one, with nothing between. If the first microseconds after idle move fewer
bytes, ``after_idle`` is slower.

    python benchmarks/copy_ramp.py --json out.json
"""

import argparse
import json

import numpy as np
import torch

KiB = 1 << 10


def time_copy(dst: torch.Tensor, src: torch.Tensor, mode: str) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    torch.cuda._sleep(6_000_000)                  # about 3 ms at 1.98 GHz: no copy traffic, all enqueued
    if mode == "steady":
        dst.copy_(src, non_blocking=True)         # the copy engine busy right up to the timed copy
    start.record()
    dst.copy_(src, non_blocking=True)
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=45)
    ap.add_argument("--json", required=True)
    args = ap.parse_args()
    out = {"gpu": torch.cuda.get_device_name(), "uuid": str(getattr(torch.cuda.get_device_properties(0), "uuid", "")),
           "reps": args.reps, "copies": {}}
    for size in (64 * KiB, 1024 * KiB, 8192 * KiB, 65536 * KiB):
        src = torch.empty(size, dtype=torch.uint8, pin_memory=True)
        dst = torch.empty(size, dtype=torch.uint8, device="cuda")
        for mode in ("after_idle", "steady"):
            time_copy(dst, src, mode)             # warm-up
        times: dict[str, list[float]] = {"after_idle": [], "steady": []}
        for _ in range(args.reps):                # interleaved
            for mode in times:
                times[mode].append(time_copy(dst, src, mode))
        for mode, t in times.items():
            ms = float(np.median(t))
            out["copies"][f"{size // KiB}KiB/{mode}"] = {"median_ms": ms, "gbps": size / ms / 1e6,
                                                         "p10_ms": float(np.percentile(t, 10)),
                                                         "p90_ms": float(np.percentile(t, 90))}
            print(f"{size // KiB:>6} KiB {mode:10s} {ms * 1000:8.1f} us  {size / ms / 1e6:6.1f} GB/s")
    with open(args.json, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
