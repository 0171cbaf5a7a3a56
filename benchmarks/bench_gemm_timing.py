"""Does the runner time a GEMM like triton.testing.do_bench does? (Goal: medians within 2%.)

For each shape, the runner's isolated-GEMM phase (device events, rotating input sets, stopping
rule) and do_bench (events, L2 flushed between runs, median) time the same torch.matmul, side by
side in one process. Run on a GPU machine:

    python benchmarks/bench_gemm_timing.py --json out/bench_gemm_timing.json
"""

import argparse
import json
import statistics

SHAPES = [(8192, 8192, 8192), (4096, 4096, 4096), (64, 16384, 16384), (2048, 2048, 2048)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    args = ap.parse_args()
    import torch
    import triton.testing

    from c3prof import _dma
    from c3prof.backends.cuda.gemm import TorchGemm, input_sets
    from c3prof.backends.cuda.streams import DeviceEventPool, Gate, make_stream
    from c3prof.capture.phases import PhaseTimer
    from c3prof.capture.stopping import StoppingRule
    from c3prof.scenarios import GemmSpec

    l2 = _dma.device_properties(0)["l2_bytes"]
    stream = make_stream(torch)
    rule = StoppingRule(min_reps=30, max_reps=100, max_noise=0.005)
    rows = []
    for m, n, k in SHAPES:
        spec = GemmSpec(m, n, k, "bf16")
        g = TorchGemm(torch, spec, input_sets(spec, l2))

        class Idle:
            def launch(self, s, rep):
                pass

        timer = PhaseTimer(g, Idle(), stream, stream, "gemm_first", DeviceEventPool, Gate(torch))
        ours = statistics.median(timer.measure("gemm", rule).samples["total_ms"])
        a, b, c = g.a[0], g.b[0], g.c[0]
        with torch.cuda.stream(stream.torch):
            ref = triton.testing.do_bench(lambda: torch.matmul(a, b, out=c), warmup=100, rep=500,
                                          return_mode="median")
        rows.append({"shape": [m, n, k], "dtype": "bf16", "c3prof_ms": ours, "do_bench_ms": ref,
                     "ratio": ours / ref, "input_sets": g.n_sets,
                     "tflops_c3prof": spec.flops / ours / 1e9})
        g.close()
    print(f"{'shape':>20s} {'c3prof ms':>10s} {'do_bench ms':>11s} {'ratio':>7s} {'TFLOP/s':>8s}")
    for r in rows:
        print(f"{'x'.join(map(str, r['shape'])):>20s} {r['c3prof_ms']:10.4f} {r['do_bench_ms']:11.4f} "
              f"{r['ratio']:7.4f} {r['tflops_c3prof']:8.1f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "gpu": torch.cuda.get_device_name()}, f, indent=1)


if __name__ == "__main__":
    main()
