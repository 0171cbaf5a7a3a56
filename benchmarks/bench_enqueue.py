"""Host cost of enqueueing one copy: c3prof's runtime extension vs cuda-bindings' Python layer vs torch.

Each path enqueues the same 4 KiB pinned-host -> device copy on one stream. Copies are enqueued
in rounds of 256 and the stream is drained between rounds (untimed), so the queue never fills
and the host time measured is the enqueue cost alone. Prints microseconds per copy (median of
rounds) and writes JSON when --json is given. Run on a GPU machine:

    python benchmarks/bench_enqueue.py --json out/bench_enqueue.json
"""

import argparse
import json
import statistics
import time

ROUND = 256
ROUNDS = 40
NBYTES = 4096


def per_copy_us(enqueue_round, drain) -> float:
    times = []
    for _ in range(ROUNDS):
        drain()
        t0 = time.perf_counter_ns()
        enqueue_round()
        times.append((time.perf_counter_ns() - t0) / ROUND / 1e3)
    drain()
    return statistics.median(times[3:])  # first rounds warm caches and lazy loading


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    args = ap.parse_args()

    import torch
    from cuda.bindings import runtime as cudart

    from c3prof.backends.cuda import runtime as rt

    stream = rt.Stream()
    host = rt.HostBuffer(NBYTES * ROUND)
    dev = torch.empty(NBYTES * ROUND, dtype=torch.uint8, device="cuda")
    d0, h0 = dev.data_ptr(), host.ptr
    drain = stream.synchronize

    def dma_memcpy():
        for i in range(ROUND):
            rt.memcpy_async(d0 + i * NBYTES, h0 + i * NBYTES, NBYTES, stream)

    batch = rt.CopyBatch([d0 + i * NBYTES for i in range(ROUND)], [h0 + i * NBYTES for i in range(ROUND)],
                           [NBYTES] * ROUND, mode="memcpy")
    batched = rt.CopyBatch([d0 + i * NBYTES for i in range(ROUND)], [h0 + i * NBYTES for i in range(ROUND)],
                             [NBYTES] * ROUND, mode="batch")
    kind = cudart.cudaMemcpyKind.cudaMemcpyDefault
    cu_stream = cudart.cudaStream_t(stream.handle)

    def bindings_python():
        for i in range(ROUND):
            (err,) = cudart.cudaMemcpyAsync(d0 + i * NBYTES, h0 + i * NBYTES, NBYTES, kind, cu_stream)
            if err != cudart.cudaError_t.cudaSuccess:
                raise RuntimeError(f"cudaMemcpyAsync: {err}")

    import numpy as np

    host_t = torch.from_numpy(np.frombuffer(host, dtype=np.uint8))  # pinned memory as a CPU tensor
    torch_stream = torch.cuda.ExternalStream(stream.handle)
    dst_views = [dev[i * NBYTES:(i + 1) * NBYTES] for i in range(ROUND)]
    src_views = [host_t[i * NBYTES:(i + 1) * NBYTES] for i in range(ROUND)]

    def torch_copy():
        with torch.cuda.stream(torch_stream):
            for i in range(ROUND):
                dst_views[i].copy_(src_views[i], non_blocking=True)

    results = {
        "c3prof runtime.memcpy_async (one Python call per copy)": per_copy_us(dma_memcpy, drain),
        "c3prof runtime.CopyBatch memcpy mode (per copy)": per_copy_us(lambda: batch.enqueue(stream), drain),
        "c3prof runtime.CopyBatch cudaMemcpyBatchAsync (per copy)": per_copy_us(lambda: batched.enqueue(stream), drain),
        "cuda.bindings.runtime.cudaMemcpyAsync (Python layer)": per_copy_us(bindings_python, drain),
        "torch Tensor.copy_(non_blocking=True)": per_copy_us(torch_copy, drain),
    }
    # Correctness: the bytes arrived (random source, poisoned destination).
    src_np = np.frombuffer(host, dtype=np.uint8)
    src_np[:] = np.random.default_rng(0).integers(0, 256, src_np.size, dtype=np.uint8)
    dev.fill_(0)
    batched.enqueue(stream)
    stream.synchronize()
    ok = bool(np.array_equal(dev.cpu().numpy(), src_np))
    ref = results["cuda.bindings.runtime.cudaMemcpyAsync (Python layer)"]
    print(f"{'path':58s} {'us/copy':>8s} {'vs bindings':>11s}")
    for name, us in results.items():
        print(f"{name:58s} {us:8.3f} {ref / us:10.1f}x")
    print(f"batched copies byte-exact: {ok}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"us_per_copy": results, "copy_bytes": NBYTES, "round": ROUND, "rounds": ROUNDS,
                       "byte_exact": ok, "gpu": torch.cuda.get_device_name()}, f, indent=1)


if __name__ == "__main__":
    main()
