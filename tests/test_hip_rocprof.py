"""rocprofv3 output parsing (c3prof/backends/hip/rocprof.py) on REAL rocprofv3 files
(tests/data/rocprof/README.md gives their sources), and the counter arithmetic on rows named
SYNTHETIC below. No AMD GPU and no rocprofv3 are needed."""

from pathlib import Path

import pytest

from c3prof.backends.hip import counters, rocprof

DATA = Path(__file__).parent / "data" / "rocprof"
DOCS = DATA / "rocprofiler_sdk_docs_counter_collection.csv"
HIPKITTENS = DATA / "hipkittens_ds_read_b64_lds_conflict_counter_collection.csv"
COPIES = DATA / "rocprofiler_sdk_docs_memory_copy_trace.csv"


def test_amd_docs_sample():
    ds = rocprof.parse_counter_collection(DOCS.read_text(), DOCS.name)
    assert [d.dispatch_id for d in ds] == [1, 2, 3, 4]
    assert ds[0].kernel == "void addition_kernel<float>(float*, float const*, float const*, int, int)"
    assert ds[3].kernel.startswith("divide_kernel(")
    assert all(d.counters == {"SQ_WAVES": 16384.0} for d in ds)
    assert (ds[0].start_ns, ds[0].end_ns) == (3200098838431081, 3200098838483232)
    assert ds[0].agent == "Agent 1"


def test_real_capture_two_counters_per_dispatch():
    ds = rocprof.parse_counter_collection(HIPKITTENS.read_text(), HIPKITTENS.name)
    assert len(ds) == 71                                   # 142 rows: two counters for each dispatch
    assert all(set(d.counters) == {"SQ_INSTS_LDS", "SQ_LDS_BANK_CONFLICT"} for d in ds)
    assert sum(d.kernel == "__amd_rocclr_copyBuffer" for d in ds) == 68   # ROCm's blit copy kernel
    assert all(d.start_ns < d.end_ns for d in ds)
    assert [d.dispatch_id for d in ds] == sorted(d.dispatch_id for d in ds)
    tk = [d for d in ds if d.kernel == "micro_tk(micro_globals)"]
    assert len(tk) == 1 and tk[0].counters["SQ_INSTS_LDS"] > 0       # the kernel under study does LDS work


def test_dispatches_go_to_the_window_they_start_in():
    ds = rocprof.parse_counter_collection(DOCS.read_text())
    windows = [(3200098838431081, 3200098838600000), (3200098838700000, 3200098838900000)]
    per = rocprof.assign_to_windows(ds, windows)
    assert [[d.dispatch_id for d in w] for w in per] == [[1, 2], [3, 4]]
    assert rocprof.totals(per[0]) == {"SQ_WAVES": 32768.0}
    assert rocprof.assign_to_windows(ds, [(0, 1)]) == [[]]          # outside every window: no range


def test_metrics_map_onto_the_cuda_fields():
    # SYNTHETIC counter totals (written here, not measured): 100 read requests of which 40 were 32 B,
    # 10 write requests of which 4 were 64 B, 300 hits and 100 misses.
    total = {"TCC_EA0_RDREQ_sum": 100, "TCC_EA0_RDREQ_32B_sum": 40, "TCC_EA0_WRREQ_sum": 10,
             "TCC_EA0_WRREQ_64B_sum": 4, "TCC_HIT_sum": 300, "TCC_MISS_sum": 100}
    m = rocprof.metrics(total, n_dispatches=3)
    assert m["dram__bytes_read"] == {"value": 40 * 32 + 60 * 64, "unit": "byte"}
    assert m["dram__bytes_write"] == {"value": 4 * 64 + 6 * 32, "unit": "byte"}
    assert m["l2_hit_rate"]["value"] == 0.75
    assert m["dispatches"]["value"] == 3 and m["TCC_HIT_sum"]["value"] == 300
    # Without the size split there are no bytes: never a guessed request size.
    assert "dram__bytes_read" not in rocprof.metrics({"TCC_EA0_RDREQ_sum": 5}, 1)


def test_memory_copy_trace():
    copies = rocprof.parse_memory_copy_trace(COPIES.read_text())
    assert [c["direction"] for c in copies] == ["host_to_device"] * 4
    assert copies[0]["duration_ns"] == 2414192684710679 - 2414192684609085


@pytest.mark.parametrize("text,match", [
    ("a,b\n1,2\n", "missing columns Dispatch_Id"),
    ('"Dispatch_Id","Kernel_Name","Counter_Name","Counter_Value"\n1,"k","SQ_WAVES",oops\n', ":2: bad number"),
])
def test_bad_files_name_the_problem(text, match):
    with pytest.raises(ValueError, match=match):
        rocprof.parse_counter_collection(text, "x.csv")


def test_command_and_ranges_file(tmp_path):
    cmd = rocprof.rocprofv3_command("/opt/rocm/bin/rocprofv3", ["TCC_HIT_sum"], "/tmp/o", ["python", "-m", "w"])
    assert cmd[:3] == ["/opt/rocm/bin/rocprofv3", "--pmc", "TCC_HIT_sum"] and cmd[-4:] == ["--", "python", "-m", "w"]
    path = tmp_path / "ranges.jsonl"
    counters.record_window(5, 9, environ={counters.RANGES_ENV: str(path)})
    counters.record_window(10, 20, environ={counters.RANGES_ENV: str(path)})
    assert path.read_text().splitlines() == ['{"start_ns": 5, "end_ns": 9}', '{"start_ns": 10, "end_ns": 20}']
    counters.record_window(1, 2, environ={})                # outside a profiled worker: nothing written


def test_missing_rocprofv3_is_one_record(monkeypatch):
    monkeypatch.setattr(counters, "rocprofv3_path", lambda: None)
    recs = counters.profile("rocprofv3", job=None, note=lambda s: None)
    assert len(recs) == 1 and recs[0]["available"] is False and "rocprofv3" in recs[0]["reason"]
    other = counters.profile("ncu", job=None, note=lambda s: None)
    assert other[0]["available"] is False and "not a HIP profiler source" in other[0]["reason"]
