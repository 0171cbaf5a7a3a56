

def test_strategy_means_leave_out_scenarios_with_too_little_to_gain(tmp_path):
    """On the real H200 taxonomy capture: every scenario in a strategy mean has ideal >= 1.05, and each
    one left out is listed with the reason."""
    import json
    import os

    from c3prof.cli import main

    out = tmp_path / "r.json"
    trace = os.path.join(os.path.dirname(__file__), "data", "h200_taxonomy.jsonl")
    assert main(["report", trace, "--quiet", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    ideal = {(r["scenario"], r["strategy"], r["variant"]): r["ideal_speedup"] for r in report["results"]}
    for row in report["strategies"]:
        if row["selection"] != "default":
            continue
        for name in row["scenarios"]:
            assert ideal[(name, row["strategy"], row["variant"])] >= 1.05
        small = [e for e in row["excluded"] if "too little to gain" in e["reason"]]
        assert all(ideal[(e["scenario"], row["strategy"], e["variant"])] < 1.05 for e in small)
        assert row["n_scenarios"] + len(row["excluded"]) == 15
