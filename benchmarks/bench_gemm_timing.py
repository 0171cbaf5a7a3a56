"""Does the runner time a GEMM like triton.testing.do_bench does? (Goal: medians within 2%.)

For each shape, the runner's isolated-GEMM phase (device events, rotating input sets, stopping
rule) and do_bench (events, L2 flushed between runs, median) time the same torch.matmul, side by
side in one process. Both are run twice: in short bursts (the runner's default rule, ~10-60
repetitions; do_bench with rep=25 ms) and sustained (300 runner repetitions; do_bench's default
rep=500 ms), because a GPU held busy for half a second runs at lower clocks than one used in short
bursts, and a capture phase is a short burst. The SM clock is read before and after each.
do_bench also zeroes a 256 MB buffer before every call to flush the L2, which leaves the L2 full of
dirty lines the GEMM must write back; the column ``c3prof_flushed_ms`` times the GEMM with c3prof's
events after the same flush, to show how much of any difference that accounts for. Run on a GPU
machine:

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

    from c3prof.backends.cuda import runtime as rt
    from c3prof.backends.torch_gemm import TorchGemm, input_sets
    from c3prof.backends.cuda.streams import DeviceEventPool, Gate, make_stream
    from c3prof.capture.phases import PhaseTimer
    from c3prof.capture.stopping import StoppingRule
    from c3prof.scenarios import GemmSpec

    l2 = rt.device_properties(0)["l2_bytes"]
    stream = make_stream(torch)
    burst = StoppingRule(min_reps=30, max_reps=100, max_noise=0.005)
    sustained = StoppingRule(min_reps=300, max_reps=300, max_noise=0.005, timeout_s=60)
    import pynvml

    pynvml.nvmlInit()
    nv = pynvml.nvmlDeviceGetHandleByIndex(0)

    def sm_mhz():
        return pynvml.nvmlDeviceGetClockInfo(nv, pynvml.NVML_CLOCK_SM)

    rows = []
    for m, n, k in SHAPES:
        spec = GemmSpec(m, n, k, "bf16")
        g = TorchGemm(torch, spec, input_sets(spec, l2))

        class Idle:
            def launch(self, s, rep):
                pass

        timer = PhaseTimer(g, Idle(), stream, stream, "gemm_first", DeviceEventPool, Gate(torch))
        a, b, c = g.a[0], g.b[0], g.c[0]
        row = {"shape": [m, n, k], "dtype": "bf16", "input_sets": g.n_sets}
        for label, rule, rep_ms in (("burst", burst, 25), ("sustained", sustained, 500)):
            torch.cuda.synchronize()
            clk0 = sm_mhz()
            ours = statistics.median(timer.measure("gemm", rule).samples["total_ms"])
            clk1 = sm_mhz()
            with torch.cuda.stream(stream.torch):
                ref = triton.testing.do_bench(lambda: torch.matmul(a, b, out=c), warmup=25, rep=rep_ms,
                                              return_mode="median")
            clk2 = sm_mhz()
            flushed = []
            cache = torch.empty(256 * 2**20, dtype=torch.int8, device="cuda")
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            with torch.cuda.stream(stream.torch):
                for _ in range(30):
                    cache.zero_()
                    e0.record()
                    torch.matmul(a, b, out=c)
                    e1.record()
                    e1.synchronize()
                    flushed.append(e0.elapsed_time(e1))
            row[label] = {"c3prof_ms": ours, "do_bench_ms": ref, "ratio": ours / ref, "do_bench_rep_ms": rep_ms,
                          "c3prof_flushed_ms": statistics.median(flushed),
                          "flushed_ratio": statistics.median(flushed) / ref,
                          "c3prof_tflops": spec.flops / ours / 1e9, "sm_mhz_before": clk0,
                          "sm_mhz_after_c3prof": clk1, "sm_mhz_after_do_bench": clk2}
        rows.append(row)
        g.close()
    print(f"{'shape':>16s} {'mode':>9s} {'c3prof ms':>10s} {'do_bench ms':>11s} {'ratio':>7s} {'flushed':>8s} "
          f"{'ratio':>7s} {'TFLOP/s':>8s} {'MHz':>14s}")
    for r in rows:
        for label in ("burst", "sustained"):
            x = r[label]
            print(f"{'x'.join(map(str, r['shape'])):>16s} {label:>9s} {x['c3prof_ms']:10.4f} {x['do_bench_ms']:11.4f} "
                  f"{x['ratio']:7.4f} {x['c3prof_flushed_ms']:8.4f} {x['flushed_ratio']:7.4f} {x['c3prof_tflops']:8.1f} {x['sm_mhz_after_c3prof']:>6}/{x['sm_mhz_after_do_bench']:<6}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "gpu": torch.cuda.get_device_name()}, f, indent=1)


if __name__ == "__main__":
    main()
