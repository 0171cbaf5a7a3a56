"""The terminal report (rich): results per scenario x strategy x variant, the per-strategy summary,
the rules, falsification verdicts, and everything that went wrong (alerts, incomplete runs, errors).

Rendering only: every number comes from the report dict.
"""

from __future__ import annotations

import os
import sys

from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from c3prof.units import format_bytes

VERDICT_STYLE = {"holds": "bold green", "refuted": "bold red", "inconclusive": "yellow",
                 "not enough data": "dim"}


def _x(v, ci=None, digits=3) -> str:
    """A ratio with its interval: 1.163 [1.159, 1.172]; n/a for null."""
    if v is None:
        return "n/a"
    s = f"{v:.{digits}f}"
    return s + (f" [{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]" if ci else " [-]")


def _pct(v, ci=None) -> str:
    if v is None:
        return "n/a"
    return f"{v:.0%}" + (f" [{ci[0]:.0%}, {ci[1]:.0%}]" if ci else " [-]")


def _counter(entry: dict | None, kind: str) -> str:
    """A counter summary: value, interval or '(1 meas.)' when it is a single measurement."""
    if not entry or entry.get("value") is None:
        return "-"
    v, ci = entry["value"], entry.get("ci")
    if kind == "%":
        text = _pct(v, ci)
    else:
        text = _x(v, ci)
    return text.replace(" [-]", " (1 meas.)" if entry.get("n", 2) == 1 or "single" in str(entry.get("note")) else " [-]")


def make_console(file=None) -> Console:
    file = file or sys.stdout
    # Tables are wide; when not on a terminal (pipes, CI logs) do not squeeze them into 80 columns.
    width = None if file.isatty() else int(os.environ.get("COLUMNS", "200"))
    return Console(file=file, width=width, highlight=False, soft_wrap=False)


def _inputs(con: Console, rep: dict) -> None:
    t = Table(title="Traces", title_justify="left", show_edge=False)
    for col in ("file", "rank/world", "host", "group", "status"):
        t.add_column(col)
    for i in rep["inputs"]:
        status = i["skipped"] or ("complete" if i["finished"] else "unfinished capture")
        t.add_row(i["path"], f"{i['rank']}/{i['world_size']}", i["hostname"], i["group"] or "-", status)
    con.print(t)
    for m in rep["machine"]:
        bal = ", ".join(f"{k} {v:.0f}" for k, v in m["machine_balance_flop_per_byte"].items()) or "unknown"
        con.print(f"[bold]{m['platform']}[/]: hosts {', '.join(m['hosts']) or '?'}; "
                  f"machine balance (FLOP/B, measured) {bal}")
        for c in m.get("counter_sources", []):
            state = "available" if c.get("available") else f"NOT available ({c.get('reason', 'no reason given')})"
            con.print(f"  counters {c.get('source')}: {state}")
        for p in m.get("counter_perturbation", []):
            gemm = (f"; GEMM alone {p['gemm_median']:.3f}x ({'within' if p['gemm_within_goal'] else 'OUTSIDE'} "
                    f"the {p['goal'] - 1:.0%} goal)") if "gemm_median" in p else ""
            con.print(f"  timing perturbation by {p['source']} (counted / uncounted median, {p['n_records']} phases): "
                      f"median {p['median']:.3f}x, range {p['min']:.3f}-{p['max']:.3f}{gemm}")


def _results(con: Console, rep: dict, platform: str) -> None:
    rows = [r for r in rep["results"] if r["platform"] == platform]
    if not rows:
        return
    conf = f"{rep['settings']['confidence']:.0%}"
    t = Table(title=f"Results on {platform} (medians; {conf} bootstrap intervals; * = default variant)",
              title_justify="left")
    for col in ("scenario", "class", "GEMM", "comm", "strategy", "variant", "ref", "ideal", "realized",
                "fraction of ideal", "own frac.", "GEMM slowdown", "comm slowdown", "n"):
        t.add_column(col, no_wrap=col in ("scenario", "fraction of ideal", "GEMM slowdown", "comm slowdown"))
    last = None
    for r in rows:
        d = r["taxonomy_detail"]
        t.add_row(r["scenario"] if r["scenario"] != last else "", r["taxonomy"] if r["scenario"] != last else "",
                  d["gemm"]["class"].replace("-bound", ""), d["comm"].replace("-bound", ""),
                  r["strategy"], r["variant"] + ("*" if r["default_variant"] else ""), r["reference"],
                  _x(r["ideal_speedup"], None, 2).replace(" [-]", ""),
                  _x(r["realized_speedup"], None, 2).replace(" [-]", ""),
                  _pct(r["fraction_of_ideal"], r["fraction_ci"]),
                  "-" if r["reference"] == "own" else _pct(r["own"]["fraction_of_ideal"]).replace(" [-]", ""),
                  _x(r["gemm_slowdown"], r["gemm_slowdown_ci"]), _x(r["comm_slowdown"], r["comm_slowdown_ci"]),
                  str(r["n_reps"]))
        last = r["scenario"]
    con.print(t)
    # Why an interval is missing, once per run and reason (overlap is shown only in the falsification table).
    reasons: dict[str, dict[str, list[str]]] = {}
    for r in rows:
        for k, v in r["ci_reasons"].items():
            if k != "overlap_fraction":
                reasons.setdefault(r["run"], {}).setdefault(v, []).append(k)
    if reasons:
        con.print("[dim]Intervals shown as [-]:[/]")
        for run, by_reason in reasons.items():
            for why, keys in by_reason.items():
                con.print(f"[dim]  {run} ({', '.join(keys)}): {why}[/]")
    con.print("[dim]fraction of ideal: against the scenario's base run (same work); own frac.: against the run's "
              "own isolated and serial times (intervals in --json).[/]")
    own = [r["run"] for r in rows if r["reference"] == "own"]
    if own:
        con.print(f"[yellow]Reference 'own' (no complete base run of the scenario):[/] {', '.join(own)}")


def _strategies(con: Console, rep: dict, platform: str) -> None:
    rows = [s for s in rep["strategies"] if s["platform"] == platform]
    if not rows:
        return
    t = Table(title=f"Per strategy on {platform}: mean fraction of ideal over scenarios", title_justify="left")
    for col in ("strategy", "selection", "variant", "scenarios", "mean fraction of ideal", "GEMM sd", "comm sd",
                "note"):
        t.add_column(col, no_wrap=col != "note")
    for s in rows:
        sel = "best per scenario (ORACLE, biased up)" if s["oracle"] else s["selection"]
        sd = lambda v: "n/a" if v is None else f"{v:.3f}"  # noqa: E731
        t.add_row(s["strategy"], sel, s["variant"] or "-", str(s["n_scenarios"]),
                  _pct(s["mean_fraction_of_ideal"], s["mean_fraction_ci"]), sd(s["mean_gemm_slowdown"]),
                  sd(s["mean_comm_slowdown"]), s["ci_reason"] or "")
    con.print(t)
    con.print(f"[dim]Interval: {rows[0]['ci_method']}.[/]")


def _falsification(con: Console, rep: dict) -> None:
    if not rep["falsification"]:
        return
    t = Table(title="Falsification: " + rep["falsification"][0]["premise"], title_justify="left")
    for col in ("platform", "GEMM", "DMA transfer", "DMA: GEMM slowdown", "overlap", "SM control: GEMM slowdown",
                "L2 sectors conc./alone", "L2 non-SM share alone -> conc.", "verdict"):
        t.add_column(col, no_wrap=col not in ("platform",))
    for f in rep["falsification"]:
        tr = f["transfer"]
        c = f.get("counters") or {}
        t.add_row(f["gpu"], f["gemm"]["label"], f"{tr['label']} via {tr['transport']}" if tr else "-",
                  _x(f["slowdown"], f["slowdown_ci"]),
                  "-" if f["overlap_fraction"] is None else f"{f['overlap_fraction']:.0%}",
                  _x(f["sm_slowdown"], f["sm_slowdown_ci"]), _counter(c.get("l2_sectors_ratio"), "x"),
                  f"{_counter(c.get('non_sm_share_gemm'), '%')} -> {_counter(c.get('non_sm_share_concurrent'), '%')}"
                  if c.get("non_sm_share_concurrent") else "-",
                  Text(f["verdict"], style=VERDICT_STYLE.get(f["verdict"], "")))
    con.print(t)
    for f in rep["falsification"]:
        con.print(f"  [{VERDICT_STYLE.get(f['verdict'], '')}]{f['verdict']}[/]: {f['evidence']}")
    con.print(f"[dim]Rule: {rep['falsification'][0]['rule']}[/]")


def _sweeps(con: Console, rep: dict) -> None:
    for s in rep["comm_sweeps"]:
        if s["knee_bytes"]:
            con.print(f"  comm sweep {s['op']} over {s['transport']} ({s['platform']}): plateau "
                      f"{s['plateau_bytes_per_s'] / 1e9:.1f} GB/s, latency-bound below {format_bytes(s['knee_bytes'])}")
        else:
            con.print(f"  comm sweep {s['op']} over {s['transport']} ({s['platform']}): {s['reason']}")


def _problems(con: Console, rep: dict) -> None:
    if rep["alerts"]:
        body = "\n".join(f"- {a['message']}" for a in rep["alerts"])
        con.print(Panel(body, title="ALERTS", border_style="bold red", style="red"))
    if rep["incomplete"]:
        t = Table(title="Incomplete runs (left out of the results)", title_justify="left")
        for col in ("platform", "run", "missing phases", "errors"):
            t.add_column(col)
        for i in rep["incomplete"]:
            t.add_row(i["platform"], i["run"], ", ".join(i["missing_phases"]), "; ".join(map(str, i["errors"])))
        con.print(t)
    if rep["errors"]:
        t = Table(title="Error records", title_justify="left")
        for col in ("platform", "run", "phase", "message", "trace"):
            t.add_column(col)
        for e in rep["errors"]:
            t.add_row(e["platform"], str(e.get("run") or "-"), str(e.get("phase") or "-"), e["message"],
                      str(e.get("trace")))
        con.print(t)
    unval = rep["validation"]["unvalidated_dma_runs"]
    if unval:
        con.print(f"[yellow]DMA runs without a validation record:[/] {', '.join(u['run'] for u in unval)}")
    for n in rep["notes"]:
        con.print(f"[dim]note: {n}[/]")


def render(rep: dict, console: Console | None = None) -> None:
    con = console or make_console()
    _inputs(con, rep)
    for m in rep["machine"]:
        _results(con, rep, m["platform"])
        _strategies(con, rep, m["platform"])
    _falsification(con, rep)
    con.print("[bold]Rules[/]")
    for r in rep["rules"]:
        con.print(f"  [bold]{r['name']}[/]: {r['rule']}")
    _sweeps(con, rep)
    _problems(con, rep)
