"""`c3prof report` outputs: terminal table, JSON (schema), CSV, figures (PNG+PDF on request), Perfetto trace."""

import csv
import json
from collections import defaultdict

import pytest
from report_helpers import SYNTHETIC, med, run_cli

from c3prof.cli import main
from c3prof.report.schema import check_report


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    proc = run_cli(str(SYNTHETIC), "--json", str(out / "r.json"), "--csv", str(out / "csv"),
                   "--figures", str(out / "fig"), "--figure-formats", "png,pdf", "--perfetto", str(out / "p.json"))
    assert proc.returncode == 0, proc.stderr
    return out, proc


def test_terminal_report_sections(outputs):
    _, proc = outputs
    text = proc.stdout
    for needle in ("Results on SYNTHETIC", "Per strategy on", "oracle", "Falsification", "Rules", "ALERTS",
                   "Incomplete runs", "mb64-x-256M/rp/sm96", "Error records", "CUDA out of memory",
                   "validation FAILED", "ce_d2d_local", "G-long if T_g > 1.15"):
        assert needle in text, needle


def test_json_schema_and_required_fields(outputs):
    out, _ = outputs
    rep = json.loads((out / "r.json").read_text())
    assert check_report(rep) == []
    # The fields the brief names, checked independently of the schema module.
    for key in ("results", "falsification", "strategies", "machine", "rules", "incomplete"):
        assert key in rep
    for r in rep["results"]:
        for key in ("scenario", "strategy", "variant", "taxonomy", "ideal_speedup", "realized_speedup",
                    "fraction_of_ideal", "fraction_ci", "gemm_slowdown", "gemm_slowdown_ci", "comm_slowdown",
                    "comm_slowdown_ci", "n_reps"):
            assert key in r
        assert r["fraction_ci"] is None or len(r["fraction_ci"]) == 2
    for f in rep["falsification"]:
        for key in ("gemm", "transfer", "slowdown", "slowdown_ci", "verdict"):
            assert key in f
    row = next(r for r in rep["results"] if r["run"] == "cb4k-x-32M/sp/gemm_first")
    base = "cb4k-x-32M/base/default"
    ideal = med(SYNTHETIC, base, "serial") / max(med(SYNTHETIC, base, "gemm"), med(SYNTHETIC, base, "comm"))
    realized = med(SYNTHETIC, base, "serial") / med(SYNTHETIC, row["run"], "concurrent")
    assert row["fraction_of_ideal"] == pytest.approx((realized - 1) / (ideal - 1), rel=1e-12)
    assert row["default_variant"] is False
    assert [i["run"] for i in rep["incomplete"]] == ["mb64-x-256M/rp/sm96"]
    assert rep["validation"]["failures"][0]["run"] == "mb64-x-256M/dma/ce_peer"
    assert rep["errors"][0]["message"] == "CUDA out of memory (synthetic)"


def test_strategy_summary(outputs):
    out, _ = outputs
    rep = json.loads((out / "r.json").read_text())
    rows = defaultdict(list)
    for s in rep["strategies"]:
        rows[s["strategy"]].append(s)
    assert set(rows) == {"base", "sp", "rp", "dma"}
    sp = {(s["selection"], s["variant"]): s for s in rows["sp"]}
    assert set(sp) == {("default", "comm_first"), ("variant", "comm_first"), ("variant", "gemm_first"),
                       ("best_per_scenario", None)}
    assert sp[("best_per_scenario", None)]["oracle"] is True
    # The default mean is the plain mean of the default variant's per-scenario fractions.
    fr = [r["fraction_of_ideal"] for r in rep["results"] if r["strategy"] == "sp" and r["variant"] == "comm_first"]
    assert sp[("default", "comm_first")]["mean_fraction_of_ideal"] == pytest.approx(sum(fr) / len(fr))
    best = {}
    for r in rep["results"]:
        if r["strategy"] == "sp":
            best[r["scenario"]] = max(best.get(r["scenario"], -1e9), r["fraction_of_ideal"])
    assert sp[("best_per_scenario", None)]["mean_fraction_of_ideal"] == pytest.approx(sum(best.values()) / len(best))
    for s in rep["strategies"]:
        ci = s["mean_fraction_ci"]
        assert ci is None or ci[0] <= s["mean_fraction_of_ideal"] <= ci[1]


def test_csv_tables(outputs):
    out, _ = outputs
    rep = json.loads((out / "r.json").read_text())
    for name, key in (("results.csv", "results"), ("strategies.csv", "strategies"),
                      ("falsification.csv", "falsification"), ("incomplete.csv", "incomplete"),
                      ("errors.csv", "errors"), ("alerts.csv", "alerts")):
        with open(out / "csv" / name, newline="") as f:
            rows = list(csv.DictReader(f))
        assert len(rows) == len(rep[key]), name
    with open(out / "csv" / "results.csv", newline="") as f:
        row = next(r for r in csv.DictReader(f) if r["scenario"] == "cb4k-x-32M" and r["strategy"] == "base")
    assert float(row["fraction_of_ideal_lo"]) <= float(row["fraction_of_ideal"]) <= float(row["fraction_of_ideal_hi"])
    # The strategy means carry their suite, repeat and joint repeat intervals too.
    with open(out / "csv" / "strategies.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    checked = 0
    for row, s in zip(rows, rep["strategies"]):
        for key, stem in (("mean_fraction_ci_suite", "suite"), ("mean_fraction_pi_repeat", "repeat"),
                          ("mean_fraction_pi_repeat_all", "repeat_all")):
            if s.get(key):
                assert [float(row[f"{stem}_lo"]), float(row[f"{stem}_hi"])] == pytest.approx(s[key])
                checked += 1
            else:
                assert row[f"{stem}_lo"] == row[f"{stem}_hi"] == ""
    assert checked >= 3


def test_figures_png_and_pdf(outputs):
    out, _ = outputs
    for name in ("fraction_of_ideal", "slowdowns", "falsification", "timeline"):
        png, pdf = out / "fig" / f"{name}.png", out / "fig" / f"{name}.pdf"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert pdf.read_bytes()[:5] == b"%PDF-"


def test_perfetto_trace(outputs):
    out, _ = outputs
    trace = json.loads((out / "p.json").read_text())
    events = trace["traceEvents"]
    names = {e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert {"GEMM stream", "communication: copy engine (DMA)", "communication stream (SM kernels)"} <= names
    assert any(e["ph"] == "C" and "lts__t_sectors" in e["name"] for e in events)
    xs = [e for e in events if e["ph"] == "X"]
    assert xs and all(e["dur"] >= 0 and e["ts"] >= 0 for e in xs)
    # Slices on one track must nest or be disjoint, or trace viewers drop them.
    tracks = defaultdict(list)
    for e in xs:
        tracks[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"]))
    for spans in tracks.values():
        stack = []
        for start, end in sorted(spans, key=lambda s: (s[0], -s[1])):
            while stack and stack[-1] <= start:
                stack.pop()
            assert not stack or end <= stack[-1] + 1e-3
            stack.append(end)


def test_json_to_stdout_and_strict(capsys):
    assert main(["report", str(SYNTHETIC), "--json", "-"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["schema"] == "c3prof-report"
    assert main(["report", str(SYNTHETIC), "--quiet", "--strict"]) == 1  # the synthetic trace has alerts


def test_report_is_reproducible(tmp_path):
    for name in ("a.json", "b.json"):
        assert main(["report", str(SYNTHETIC), "--json", str(tmp_path / name), "--quiet"]) == 0
    assert (tmp_path / "a.json").read_text() == (tmp_path / "b.json").read_text()


def test_settings_flow_into_the_report(tmp_path):
    p = tmp_path / "r.json"
    assert main(["report", str(SYNTHETIC), "--json", str(p), "--quiet", "--threshold", "3", "--resamples", "500",
                 "--confidence", "0.9", "--seed", "1"]) == 0
    rep = json.loads(p.read_text())
    assert rep["settings"]["threshold"] == 3 and rep["settings"]["n_resamples"] == 500
    for r in rep["results"]:
        if r["reference"] == "base":
            base = f"{r['scenario']}/base/default"
            tg, tc = med(SYNTHETIC, base, "gemm"), med(SYNTHETIC, base, "comm")
            expected = "G-long" if tg > 3 * tc else "C-long" if tc > 3 * tg else "GC-equal"
            assert r["taxonomy"] == expected, r["run"]
    assert "3 * T_c" in " ".join(x["rule"] for x in rep["rules"])


def test_strategy_summary_figure_labels_the_suite_interval(monkeypatch, tmp_path):
    """Each row's label gives the interval for this suite beside the drawn one over scenarios."""
    from c3prof.figures import summary

    drawn = {}
    monkeypatch.setattr(summary, "save", lambda fig, outdir, name, formats: drawn.setdefault("fig", fig) and [])
    row = {"platform": "P", "strategy": "sp", "selection": "default", "mean_fraction_of_ideal": 0.449,
           "mean_fraction_ci": [0.265, 0.636], "mean_fraction_ci_suite": [0.446, 0.451], "n_scenarios": 15}
    report = {"strategies": [row], "settings": {"confidence": 0.95, "min_ideal": 1.05}}
    summary.plot(report, "P", tmp_path)
    texts = [t.get_text() for t in drawn["fig"].axes[0].texts]
    assert texts == ["44.9% (n=15; this suite 44.6% to 45.1%)"]


@pytest.mark.parametrize("names", [["h200_default_proc_p.jsonl"], ["h200_interference.jsonl"],
                                   ["h200x2_llama70b.rank0.jsonl", "h200x2_llama70b.rank1.jsonl"]], ids=lambda n: n[0])
def test_the_default_terminal_report_fits_100_columns_uncut(names, monkeypatch, capsys):
    """Off a terminal the report is laid out for $COLUMNS (100 here): no line is longer, and no cell
    is cut short (rich marks a cut cell with an ellipsis)."""
    from report_helpers import DATA
    monkeypatch.setenv("COLUMNS", "100")
    assert main(["report", *(str(DATA / name) for name in names)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines and max(len(line) for line in lines) <= 100
    assert not [line for line in lines if "\u2026" in line]
    assert not [line for line in lines if "not shown" in line]   # --max-rows's default cuts no shipped suite


def test_long_scenario_names_break_after_their_hyphens(monkeypatch, capsys):
    """The compact table's scenario column is 16 wide at 100 columns: a longer name is broken after a
    hyphen (llama70b-fsdp- / param-prefetch), never cut mid-word as rich's folding did."""
    from report_helpers import DATA

    from c3prof.console import wrap_name

    assert wrap_name("llama70b-fsdp-param-prefetch", 16) == "llama70b-fsdp-\nparam-prefetch"
    assert wrap_name("smoke-cb2k-x-4M", 16) == "smoke-cb2k-x-4M"
    # ingested names break after underscores; a part longer than the column where it must
    assert wrap_name("layer3_reduce_scatter", 16) == "layer3_reduce_\nscatter"
    assert wrap_name("a" * 20 + "-b", 16) == "a" * 16 + "\n" + "aaaa-b"
    monkeypatch.setenv("COLUMNS", "100")
    assert main(["report", str(DATA / "h200_default_proc2_t.jsonl")]) == 0
    cells = [line[:17].strip() for line in capsys.readouterr().out.splitlines()]
    assert "llama70b-fsdp-" in cells and "param-prefetch" in cells


def test_max_rows_shows_the_first_scenarios_whole_and_counts_the_rest(monkeypatch, capsys, tmp_path):
    """A large input's terminal tables show their first --max-rows entries and say how many more
    --json holds: on the measured interference capture (36 scenarios, 36 experiments, 36 arms), the
    first 5 scenarios with every one of their rows, in the JSON's order."""
    from report_helpers import DATA
    monkeypatch.setenv("COLUMNS", "100")
    trace = str(DATA / "h200_interference.jsonl")
    assert main(["report", trace, "--max-rows", "5", "--json", str(tmp_path / "r.json")]) == 0
    text = capsys.readouterr().out
    rep = json.loads((tmp_path / "r.json").read_text())
    order = list(dict.fromkeys(r["scenario"] for r in rep["results"]))
    assert len(order) == 36 and len(rep["falsification"]) == 36
    results = text[text.index("Results on"):text.index("real. = realized speedup")]
    named = [line[:19].strip() for line in results.splitlines() if line[:19].strip()]
    assert [n for n in named if n in order] == order[:5]
    rows = [line for line in results.splitlines() if "/default" in line]
    assert len(rows) == sum(r["scenario"] in order[:5] for r in rep["results"])
    assert "... 31 more scenarios not shown (--max-rows N shows more; --json has them all)" in text
    falsification = text[text.index("Falsification:"):text.index("more experiments")]
    assert len([line for line in falsification.splitlines() if line.rstrip().endswith(("refuted", "holds"))]) == 5
    assert "... 31 more experiments not shown" in text and "... 31 more arms not shown" in text
    assert len(text.split("Premise '")) - 1 == 5   # one evidence line per experiment shown
    # every row, with a limit above the sizes
    assert main(["report", trace, "--max-rows", "36"]) == 0
    whole = capsys.readouterr().out
    assert "not shown" not in whole and all(name in whole for name in order)
