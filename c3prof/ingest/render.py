"""Terminal output of ``c3prof ingest``: per-scenario table, device summary, notes (rich)."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from c3prof.ingest.analyze import IngestResult


def _num(v, fmt="{:.2f}") -> str:
    return "-" if v is None else fmt.format(v)


def _ci(ci) -> str:
    return "" if not ci else f" [{ci[0]:.2f}, {ci[1]:.2f}]"


def render(result: IngestResult, console: Console, max_rows: int = 30) -> None:
    for t in result.traces:
        flag = " [yellow](truncated)[/]" if t.truncated else ""
        console.print(f"[bold]{escape(t.path)}[/] rank {t.rank} ({t.rank_from}): {t.events_seen} events, "
                      f"{t.n_gemm} GEMM kernels, {t.n_collective} collective ops, {t.n_transfer} transfers, "
                      f"{t.n_other} other{flag}")
    dev = Table(title="Devices", show_lines=False)
    for col in ("rank", "device", "GEMM busy ms", "comm busy ms", "C3 ms", "comm covered by GEMM"):
        dev.add_column(col, justify="right")
    for d in result.region_set.timelines:
        cov = d.comm_covered_by_gemm
        dev.add_row(str(d.rank), str(d.device), f"{d.gemm_ns / 1e6:.3f}", f"{d.comm_ns / 1e6:.3f}",
                    f"{d.c3_ns / 1e6:.3f}", "-" if cov is None else f"{100 * cov:.1f}%")
    console.print(dev)
    table = Table(title=f"C3 regions by scenario ({result.region_set.n_regions} overlapping pairs)")
    for col, just in (("scenario", "left"), ("taxonomy", "left"), ("n", "right"), ("overlap ms", "right"),
                      ("share", "right"), ("GEMM slowdown", "right"), ("comm slowdown", "right"),
                      ("ideal", "right"), ("realized", "right"), ("fraction of ideal [95% CI]", "right"),
                      ("replay as", "left")):
        table.add_column(col, justify=just, overflow="fold")
    for r in result.results[:max_rows]:
        table.add_row(
            escape(r.scenario), r.taxonomy or "-", str(r.n_instances), f"{r.overlap_ns / 1e6:.3f}",
            f"{100 * r.time_share:.1f}%", _num(r.gemm_slowdown) + _ci(r.gemm_slowdown_ci),
            _num(r.comm_slowdown) + _ci(r.comm_slowdown_ci), _num(r.ideal_speedup), _num(r.realized_speedup),
            _num(r.fraction_of_ideal) + _ci(r.fraction_ci), r.replay_op or "[dim]not replayable[/]")
    console.print(table)
    if len(result.results) > max_rows:
        console.print(f"... {len(result.results) - max_rows} more scenarios in the JSON output")
    for w in result.warnings:
        console.print(f"[yellow]warning:[/] {escape(w)}")
    for n in result.notes:
        console.print(f"note: {escape(n)}")
