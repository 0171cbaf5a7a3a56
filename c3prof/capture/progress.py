"""Progress over the sweep (a bar with ETA) and a one-line result per scenario.

The one-liner is a quick look, computed from medians only: fraction of ideal of each variant
against the scenario's base run. `c3prof report` gives the full analysis with intervals.
"""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn


def quick_fraction(base: dict, run: dict) -> float | None:
    """(realized - 1) / (ideal - 1) from median phase times, with the base run as reference."""
    try:
        ideal = base["serial"] / max(base["gemm"], base["comm"])
        realized = base["serial"] / run["concurrent"]
    except (KeyError, ZeroDivisionError):
        return None
    return None if ideal <= 1 else (realized - 1) / (ideal - 1)


def scenario_line(name: str, rows) -> str:
    base = next((m for plan, m in rows if plan.variant.strategy == "base"), None)
    parts = [f"[bold]{name}[/bold]"]
    if base and "gemm" in base and "comm" in base:
        tg, tc = base["gemm"], base["comm"]
        cls = "G-long" if tg > 1.15 * tc else "C-long" if tc > 1.15 * tg else "GC-equal"
        parts.append(f"T_g {tg:.3f} ms  T_c {tc:.3f} ms  {cls}")
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
