"""The terminal report (rich): results per scenario x strategy x variant, the per-strategy summary,
the rules, falsification verdicts, and everything that went wrong (alerts, incomplete runs, errors).

Rendering only: every number comes from the report dict. A table that grows with the input (one row
per scenario, arm, run or error) shows its first ``max_rows`` entries and counts the rest.
"""

from __future__ import annotations

from rich.console import Console
from rich.panel import Panel
from rich.text import Text

from c3prof.console import (CLASS_SHORT, compact_table, make_console, number, percent, print_flags, print_left_out,
                            ratio, wrap_name)
from c3prof.row_limit import MAX_ROWS, first_rows
from c3prof.units import format_bytes, format_duration_us

VERDICT_STYLE = {"holds": "bold green", "refuted": "bold red", "inconclusive": "yellow",
                 "not enough data": "dim"}


def _counter(entry: dict | None, kind: str) -> str:
    """A counter summary: value, interval or '(1 meas.)' when it is a single measurement."""
    if not entry or entry.get("value") is None:
        return "-"
    v, ci = entry["value"], entry.get("ci")
    if kind == "%":
        text = percent(v, ci)
    else:
        text = ratio(v, ci)
    return text.replace(" [-]", " (1 meas.)" if entry.get("n", 2) == 1 or "single" in str(entry.get("note")) else " [-]")


# The compact report fits 100 columns; --wide needs about 230.
WIDE_WIDTH = 240


def _inputs(con: Console, rep: dict, max_rows: int) -> None:
    t = compact_table("Traces")
    for col in ("file", "rank/world", "host", "group", "status"):
        t.add_column(col)
    inputs, left_out = first_rows(rep["inputs"], max_rows)
    for i in inputs:
        status = i["skipped"] or ("complete" if i["finished"] else "unfinished capture")
        t.add_row(i["path"], f"{i['rank']}/{i['world_size']}", i["hostname"], i["group"] or "-", status)
    con.print(t)
    print_left_out(con, left_out, "traces")
    for m in rep["machine"]:
        bal = ", ".join(f"{k} {v:.0f}" for k, v in m["machine_balance_flop_per_byte"].items()) or "unknown"
        con.print(f"[bold]{m['platform']}[/] (backend {m['backend']}): hosts {', '.join(m['hosts']) or '?'}; "
                  f"machine balance (FLOP/B, measured) {bal}")
        for c in m.get("counter_sources", []):
            state = "available" if c.get("available") else f"NOT available ({c.get('reason', 'no reason given')})"
            con.print(f"  counters {c.get('source')}: {state}")
        for p in m.get("counter_perturbation", []):
            gemm = (f"; GEMM alone {p['gemm_median']:.3f}x ({'within' if p['gemm_within_goal'] else 'OUTSIDE'} "
                    f"the {p['goal'] - 1:.0%} goal)") if "gemm_median" in p else ""
            con.print(f"  timing perturbation by {p['source']} (counted / uncounted median, {p['n_records']} phases): "
                      f"median {p['median']:.3f}x, range {p['min']:.3f}-{p['max']:.3f}{gemm}")


# The compact table's scenario column: this wide at 100 columns (wider on a wider terminal).
SCENARIO_WIDTH = 16


def _compact_row(r: dict, first: bool) -> list[str]:
    flag = "!" if r.get("flags") else ""
    return [wrap_name(r["scenario"], SCENARIO_WIDTH) if first else "", CLASS_SHORT.get(r["taxonomy"], r["taxonomy"]) if first else "",
            f"{r['strategy']}/{r['variant']}" + ("*" if r["default_variant"] else ""),
            number(r["ideal_speedup"]),
            number(r["realized_speedup"]),
            percent(r["fraction_of_ideal"], r["fraction_ci"]),
            number(r["gemm_slowdown"]), number(r["comm_slowdown"]),
            flag]


def _wide_row(r: dict, first: bool) -> list[str]:
    d = r["taxonomy_detail"]
    return [r["scenario"] if first else "", r["taxonomy"] if first else "",
            d["gemm"]["class"].replace("-bound", ""), d["comm"].replace("-bound", ""), r.get("link") or "-",
            r["strategy"], r["variant"] + ("*" if r["default_variant"] else ""), r["reference"],
            ratio(r["ideal_speedup"], r["ideal_speedup_ci"], 2), ratio(r["realized_speedup"], r["realized_speedup_ci"], 2),
            percent(r["fraction_of_ideal"], r["fraction_ci"]),
            "-" if r["reference"] == "own" else percent(r["own"]["fraction_of_ideal"]).replace(" [-]", ""),
            ratio(r["gemm_slowdown"], r["gemm_slowdown_ci"]), ratio(r["comm_slowdown"], r["comm_slowdown_ci"]),
            ratio(r.get("gemm_drift"), r.get("gemm_drift_ci")), "yes" if r.get("paired") else "no", str(r["n_reps"])]


COMPACT_COLUMNS = ("scenario", "class", "strategy/variant", "ideal", "real.", "fraction of ideal", "G sd", "C sd", "")
WIDE_COLUMNS = ("scenario", "class", "GEMM", "comm", "link", "strategy", "variant", "ref", "ideal", "realized",
                "fraction of ideal", "own frac.", "GEMM slowdown", "comm slowdown", "GEMM drift", "paired", "n")


def _results(con: Console, rep: dict, platform: str, wide: bool, max_rows: int) -> None:
    rows = [r for r in rep["results"] if r["platform"] == platform]
    if not rows:
        return
    # Cut at whole scenarios: a scenario's strategy rows are read against each other.
    scenarios, left_out = first_rows(list(dict.fromkeys(r["scenario"] for r in rows)), max_rows)
    if left_out:
        shown = set(scenarios)
        rows = [r for r in rows if r["scenario"] in shown]
    conf = f"{rep['settings']['confidence']:.0%}"
    t = compact_table(f"Results on {platform} (medians; {conf} intervals; * default variant; ! see flags)")
    for col in WIDE_COLUMNS if wide else COMPACT_COLUMNS:
        t.add_column(col, no_wrap=col != "scenario", max_width=None if wide or col != "scenario" else 24,
                     min_width=SCENARIO_WIDTH if col == "scenario" else None, overflow="fold")
    last = None
    for r in rows:
        t.add_row(*(_wide_row if wide else _compact_row)(r, r["scenario"] != last))
        last = r["scenario"]
    con.print(t)
    print_left_out(con, left_out, "scenarios")
    if not wide:
        con.print("[dim]real. = realized speedup; G sd / C sd = GEMM / communication slowdown when concurrent; "
                  "links, intervals of every ratio, drift and pairing: --wide or --json.[/]")
    print_flags(con, [(r["run"], f) for r in rows for f in r.get("flags", [])])
    # Why an interval is missing, once per run and reason (overlap is shown only in the falsification table).
    reasons: dict[str, dict[str, list[str]]] = {}
    for r in rows:
        for k, v in r["ci_reasons"].items():
            if k not in ("overlap_fraction", "gemm_drift"):
                reasons.setdefault(r["run"], {}).setdefault(v, []).append(k)
    if reasons:
        con.print("[dim]Intervals shown as [-]:[/]")
        for run, by_reason in reasons.items():
            for why, keys in by_reason.items():
                con.print(f"[dim]  {run} ({', '.join(keys)}): {why}[/]")
    con.print("[dim]fraction of ideal: against the scenario's base run over the same link (same work).[/]")
    own = [f"{r['run']} ({r['reference_note']})" if r.get("reference_note") else r["run"]
           for r in rows if r["reference"] == "own"]
    if own:
        con.print(f"[yellow]Reference 'own' (no comparable base run):[/] {'; '.join(own)}")


def _strategies(con: Console, rep: dict, platform: str, max_rows: int) -> None:
    rows = [s for s in rep["strategies"] if s["platform"] == platform]
    if not rows:
        return
    t = compact_table(f"Per strategy on {platform}: mean fraction of ideal over scenarios (%)")
    for col in ("strategy", "variant", "n", "mean, scenarios", "this suite", "a repeat (all)", "G sd", "C sd"):
        t.add_column(col, no_wrap=True)
    defaults = {s["strategy"]: s["variant"] for s in rows if s["selection"] == "default"}
    notes = []
    for s in rows:
        if s["selection"] == "variant" and s["variant"] == defaults.get(s["strategy"]):
            continue                     # the default row above already shows this variant
        label = ("oracle" if s["oracle"] else
                 (s["variant"] or "-") + ("*" if s["selection"] == "default" else ""))
        sd = lambda v: "n/a" if v is None else f"{v:.2f}"  # noqa: E731
        t.add_row(s["strategy"], label, str(s["n_scenarios"]),
                  percent(s["mean_fraction_of_ideal"], s["mean_fraction_ci"], sign=""),
                  _bracket(s.get("mean_fraction_ci_suite")), _bracket(s.get("mean_fraction_pi_repeat_all")),
                  sd(s["mean_gemm_slowdown"]), sd(s["mean_comm_slowdown"]))
        name = f"{s['strategy']}/{s['variant'] or 'best'}"
        if s["ci_reason"]:
            notes.append(f"{name}: {s['ci_reason']}")
        if s.get("above_ideal"):
            notes.append(f"{name}: above 100% in {_listed(s['above_ideal'], max_rows)}")
        if s["excluded"]:
            notes.append(f"{name}: {len(s['excluded'])} scenario(s) left out by the inclusion rule (--json lists why)")
    con.print(t)
    for n in notes:
        con.print(f"[dim]  {n}[/]")
    con.print(f"[dim]* default variant; oracle = best variant per scenario, biased upward. 'mean, scenarios': "
              f"{rows[0]['ci_method']} (scenarios like these). 'this suite': these scenarios held fixed, "
              f"measurement noise only. 'a repeat (all)': where a repeat capture's means of every strategy land, "
              f"all at once (simultaneous 95% prediction band; --json also gives each strategy's own, "
              f"mean_fraction_pi_repeat).[/]")


def _listed(names: list[str], max_rows: int) -> str:
    """Names on one line, the first ``max_rows`` of them and a count of the rest."""
    shown, left_out = first_rows(names, max_rows)
    return ", ".join(shown) + (f" and {left_out:,} more (--json)" if left_out else "")


def _bracket(ci: list[float] | None) -> str:
    """An interval of fractions in percent (no sign: the column is marked), one decimal when it is
    narrower than 2 points."""
    if not ci:
        return "-"
    digits = 1 if ci[1] - ci[0] < 0.02 else 0
    return f"[{ci[0] * 100:.{digits}f}, {ci[1] * 100:.{digits}f}]"


def _falsification(con: Console, rep: dict, max_rows: int) -> None:
    if not rep["falsification"]:
        return
    t = compact_table("Falsification: " + rep["falsification"][0]["premise"])
    for col in ("GEMM", "transfer", "DMA", "SM", "DMA - SM (paired CI)", "ovl.", "verdict"):
        t.add_column(col, no_wrap=True)
    entries, left_out = first_rows(rep["falsification"], max_rows)
    for f in entries:
        tr = f["transfer"]
        d, ci = f.get("dma_minus_sm"), f.get("dma_minus_sm_ci")
        diff = "n/a" if d is None else f"{d:+.3f}" + (f" [{ci[0]:+.3f}, {ci[1]:+.3f}]" if ci else " [-]")
        size = format_bytes(tr["bytes"]) if tr and isinstance(tr.get("bytes"), int) and tr["bytes"] > 0 else "?"
        t.add_row(f["gemm"]["label"].replace(" bf16", ""), f"{size} {f.get('link') or tr['op']}" if tr else "-",
                  number(f["slowdown"]), number(f["sm_slowdown"]),
                  diff, "-" if f["overlap_fraction"] is None else f"{f['overlap_fraction']:.0%}",
                  Text(f["verdict"], style=VERDICT_STYLE.get(f["verdict"], "")))
    con.print(t)
    print_left_out(con, left_out, "experiments")
    for f in entries:
        con.print(f"  [{VERDICT_STYLE.get(f['verdict'], '')}]{f['verdict']}[/]: {f['evidence']}")
        c = f.get("counters") or {}
        if c.get("l2_sectors_ratio"):
            con.print(f"    L2 sectors concurrent/alone {_counter(c.get('l2_sectors_ratio'), 'x')}; non-SM share "
                      f"{_counter(c.get('non_sm_share_gemm'), '%')} -> {_counter(c.get('non_sm_share_concurrent'), '%')}")
    con.print("[dim]DMA, SM: the GEMM's slowdown beside the copy-engine carrier, and beside the SM carrier of the "
              "same bytes over the same link; ovl.: how much of the GEMM the transfer overlapped.[/]")
    con.print(f"[dim]Rule: {rep['falsification'][0]['rule']}[/]")


def _interference(con: Console, rep: dict, max_rows: int) -> None:
    """The dose-response: GEMM slowdown against copy-engine bytes/s, and the threshold per link and GEMM."""
    for d in rep.get("interference", []):
        t = compact_table(f"Interference dose-response on {d['platform']}: GEMM slowdown vs copy-engine rate")
        for col in ("link", "GEMM", "copies", "GB/s avg/GEMM", "GEMM slowdown", "DMA-SM"):
            t.add_column(col, no_wrap=True)
        arms, left_out = first_rows(sorted(d["arms"], key=lambda a: (a["link"], a["gemm"], a["rate_gbps"])), max_rows)
        for a in arms:
            window = a.get("window_rate_gbps")
            copies = f"{a['copies']}x{format_bytes(a['chunk'])}"
            if a.get("gap_us"):
                copies += f"+{format_duration_us(a['gap_us'])}"
            rates = f"{a['rate_gbps']:.1f}/" + ("-" if window is None else f"{window:.1f}")
            diff = a["dma_minus_sm"]
            t.add_row(a["link"].removeprefix("pcie_"), a["gemm"].replace(" bf16", ""), copies, rates,
                      ratio(a["slowdown"], a["slowdown_ci"]), "n/a" if diff is None else f"{diff:+.3f}")
        con.print(t)
        print_left_out(con, left_out, "arms")
        con.print("[dim]GB/s avg/GEMM: the transfer's average rate alone / the rate during the GEMM's interval "
                  "(modelled from the copies' schedule: the dose the thresholds use). DMA-SM: paired difference "
                  "of GEMM slowdowns, copy engine minus SM carrier (intervals: --json).[/]")
        _controls(con, d, max_rows)
        _mechanism(con, d, max_rows)
        thresholds, left_out = first_rows(d["thresholds"], max_rows)
        for th in thresholds:
            ai = th.get("gemm_intensity")
            con.print(f"  {th['link']} beside {th['gemm']}" + (f" ({ai:.0f} FLOP/B)" if ai else "") + f": {th['text']}")
        print_left_out(con, left_out, "thresholds")
        con.print(f"[dim]Rule: {d['rule']}[/]")


def _controls(con: Console, d: dict, max_rows: int) -> None:
    if not d.get("controls"):
        return
    t = compact_table("Controls beside the same GEMMs (base runs, no copy engine)")
    for col in ("control", "GEMM", "CTAs", "HBM write GB/s", "GEMM slowdown"):
        t.add_column(col, no_wrap=True)
    controls, left_out = first_rows(sorted(d["controls"], key=lambda c: (c["kind"], c["gemm"], c["hbm_write_gbps"])), max_rows)
    for c in controls:
        label = c["kind"] + (f" {format_duration_us(c['duration_us'])}" if c.get("duration_us") else "")
        t.add_row(label, c["gemm"].replace(" bf16", ""), str(c.get("ctas") or "-"), f"{c['hbm_write_gbps']:.1f}",
                  ratio(c["slowdown"], c["slowdown_ci"]))
    con.print(t)
    print_left_out(con, left_out, "controls")


def _mechanism(con: Console, d: dict, max_rows: int) -> None:
    if not d.get("mechanism"):
        return
    t = compact_table("Mechanism (Nsight Compute, per repetition): what each arm adds to the GEMM's memory traffic")
    for col in ("scenario", "carrier", "GEMM slowdown", "DRAM rd +MB", "wr +MB", "L2 hit, SM loads"):
        t.add_column(col, no_wrap=True)
    pct = lambda v: "-" if v is None else f"{v:.2%}"   # noqa: E731
    rows, left_out = first_rows(d["mechanism"], max_rows)
    for r in rows:
        t.add_row(r["scenario"], "CE" if r["carrier"] == "copy_engine" else "SM", ratio(r["slowdown"], r["slowdown_ci"]), f"{r['dram_read_added_mb']:+.1f}",
                  f"{r['dram_write_added_mb']:+.1f}", f"{pct(r['l2_sm_read_hit_alone'])}->{pct(r['l2_sm_read_hit_beside'])}")
    con.print(t)
    print_left_out(con, left_out, "mechanism rows")


def _sweeps(con: Console, rep: dict, max_rows: int) -> None:
    sweeps, left_out = first_rows(rep["comm_sweeps"], max_rows)
    for s in sweeps:
        if s["knee_bytes"]:
            con.print(f"  comm sweep {s['op']} over {s['transport']} ({s['platform']}): plateau "
                      f"{s['plateau_bytes_per_s'] / 1e9:.1f} GB/s, latency-bound below {format_bytes(s['knee_bytes'])}")
        else:
            con.print(f"  comm sweep {s['op']} over {s['transport']} ({s['platform']}): {s['reason']}")
    print_left_out(con, left_out, "comm sweeps")


def _not_applicable(con: Console, rep: dict, max_rows: int) -> None:
    entries, left_out = first_rows(rep.get("not_applicable", []), max_rows)
    for e in entries:
        con.print(f"[dim]not applicable: {e.get('run')}: {e['message']}[/]")
    print_left_out(con, left_out, "runs not applicable")


def _problems(con: Console, rep: dict, max_rows: int) -> None:
    if rep["alerts"]:
        body = "\n".join(f"- {a['message']}" for a in rep["alerts"])
        con.print(Panel(body, title="ALERTS", border_style="bold red", style="red"))
    if rep["incomplete"]:
        t = compact_table("Incomplete runs (left out of the results)")
        for col in ("platform", "run", "missing phases", "errors"):
            t.add_column(col)
        incomplete, left_out = first_rows(rep["incomplete"], max_rows)
        for i in incomplete:
            t.add_row(i["platform"], i["run"], ", ".join(i["missing_phases"]), "; ".join(map(str, i["errors"])))
        con.print(t)
        print_left_out(con, left_out, "incomplete runs")
    if rep["errors"]:
        t = compact_table("Error records")
        for col in ("platform", "run", "phase", "message", "trace"):
            t.add_column(col)
        errors, left_out = first_rows(rep["errors"], max_rows)
        for e in errors:
            t.add_row(e["platform"], str(e.get("run") or "-"), str(e.get("phase") or "-"), e["message"],
                      str(e.get("trace")))
        con.print(t)
        print_left_out(con, left_out, "error records")
    unval = rep["validation"]["unvalidated_dma_runs"]
    if unval:
        con.print(f"[yellow]DMA runs without a validation record:[/] {_listed([u['run'] for u in unval], max_rows)}")
    for n in rep["notes"]:
        con.print(f"[dim]note: {n}[/]")


def render(rep: dict, console: Console | None = None, wide: bool = False, max_rows: int = MAX_ROWS) -> None:
    con = console or make_console(wide=WIDE_WIDTH if wide else None)
    _inputs(con, rep, max_rows)
    for m in rep["machine"]:
        _results(con, rep, m["platform"], wide, max_rows)
        _strategies(con, rep, m["platform"], max_rows)
    _falsification(con, rep, max_rows)
    _interference(con, rep, max_rows)
    con.print("[bold]Rules[/]")
    for r in rep["rules"]:
        con.print(f"  [bold]{r['name']}[/]: {r['rule']}")
    _sweeps(con, rep, max_rows)
    _not_applicable(con, rep, max_rows)
    _problems(con, rep, max_rows)
