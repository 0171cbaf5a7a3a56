"""Terminal output of ``c3prof ingest``: per-scenario table, device summary, notes (rich)."""

from __future__ import annotations

from rich.console import Console, JustifyMethod
from rich.markup import escape
from rich.table import Table

from c3prof.console import (CLASS_SHORT, compact_table, number, percent, print_flags, print_left_out, ratio,
                            wrap_name)
from c3prof.ingest.analyze import IngestResult
from c3prof.row_limit import first_rows


def render(result: IngestResult, console: Console, max_rows: int = 30, wide: bool = False) -> None:
    for t in result.traces:
        flag = " [yellow](truncated)[/]" if t.truncated else ""
        console.print(f"[bold]{escape(t.path)}[/] rank {t.rank} ({t.rank_from}): {t.events_seen} events, "
                      f"{t.n_gemm} GEMM kernels, {t.n_collective} collective ops, {t.n_transfer} transfers, "
                      f"{t.n_other} other{flag}")
    _overlap_table(result, console)
    _breakdown_table(result, console)
    (_wide_regions if wide else _compact_regions)(result, console, max_rows)
    for w in result.warnings:
        console.print(f"[yellow]warning:[/] {escape(w)}")
    for n in result.notes:
        console.print(f"note: {escape(n)}")


# The compact table's scenario column (ingested names run to 40 characters and more): the table
# then fits 100 columns.
SCENARIO_WIDTH = 18


def _compact_regions(result: IngestResult, console: Console, max_rows: int) -> None:
    """The regions in 100 columns, as report's compact table: slowdowns without their intervals,
    flags listed below it (--wide: every column, and the number of instances)."""
    table = compact_table(f"C3 regions by scenario ({result.region_set.n_regions} overlapping pairs; "
                          "95% intervals; ! see flags)")
    columns: tuple[tuple[str, JustifyMethod], ...] = (
        ("scenario", "left"), ("class", "left"), ("share", "right"), ("ideal", "right"), ("real.", "right"),
        ("fraction of ideal", "right"), ("G sd", "right"), ("C sd", "right"), ("replay as", "left"))
    for col, just in columns:
        table.add_column(col, justify=just, no_wrap=col not in ("scenario", "replay as"), overflow="fold",
                         min_width=SCENARIO_WIDTH if col == "scenario" else None)
    shown, left_out = first_rows(result.results, max_rows)
    for r in shown:
        table.add_row(escape(wrap_name(r.scenario, SCENARIO_WIDTH)), CLASS_SHORT.get(r.taxonomy, r.taxonomy) if r.taxonomy else "-",
                      f"{100 * r.time_share:.1f}%", number(r.ideal_speedup), number(r.realized_speedup),
                      percent(r.fraction_of_ideal, r.fraction_ci), number(r.gemm_slowdown), number(r.comm_slowdown),
                      (r.replay_op or "[dim]-[/]") + (" !" if r.flags else ""))
    console.print(table)
    print_left_out(console, left_out, "scenarios")
    console.print("[dim]share = of the trace's overlapped time; real. = realized speedup; G sd / C sd = GEMM / "
                  "communication slowdown; replay as: the c3prof scenario that replays it (- none); "
                  "instances, overlap times and every interval: --wide or --json.[/]")
    print_flags(console, [(r.scenario, f) for r in shown for f in r.flags])


def _wide_regions(result: IngestResult, console: Console, max_rows: int) -> None:
    table = Table(title=f"C3 regions by scenario ({result.region_set.n_regions} overlapping pairs)")
    columns: tuple[tuple[str, JustifyMethod], ...] = (
        ("scenario", "left"), ("taxonomy", "left"), ("n", "right"), ("overlap ms", "right"), ("share", "right"),
        ("GEMM slowdown", "right"), ("comm slowdown", "right"), ("ideal", "right"), ("realized", "right"),
        ("fraction of ideal [95% CI]", "right"), ("replay as", "left"))
    for col, just in columns:
        table.add_column(col, justify=just, overflow="fold")
    shown, left_out = first_rows(result.results, max_rows)
    for r in shown:
        table.add_row(
            escape(r.scenario) + ("".join(f"\n[yellow]flag:[/] {escape(f)}" for f in r.flags)), r.taxonomy or "-", str(r.n_instances), f"{r.overlap_ns / 1e6:.3f}",
            f"{100 * r.time_share:.1f}%", ratio(r.gemm_slowdown, r.gemm_slowdown_ci, 2),
            ratio(r.comm_slowdown, r.comm_slowdown_ci, 2), number(r.ideal_speedup), number(r.realized_speedup),
            percent(r.fraction_of_ideal, r.fraction_ci), r.replay_op or "[dim]not replayable[/]")
    console.print(table)
    print_left_out(console, left_out, "scenarios")


def _overlap_table(result: IngestResult, console: Console) -> None:
    """Both overlap numbers: HTA's (any computation over NCCL time, per rank) and c3prof's C3 view."""
    t = Table(title="Communication overlap")
    for col in ("rank", "HTA comm/comp overlap", "per iteration", "device", "comm busy ms", "GEMM busy ms",
                "C3 ms", "comm covered by GEMM (c3prof)"):
        t.add_column(col, justify="right")
    views: dict[int, list] = {}
    for d in result.region_set.timelines:
        views.setdefault(d.rank, []).append(d)
    for tr in result.traces:
        hta = tr.hta.get("comm_comp_overlap_pct")
        iters = ", ".join(f"#{k}: {v:.1f}%" for k, v in tr.hta.get("per_iteration_pct", {}).items() if v is not None)
        first = True
        for d in views.get(tr.rank, [None]):
            cov = None if d is None else d.comm_covered_by_gemm
            t.add_row(str(tr.rank) if first else "", (("-" if hta is None else f"{hta:.2f}%") if first else ""),
                      escape(iters) if first else "", "-" if d is None else str(d.device),
                      "-" if d is None else f"{d.comm_ns / 1e6:.3f}", "-" if d is None else f"{d.gemm_ns / 1e6:.3f}",
                      "-" if d is None else f"{d.c3_ns / 1e6:.3f}", "-" if cov is None else f"{100 * cov:.1f}%")
            first = False
    console.print(t)
    console.print("HTA comm/comp overlap: NCCL kernel time overlapped by any computation kernel / NCCL time "
                  "(HTA's definition; last ProfilerStep dropped). c3prof: overlapped by GEMMs only / "
                  "(collective + copy-engine transfer) time, whole trace.", markup=False)


def _breakdown_table(result: IngestResult, console: Console) -> None:
    from c3prof.ingest.kernel_table import CLASSES

    t = Table(title="Busy time by kernel class (ms)")
    for col in ("rank", "device", "span", *CLASSES):
        t.add_column(col, justify="right")
    for tr in result.traces:
        for b in tr.breakdown:
            t.add_row(str(b["rank"]), str(b["device"]), f"{b['span_ms']:.2f}",
                      *(f"{b['classes_ms'][c]:.2f}" for c in CLASSES))
    console.print(t)
