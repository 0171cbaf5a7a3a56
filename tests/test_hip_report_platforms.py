"""A report over an NVIDIA and an AMD trace groups by platform and names each backend. The AMD
trace is SYNTHETIC: the bundled synthetic trace relabelled as a made-up MI300X, clearly named as
not measured. No AMD number here is a measurement."""

import json

from c3prof.analysis.dataset import load
from c3prof.cli import main
from c3prof.report.build import build_report
from c3prof.trace import backend_of, read_trace
from report_helpers import ROOT

H200 = ROOT / "tests" / "data" / "h200_smoke.jsonl"
SYNTHETIC = ROOT / "tests" / "data" / "synthetic_small.jsonl"
AMD_NAME = "SYNTHETIC AMD Instinct MI300X (not measured)"


def synthetic_amd_trace(tmp_path):
    out = tmp_path / "synthetic_mi300x.jsonl"
    lines = []
    for line in SYNTHETIC.read_text().splitlines():
        rec = json.loads(line)
        if rec["record"] == "header":
            rec["trace_id"] = "synthetic-mi300x-0001"
        if rec["record"] == "machine":
            rec["gpu"]["name"] = AMD_NAME
            rec["backend"] = "hip"
        lines.append(json.dumps(rec))
    out.write_text("\n".join(lines) + "\n")
    return out


def test_old_traces_read_as_cuda(tmp_path):
    assert backend_of(read_trace(H200).machine) == "cuda"            # written before the field existed
    assert backend_of(read_trace(synthetic_amd_trace(tmp_path)).machine) == "hip"
    assert backend_of({}) == "cuda"


def test_two_platforms_two_groups(tmp_path):
    amd = synthetic_amd_trace(tmp_path)
    ds = load([str(H200), str(amd)])
    assert [g.gpu_name for g in ds.groups] == [read_trace(H200).machine["gpu"]["name"], AMD_NAME]
    assert [g.backends for g in ds.groups] == [["cuda"], ["hip"]]
    rep = build_report(ds)
    machines = {m["platform"]: m["backend"] for m in rep["machine"]}
    assert machines[AMD_NAME] == "hip" and list(machines.values()).count("cuda") == 1
    platforms = {r["platform"] for r in rep["results"]}
    assert AMD_NAME in platforms and len(platforms) == 2
    # Each platform's rows are its own runs: nothing of one GPU is judged against the other's.
    for g in ds.groups:
        rows = {r["run"] for r in rep["results"] if r["platform"] == g.key}
        assert rows and rows <= set(g.runs)


def test_cli_table_and_figures_per_platform(tmp_path, capsys):
    amd = synthetic_amd_trace(tmp_path)
    figs = tmp_path / "fig"
    assert main(["report", str(H200), str(amd), "--figures", str(figs)]) == 0
    out = capsys.readouterr().out
    assert f"{AMD_NAME} (backend hip)" in out and "(backend cuda)" in out
    assert f"Results on {AMD_NAME}" in out
    names = [p.name for p in figs.iterdir()]
    assert any("synthetic-amd-instinct-mi300x" in n for n in names)   # one figure set per platform
