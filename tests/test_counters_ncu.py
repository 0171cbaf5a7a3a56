"""Counter sources without a GPU: ncu output parsing, metric choice, and a profiler that refuses."""

import gzip
import os
import stat

from c3prof.backends.cuda import counters as cuda_counters
from c3prof.backends.cuda import ncu
from c3prof.capture import counters
from c3prof.plan.model import PlanOptions
from c3prof.plan.strategies import plan_runs
from c3prof.scenarios import load_suite
from c3prof.trace import TraceWriter, read_trace

CSV = '''==PROF== Connected to process 123
"ID","Process ID","Process Name","Host Name","Context","Stream","lts__t_sectors.sum","lts__t_sectors_srcunit_tex.sum","dram__bytes_read.sum"
"","","","","","","sector","sector","byte"
"0","123","python3","h","1","7","1,000","250","4,096"
"1","123","python3","h","1","7","2000","0","n/a"
'''


def test_parse_csv_rows_units_and_thousands_separators():
    rows = ncu.parse_csv(CSV)
    assert len(rows) == 2
    assert rows[0]["lts__t_sectors"] == {"value": 1000.0, "unit": "sector"}
    assert rows[0]["dram__bytes_read"]["value"] == 4096.0
    assert rows[1]["dram__bytes_read"]["value"] is None
    d = ncu.derived(rows[0])
    assert d["l2_sectors_non_sm"] == 750 and d["l2_non_sm_share"] == 0.75


def test_choose_metrics_keeps_what_the_chip_offers():
    chosen, missing = ncu.choose_metrics({"lts__t_sectors", "dram__bytes_read"})
    assert chosen == ["lts__t_sectors.sum", "dram__bytes_read.sum"]
    assert "nvlrx__bytes.sum" in missing
    assert ncu.choose_metrics(None) == (list(ncu.METRICS), [])


class CountersHookOnly:
    """The CUDA bench's counters hook without a device (no GPU here): the real ncu-driving code of
    c3prof.backends.cuda.counters for an H100/H200-class chip (compute capability 9.0)."""

    backend_name, device, seed = "cuda", 0, 0

    def profile(self, source, job, note):
        return cuda_counters.profile(source, job, (9, 0), note)


def test_refused_profiler_is_recorded_and_capture_goes_on(tmp_path, monkeypatch):
    fake = tmp_path / "ncu"
    fake.write_text("#!/bin/sh\necho '==ERROR== ERR_NVGPUCTRPERM - The user does not have permission' >&2\nexit 1\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setattr(ncu, "ncu_path", lambda: str(fake))
    plans = plan_runs(load_suite("smoke")[:1], ("base",), PlanOptions(sm_count=132))
    w = TraceWriter(tmp_path / "t.jsonl", fsync=False)
    notes = []
    ok = counters.collect_profiled("ncu", plans, w, CountersHookOnly(), reps=3, phases=["gemm"],
                                   replay="app-range", note=notes.append)
    w.close()
    assert ok is False
    src = read_trace(tmp_path / "t.jsonl").counter_sources
    assert len(src) == 1 and src[0]["available"] is False and "ERR_NVGPUCTRPERM" in src[0]["reason"]
    assert any("ncu unavailable" in n and "continuing without it" in n for n in notes)


def test_missing_ncu_is_recorded(tmp_path, monkeypatch):
    monkeypatch.setattr(ncu, "ncu_path", lambda: None)
    w = TraceWriter(tmp_path / "t.jsonl", fsync=False)
    assert counters.collect_profiled("ncu", [], w, CountersHookOnly(), 3, ["gemm"], "app-range",
                                     note=lambda m: None) is False
    w.close()
    assert "not found" in read_trace(tmp_path / "t.jsonl").counter_sources[0]["reason"]


DATA = os.path.join(os.path.dirname(__file__), "data")


def test_parse_real_ncu_metrics_output():
    """ncu's raw CSV from the H200 capture of h200_counters.jsonl (24 phase ranges)."""
    with gzip.open(os.path.join(DATA, "h200_ncu_metrics_raw.csv.gz"), "rt") as f:
        rows = ncu.parse_csv(f.read())
    assert len(rows) == 24
    assert all(r["lts__t_sectors"]["value"] > 0 and r["lts__t_sectors"]["unit"] == "sector" for r in rows)


def test_parse_real_pm_sampling_output():
    """ncu --section PmSampling output from the H200: two concurrent-phase ranges (base: 3 repetitions
    of about 0.4 ms, sampled every 3 us; dma: 3 of about 5 ms, where ncu chose 6 us)."""
    with gzip.open(os.path.join(DATA, "h200_ncu_pmsampling_raw.csv.gz"), "rt") as f:
        ranges = ncu.parse_pm_series(f.read())
    assert len(ranges) == 2
    assert [r["interval_us"] for r in ranges] == [3.0, 6.0]
    for r in ranges:
        s = r["series"]
        assert set(ncu.PM_SERIES.values()) <= set(s)
        n = len(s["t_ms"])
        assert n > 100 and all(len(v) == n for v in s.values())
        assert s["t_ms"][1] == r["interval_us"] / 1e3
        assert max(s["dram_throughput_pct"]) > 50  # the transfer and the memory-bound GEMM load DRAM


def test_inaccessible_metrics_from_ncu_error():
    line = ("==ERROR== Unable to access the following 8 metrics: nvlrx__bytes.avg, nvlrx__bytes.max, "
            "nvltx__bytes.sum.")
    assert ncu.inaccessible_metrics("x\n" + line) == {"nvlrx__bytes", "nvltx__bytes"}


def test_recorded_h200_counters_show_copy_engine_traffic_bypasses_no_l2():
    """On the committed H200 capture: the DMA transfer's bytes all pass through L2, none from SMs."""
    path = os.path.join(os.path.dirname(__file__), "data", "h200_counters.jsonl")
    trace = read_trace(path)
    for run in trace.runs.values():
        comm = next(c for c in run.counters if c["phase"] == "comm" and c["source"] == "ncu")
        m = {k: v["value"] for k, v in comm["metrics"].items()}
        nbytes = run.scenario["comm"]["bytes"]
        reps = comm["reps"]
        if run.strategy == "dma":
            assert m["lts__t_sectors_srcunit_tex"] == 0 and m["sm__cycles_active_avg"] == 0
            # every transferred byte is one 32-byte-sector write into L2
            assert abs(m["lts__t_sectors"] - reps * nbytes / 32) <= 0.01 * reps * nbytes / 32
        else:
            assert m["lts__t_sectors_srcunit_tex"] > 0.5 * m["lts__t_sectors"]


def test_ncu_command_passes_collection_args_through():
    cmd = ncu.ncu_command("/x/ncu", ["--section", "PmSampling"], "/tmp/log.csv", "app-range", ["python3", "w.py"])
    i = cmd.index("--section")
    assert cmd[i + 1] == "PmSampling" and "--metrics" not in cmd
    assert cmd[cmd.index("--replay-mode") + 1] == "app-range" and cmd[-2:] == ["python3", "w.py"]


def test_perturbation_summary_on_recorded_h200_counters():
    """The report's perturbation figures, recomputed by hand from the committed H200 capture."""
    import statistics

    from c3prof.analysis.counters import perturbation_summary

    trace = read_trace(os.path.join(DATA, "h200_counters.jsonl"))
    rows = {r["source"]: r for r in perturbation_summary(trace.runs.values())}
    assert set(rows) == {"ncu", "pm_sampling"}
    for source, row in rows.items():
        vals = [c["perturbation"] for r in trace.runs.values() for c in r.counters if c["source"] == source]
        gemm = [c["perturbation"] for r in trace.runs.values() for c in r.counters
                if c["source"] == source and c["phase"] == "gemm"]
        assert row["n_records"] == len(vals) == 24
        assert row["median"] == statistics.median(vals) and row["gemm_median"] == statistics.median(gemm)
        assert row["gemm_within_goal"] == (abs(statistics.median(gemm) - 1) <= 0.02)
