"""The SYNTHETIC Kineto fixtures (tests/data/synthetic_kineto_*.json[.gz]): builder and freshness test.

These traces are made by hand (by this builder), not recorded: they follow the Kineto Chrome-trace
format (field names and layout as libkineto writes them: ``ph``/``cat``/``name``/``pid``/``tid``/
``ts``/``dur``/``args``; kernel args ``External id``, ``device``, ``stream``, ``correlation``, ``grid``...;
memcpy args ``bytes``, ``memory bandwidth (GB/s)``; ``cuda_runtime`` launches with ``cbid`` and
``correlation``; ``cpu_op`` args ``Input Dims``/``Input type``; ``record_param_comms`` and NCCL kernel
args ``Collective name``, ``In msg nelems``, ``Out msg nelems``, ``Group size``, ``dtype``, ``Process
Group Name``; top-level ``distributedInfo``) with planned durations, so the tests know the answers.
Each file says so in its top-level ``c3prof_note``. Real traces recorded on an H200 with
tests/data/record_kineto_trace.py are named h200_kineto_* and are picked up by the tests when present.

Regenerate: ``python tests/test_ingest_fixture.py --write``.
"""

from __future__ import annotations

import gzip
import json
import sys
from dataclasses import dataclass
from pathlib import Path

DATA = Path(__file__).parent / "data"
NOTE = ("SYNTHETIC Kineto trace written by tests/test_ingest_fixture.py for c3prof ingest tests; "
        "hand-planned durations, not a measurement")

COMPUTE_STREAM, COMM_STREAM, COPY_STREAM = 7, 20, 24
PID = 41217

# Kernel and memcpy names as CUDA libraries and Kineto name them.
K_GEMM_A = "nvjet_tst_256x128_64x4_1x2_h_bz_coopA_NNT"
K_GEMM_B = ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_"
            "execute_segment_k_off_kernel__5x_cublas")
K_GEMM_C = "cutlass_80_wmma_tensorop_f16_s161616gemm_f16_32x32_128x2_tn_align8"
K_ALL_REDUCE = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
K_ALL_GATHER = "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
K_REDUCE_SCATTER = "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
K_FILL = ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<c10::BFloat16>, "
          "std::array<char*, 1ul> >(int, at::native::FillFunctor<c10::BFloat16>, std::array<char*, 1ul>)")
K_UNKNOWN = 'my_team_fused_kernel<"v2">'  # a name c3prof does not know, with an escaped quote
M_HTOD = "Memcpy HtoD (Pinned -> Device)"
M_DTOH = "Memcpy DtoH (Device -> Pinned)"
M_DTOD = "Memcpy DtoD (Device -> Device)"
M_SET = "Memset (Device)"

MiB = 1 << 20


@dataclass(frozen=True)
class OpKind:
    key: str
    kernel: str
    stream: int
    cpu_ops: tuple  # outermost first: (name, args)
    gpu_cat: str = "kernel"
    nbytes: int = 0
    collective_args_on_kernel: bool = False


def _comm_args(coll: str, n_in: int, n_out: int, group: int = 2, rank: int = 0) -> dict:
    return {"Collective name": coll, "dtype": "BFloat16", "In msg nelems": n_in, "Out msg nelems": n_out,
            "Group size": group, "In split size": "[]", "Out split size": "[]", "Global rank start": 0,
            "Global rank stride": 1, "Process Group Name": "0", "Process Group Description": "default_pg",
            "Process Group Ranks": "[0, 1]", "Rank": rank}


def op_kinds(rank: int) -> dict[str, OpKind]:
    bf = ["c10::BFloat16", "c10::BFloat16"]
    return {k.key: k for k in [
        OpKind("gemm_a", K_GEMM_A, COMPUTE_STREAM, (
            ("aten::mm", {"Input Dims": [[4096, 4096], [4096, 4096]], "Input type": bf,
                          "Input Strides": [[4096, 1], [1, 4096]], "Concrete Inputs": ["", ""]}),)),
        OpKind("gemm_b", K_GEMM_B, COMPUTE_STREAM, (
            ("aten::linear", {"Input Dims": [[4, 512, 8192], [8192, 8192], [8192]],
                              "Input type": bf + ["c10::BFloat16"], "Concrete Inputs": ["", "", ""]}),
            ("aten::addmm", {"Input Dims": [[8192], [2048, 8192], [8192, 8192], [], []],
                             "Input type": ["c10::BFloat16"] * 3 + ["Scalar", "Scalar"],
                             "Concrete Inputs": ["", "", "", "1", "1"]}))),
        OpKind("gemm_c", K_GEMM_C, COMPUTE_STREAM, (
            ("aten::bmm", {"Input Dims": [[8, 1024, 128], [8, 128, 1024]], "Input type": ["c10::Half", "c10::Half"],
                           "Concrete Inputs": ["", ""]}),)),
        OpKind("all_reduce", K_ALL_REDUCE, COMM_STREAM, (
            ("c10d::allreduce_", {"Input Dims": [[33554432]], "Input type": ["c10::BFloat16"]}),
            ("record_param_comms", _comm_args("allreduce", 33554432, 33554432, rank=rank))),
            collective_args_on_kernel=True),
        # Older torch: the NCCL kernel carries no collective args; they come from record_param_comms.
        OpKind("all_gather", K_ALL_GATHER, COMM_STREAM, (
            ("record_param_comms", _comm_args("_allgather_base", 16777216, 33554432, rank=rank)),)),
        OpKind("reduce_scatter", K_REDUCE_SCATTER, COMM_STREAM, (
            ("record_param_comms", _comm_args("_reduce_scatter_base", 33554432, 16777216, rank=rank)),),
            collective_args_on_kernel=True),
        OpKind("htod", M_HTOD, COPY_STREAM, (("aten::copy_", {"Input Dims": [[8388608], [8388608], []]}),),
               gpu_cat="gpu_memcpy", nbytes=16 * MiB),
        OpKind("dtoh", M_DTOH, COPY_STREAM, (("aten::copy_", {"Input Dims": [[8388608], [8388608], []]}),),
               gpu_cat="gpu_memcpy", nbytes=16 * MiB),
        OpKind("dtod", M_DTOD, COMPUTE_STREAM, (("aten::copy_", {"Input Dims": [[4194304], [4194304], []]}),),
               gpu_cat="gpu_memcpy", nbytes=8 * MiB),
        OpKind("memset", M_SET, COMPUTE_STREAM, (("aten::zero_", {"Input Dims": [[1024]]}),),
               gpu_cat="gpu_memset", nbytes=4096),
        OpKind("fill", K_FILL, COMPUTE_STREAM, (("aten::fill_", {"Input Dims": [[4096, 4096], []]}),)),
        OpKind("unknown", K_UNKNOWN, COMPUTE_STREAM, (("my_team::fused", {}),)),
    ]}


# The plan: alone instances (durations in us, medians exact) and overlapped pairs launched together
# (or with an offset). Expected results in tests follow from these numbers.
ALONE = {
    "gemm_a": [198, 199, 200, 201, 202],
    "gemm_b": [398, 399, 400, 401, 402],
    "gemm_c": [30, 31, 29, 30],
    "all_reduce": [348, 349, 350, 351, 352],
    "all_gather": [299, 300, 301],
    "reduce_scatter": [349, 351],
    "htod": [304, 305, 306],
    "dtoh": [305, 305, 305],
    "dtod": [4, 4],
    "memset": [2],
    "fill": [10, 10, 10],
    "unknown": [50, 51],
}
# (gemm, comm, gemm durations, comm durations, comm start offset after the GEMM's start)
OVERLAPPED = [
    ("gemm_a", "all_reduce", [230] * 6, [420] * 6, 0),
    ("gemm_b", "htod", [403, 404, 405], [305, 305, 305], 0),
    ("gemm_b", "all_gather", [459, 460, 461, 460], [390, 390, 390, 390], 0),
    ("gemm_b", "reduce_scatter", [440, 440, 440], [380, 380, 380], 0),
    ("gemm_a", "dtoh", [201, 200, 199], [305, 305, 305], 150),
]
GAP_US = 20


class _Writer:
    """Emits events in the layout libkineto uses (one event per block, keys in Kineto's order)."""

    def __init__(self, rank: int):
        self.rank = rank
        self.events: list[dict] = []
        self.next_ext = 100 + 1000 * rank
        self.next_corr = 5000 + 1000 * rank
        self.t_ns = (5_663_374_598_000_000 + rank * 1_234_567) * 1000 // 1000

    def cpu_launch(self, kind: OpKind, at_ns: int) -> tuple[int, int]:
        """CPU ops (nested), the runtime launch, the flow arrows: returns (External id, correlation)."""
        depth = len(kind.cpu_ops)
        ext = 0
        for i, (name, args) in enumerate(kind.cpu_ops):
            ext = self.next_ext
            self.next_ext += 1
            start = at_ns + 1000 * i
            dur = 8000 - 2000 * i
            self.events.append({"ph": "X", "cat": "cpu_op", "name": name, "pid": PID, "tid": PID,
                                "ts": start, "dur": dur,
                                "args": {"External id": ext, "Record function id": 0, "Ev Idx": ext - 100,
                                         **args}})
        corr = self.next_corr
        self.next_corr += 1
        launch_at = at_ns + 1000 * depth + 500
        runtime = "cudaMemcpyAsync" if kind.gpu_cat == "gpu_memcpy" else (
            "cudaMemsetAsync" if kind.gpu_cat == "gpu_memset" else "cudaLaunchKernel")
        cbid = {"cudaMemcpyAsync": 41, "cudaMemsetAsync": 51, "cudaLaunchKernel": 211}[runtime]
        self.events.append({"ph": "X", "cat": "cuda_runtime", "name": runtime, "pid": PID, "tid": PID,
                            "ts": launch_at, "dur": 3000, "args": {"External id": ext, "cbid": cbid,
                                                                   "correlation": corr}})
        self.events.append({"ph": "s", "id": corr, "pid": PID, "tid": PID, "ts": launch_at,
                            "cat": "ac2g", "name": "ac2g"})
        return ext, corr

    def gpu(self, kind: OpKind, start_ns: int, dur_us: float, ext: int, corr: int) -> None:
        args = {"External id": ext}
        if kind.gpu_cat == "kernel":
            args.update({"queued": 0, "device": 0, "context": 1, "stream": kind.stream, "correlation": corr,
                         "registers per thread": 168, "shared memory": 213248, "blocks per SM": 0.984848,
                         "warps per SM": 11.818182, "grid": [130, 1, 1], "block": [384, 1, 1],
                         "est. achieved occupancy %": 0})
            if kind.collective_args_on_kernel:
                args.update(kind.cpu_ops[-1][1])
        else:
            bw = round(kind.nbytes / (dur_us * 1000), 6)
            args.update({"device": 0, "context": 1, "stream": kind.stream, "correlation": corr,
                         "bytes": kind.nbytes, "memory bandwidth (GB/s)": bw})
        self.events.append({"ph": "X", "cat": kind.gpu_cat, "name": kind.kernel, "pid": 0, "tid": kind.stream,
                            "ts": start_ns, "dur": int(round(dur_us * 1000)), "args": args})
        self.events.append({"ph": "f", "id": corr, "pid": 0, "tid": kind.stream, "ts": start_ns,
                            "cat": "ac2g", "name": "ac2g", "bp": "e"})


def build(rank: int) -> dict:
    kinds = op_kinds(rank)
    w = _Writer(rank)
    t0 = w.t_ns
    t = t0
    # rank 1 runs a little slower, so merged statistics are not copies of one rank
    scale = 1.0 if rank == 0 else 1.02
    step_events = []
    for key, durs in ALONE.items():
        for d in durs:
            ext, corr = w.cpu_launch(kinds[key], t)
            start = t + 10_000
            w.gpu(kinds[key], start, d * scale, ext, corr)
            t = start + int(d * scale * 1000) + GAP_US * 1000
    for g_key, c_key, g_durs, c_durs, offset in OVERLAPPED:
        for gd, cd in zip(g_durs, c_durs):
            ext_g, corr_g = w.cpu_launch(kinds[g_key], t)
            ext_c, corr_c = w.cpu_launch(kinds[c_key], t + 9_000)
            start = t + 12_000
            w.gpu(kinds[g_key], start, gd * scale, ext_g, corr_g)
            w.gpu(kinds[c_key], start + offset * 1000, cd * scale, ext_c, corr_c)
            end = max(start + int(gd * scale * 1000), start + offset * 1000 + int(cd * scale * 1000))
            t = end + GAP_US * 1000
    step_events.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": PID, "tid": PID,
                        "ts": t0 - 5000, "dur": t - t0 + 10_000, "args": {"External id": 1 + rank}})
    meta = [
        {"name": "process_name", "ph": "M", "ts": t0 - 10_000, "pid": PID, "tid": 0, "args": {"name": "python3"}},
        {"name": "process_name", "ph": "M", "ts": t0 - 10_000, "pid": 0, "tid": 0, "args": {"name": "python3"}},
        {"name": "process_labels", "ph": "M", "ts": t0 - 10_000, "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}},
        {"name": "thread_name", "ph": "M", "ts": t0 - 10_000, "pid": 0, "tid": COMPUTE_STREAM,
         "args": {"name": f"stream {COMPUTE_STREAM} "}},
    ]
    trailer = [{"name": "Record Window End", "ph": "i", "s": "g", "pid": "", "tid": "", "ts": t + 50_000}]
    events = meta + step_events + w.events + trailer
    return {
        "schemaVersion": 1,
        "c3prof_note": NOTE,
        "deviceProperties": [{"id": 0, "name": "NVIDIA H200", "totalGlobalMem": 150110011392, "computeMajor": 9,
                              "computeMinor": 0, "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,
                              "regsPerBlock": 65536, "warpSize": 32, "sharedMemPerBlock": 49152,
                              "numSms": 132, "sharedMemPerMultiprocessor": 233472}],
        "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 2, "pg_count": 1,
                            "pg_config": [{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:nccl",
                                           "pg_size": 2, "ranks": [0, 1]}], "nccl_version": "2.28.9"},
        "cupti_version": 26, "cuda_runtime_version": 13000, "cuda_driver_version": 13000,
        "record_shapes": 1, "with_stack": 0, "profile_memory": 0,
        "trace_id": f"SYNTHETIC{rank:02d}",
        "displayTimeUnit": "ms",
        "baseTimeNanoseconds": 1764400000000000000,
        "traceEvents": events,
        "traceName": f"synthetic_kineto_rank{rank}.json",
    }


def _fmt_value(key: str, value) -> str:
    if key in ("ts", "dur") and isinstance(value, int):
        return f"{value // 1000}.{value % 1000:03d}"  # Kineto: microseconds with 3 decimals
    return json.dumps(value)


def dumps(doc: dict) -> str:
    """Serialize like libkineto's ChromeTraceLogger: header keys, then one indented block per event."""
    lines = ["{"]
    for key, value in doc.items():
        if key == "traceEvents":
            lines.append('  "traceEvents": [')
            blocks = []
            for ev in doc["traceEvents"]:
                head = ", ".join(f'"{k}": {_fmt_value(k, v)}' for k, v in ev.items() if k != "args")
                if "args" in ev:
                    args = ",\n".join(f'      "{k}": {json.dumps(v)}' for k, v in ev["args"].items())
                    blocks.append("  {\n    " + head + ",\n    \"args\": {\n" + args + "\n    }\n  }")
                else:
                    blocks.append("  {\n    " + head + "\n  }")
            lines.append(",\n".join(blocks))
            lines.append("  ],")
        else:
            lines.append(f'  "{key}": {json.dumps(value)},')
    lines[-1] = lines[-1].rstrip(",")
    lines.append("}")
    return "\n".join(lines) + "\n"


FIXTURES = {"synthetic_kineto_rank0.json": 0, "synthetic_kineto_rank1.json.gz": 1}


def fixture_bytes(name: str) -> bytes:
    text = dumps(build(FIXTURES[name])).encode()
    if name.endswith(".gz"):
        return gzip.compress(text, compresslevel=9, mtime=0)
    return text


def write_fixtures(directory: Path = DATA) -> list[Path]:
    paths = []
    for name in FIXTURES:
        p = directory / name
        p.write_bytes(fixture_bytes(name))
        paths.append(p)
    return paths


def test_committed_fixtures_match_the_builder():
    for name in FIXTURES:
        assert (DATA / name).read_bytes() == fixture_bytes(name), f"regenerate: python {__file__} --write"


def test_fixtures_are_valid_json_and_say_they_are_synthetic():
    for name in FIXTURES:
        raw = fixture_bytes(name)
        doc = json.loads(gzip.decompress(raw) if name.endswith(".gz") else raw)
        assert doc["c3prof_note"].startswith("SYNTHETIC")
        assert doc["distributedInfo"]["rank"] == FIXTURES[name]


if __name__ == "__main__":
    if "--write" in sys.argv:
        for p in write_fixtures():
            print(f"wrote {p} ({p.stat().st_size} bytes)")
    else:
        print(__doc__)
