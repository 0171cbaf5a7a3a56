"""Progress over the sweep (a bar with ETA) and a one-line result per scenario.

The one-liner is a quick look, computed from medians only: fraction of ideal of each variant
against the scenario's base run, with the report's formulas (c3prof/analysis/speedup.py) and
length class (c3prof/analysis/taxonomy.py). `c3prof report` gives the full analysis with intervals.
"""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from c3prof.analysis.speedup import fraction_of_ideal, ideal
from c3prof.analysis.taxonomy import length_class


def quick_fraction(base: dict, run: dict) -> float | None:
    """Fraction of ideal from median phase times, with the base run as reference (None where a
    phase is missing or there is nothing to gain: ideal <= 1)."""
    try:
        ts, tg, tc, tcc = base["serial"], base["gemm"], base["comm"], run["concurrent"]
    except KeyError:
        return None
    if min(tg, tc, tcc) <= 0 or ideal(ts, tg, tc) <= 1:
        return None
    return fraction_of_ideal(ts, tg, tc, tcc)


def scenario_line(name: str, rows) -> str:
    base = next((m for plan, m in rows if plan.variant.strategy == "base"), None)
    parts = [f"[bold]{name}[/bold]"]
    if base and "gemm" in base and "comm" in base:
        tg, tc = base["gemm"], base["comm"]
        parts.append(f"T_g {tg:.3f} ms  T_c {tc:.3f} ms  {length_class(tg, tc)}")
    for plan, m in rows:
        f = quick_fraction(base, m) if base else None
        if f is not None:
            parts.append(f"{plan.variant.strategy}/{plan.variant.name} {f:+.2f}")
    return "  ".join(parts)


class SweepProgress:
    def __init__(self, console: Console | None = None, enabled: bool = True):
        self.console = console or Console(stderr=True)
        self.enabled = enabled
        self._p: Progress | None = None
        self._task = None

    def start(self, total: int) -> None:
        if not self.enabled:
            return
        self._p = Progress(TextColumn("{task.description:<48}"), BarColumn(), MofNCompleteColumn(),
                           TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(), console=self.console)
        self._p.start()
        self._task = self._p.add_task("capture", total=total)

    def describe(self, text: str) -> None:
        if self._p:
            self._p.update(self._task, description=text[:48])

    def advance(self, n: int = 1) -> None:
        if self._p:
            self._p.advance(self._task, n)

    def note(self, message: str) -> None:
        self.console.print(message)

    def scenario_done(self, name: str, rows) -> None:
        self.console.print(scenario_line(name, rows))

    def stop(self) -> None:
        if self._p:
            self._p.stop()
            self._p = None
