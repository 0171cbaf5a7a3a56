"""Probe the single-GPU links and GEMM durations that the default suite is sized from (device only).

For each link (PCIe host->device, device->host, both at once; HBM inside the device) it measures
the transfer rate of each carrier that can move those bytes: SM copy kernels (zero-copy reads or
writes of pinned, mapped host memory for PCIe; a device copy for HBM) over a sweep of CTA counts,
and the copy engine (cudaMemcpyAsync through torch). Every transfer is checked byte for byte once.
It also times the GEMM shapes the suites use. Output: one JSON document.

    python3 benchmarks/probe_links.py --json out/probe_links.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys

import torch
import triton
import triton.language as tl

MiB = 2**20


@triton.jit
def _copy(src, dst, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    step = tl.num_programs(0) * BLOCK
    for start in range(pid * BLOCK, n, step):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(dst + offs, tl.load(src + offs, mask=mask), mask=mask)


def sm_copy(src, dst, ctas, stream):
    with torch.cuda.stream(stream):
        _copy[(ctas,)](src.view(torch.int32), dst.view(torch.int32), src.numel() // 4, BLOCK=4096, num_warps=8)


def timed(fn, reps=10, warmup=2):
    s = torch.cuda.current_stream()
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(s)
        fn()
        b.record(s)
        b.synchronize()
        out.append(a.elapsed_time(b))
    return statistics.median(out)


def buffers(nbytes, where_src, where_dst):
    def make(where):
        if where == "host":
            return torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
        return torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    src, dst = make(where_src), make(where_dst)
    src.copy_(torch.randint(0, 256, (nbytes,), dtype=torch.uint8))
    return src, dst


def check(src, dst):
    dst_cpu = dst.cpu() if dst.is_cuda else dst
    src_cpu = src.cpu() if src.is_cuda else src
    return bool(torch.equal(dst_cpu, src_cpu))


def probe_link(name, where_src, where_dst, sizes, ctas_list):
    rows = []
    s1 = torch.cuda.Stream()
    for nbytes in sizes:
        src, dst = buffers(nbytes, where_src, where_dst)
        for ctas in ctas_list:
            dst.zero_() if dst.is_cuda else dst.fill_(0)
            ms = timed(lambda src=src, dst=dst, ctas=ctas: sm_copy(src, dst, ctas, s1)
                       or torch.cuda.current_stream().wait_stream(s1))
            torch.cuda.synchronize()
            rows.append({"link": name, "carrier": "sm", "ctas": ctas, "bytes": nbytes, "ms": ms,
                         "gbps": nbytes / ms / 1e6, "byte_exact": check(src, dst)})
        dst.zero_() if dst.is_cuda else dst.fill_(0)
        ms = timed(lambda src=src, dst=dst: dst.copy_(src, non_blocking=True))
        torch.cuda.synchronize()
        rows.append({"link": name, "carrier": "copy_engine_api", "ctas": 0, "bytes": nbytes, "ms": ms,
                     "gbps": nbytes / ms / 1e6, "byte_exact": check(src, dst)})
        del src, dst
    return rows


def probe_bidir(nbytes, ctas):
    h_src, d_dst = buffers(nbytes, "host", "device")
    d_src, h_dst = buffers(nbytes, "device", "host")
    s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
    cur = torch.cuda.current_stream()

    def both(fn):
        def go():
            s1.wait_stream(cur)
            s2.wait_stream(cur)
            fn(s1, s2)
            cur.wait_stream(s1)
            cur.wait_stream(s2)
        return go

    def sm(a, b):
        sm_copy(h_src, d_dst, ctas, a)
        sm_copy(d_src, h_dst, ctas, b)

    def ce(a, b):
        with torch.cuda.stream(a):
            d_dst.copy_(h_src, non_blocking=True)
        with torch.cuda.stream(b):
            h_dst.copy_(d_src, non_blocking=True)

    out = []
    for carrier, fn in (("sm", sm), ("copy_engine_api", ce)):
        ms = timed(both(fn))
        torch.cuda.synchronize()
        out.append({"link": "pcie_bidir", "carrier": carrier, "ctas": ctas if carrier == "sm" else 0,
                    "bytes_each_way": nbytes, "ms": ms, "gbps_total": 2 * nbytes / ms / 1e6,
                    "byte_exact": check(h_src, d_dst) and check(d_src, h_dst)})
    return out


GEMMS = [
    # (label, m, n, k)
    ("cb8k", 8192, 8192, 8192), ("cb4k", 4096, 4096, 4096),
    ("mb64", 64, 16384, 16384), ("mb16", 16, 16384, 16384), ("mb256", 256, 16384, 16384),
    # LLaMA-3 8B (hidden 4096, MLP 14336, 32 q heads / 8 kv heads of 128: qkv out 6144)
    ("l8b_prefill_qkv_4k", 4096, 6144, 4096), ("l8b_prefill_up_4k", 4096, 14336, 4096),
    ("l8b_prefill_down_4k", 4096, 4096, 14336), ("l8b_decode_up_b64", 64, 14336, 4096),
    ("l8b_train_up_8k", 8192, 14336, 4096),
    # LLaMA-3 70B (hidden 8192, MLP 28672, 64 q heads / 8 kv heads: qkv out 10240)
    ("l70b_prefill_qkv_4k", 4096, 10240, 8192), ("l70b_prefill_up_4k", 4096, 28672, 8192),
    ("l70b_prefill_down_4k", 4096, 8192, 28672), ("l70b_decode_up_b64", 64, 28672, 8192),
    ("l70b_decode_qkv_b64", 64, 10240, 8192), ("l70b_train_up_8k", 8192, 28672, 8192),
]


def probe_gemms():
    out = []
    for label, m, n, k in GEMMS:
        sets = [(torch.randn(m, k, dtype=torch.bfloat16, device="cuda"),
                 torch.randn(k, n, dtype=torch.bfloat16, device="cuda")) for _ in range(3)]
        i = [0]

        def run(sets=sets, i=i):
            a, b = sets[i[0] % 3]
            i[0] += 1
            torch.matmul(a, b)
        ms = timed(run, reps=15, warmup=3)
        out.append({"gemm": label, "m": m, "n": n, "k": k, "ms": ms, "tflops": 2 * m * n * k / ms / 1e9})
        del sets
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", required=True)
    a = p.parse_args(argv)
    torch.cuda.init()
    res = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "triton": triton.__version__}
    sizes = [64 * 1024, MiB, 16 * MiB, 256 * MiB]
    ctas = [4, 8, 16, 32, 132]
    res["links"] = (probe_link("pcie_h2d", "host", "device", sizes, ctas)
                    + probe_link("pcie_d2h", "device", "host", sizes, ctas)
                    + probe_link("hbm", "device", "device", [MiB, 256 * MiB], [16, 132, 264]))
    res["bidir"] = probe_bidir(256 * MiB, 16) + probe_bidir(256 * MiB, 8)
    res["gemms"] = probe_gemms()
    with open(a.json, "w") as f:
        json.dump(res, f, indent=1)
    for r in res["links"]:
        print(f"{r['link']:9s} {r['carrier']:16s} ctas={r['ctas']:4d} {r['bytes'] / MiB:8.3f} MiB "
              f"{r['ms']:8.4f} ms {r['gbps']:8.1f} GB/s exact={r['byte_exact']}")
    for r in res["bidir"]:
        print(f"{r['link']:10s} {r['carrier']:16s} ctas={r['ctas']:3d} {r['ms']:8.3f} ms {r['gbps_total']:7.1f} GB/s "
              f"exact={r['byte_exact']}")
    for r in res["gemms"]:
        print(f"{r['gemm']:22s} {r['m']:5d}x{r['n']:5d}x{r['k']:5d} {r['ms']:8.4f} ms {r['tflops']:6.0f} TFLOP/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
