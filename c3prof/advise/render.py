"""Terminal output of ``c3prof advise``: the advice per scenario, then the validation tables."""

from __future__ import annotations

import textwrap

from c3prof.console import DEFAULT_WIDTH
from c3prof.units import format_bytes


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def _interval(iv: list[float] | None, fmt=_ms) -> str:
    return "" if not iv else f" [{fmt(iv[0])}, {fmt(iv[1])}]"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def advice_lines(a: dict, width: int = DEFAULT_WIDTH) -> list[str]:
    """One scenario's advice, wrapped at its words to ``width`` columns."""
    rec, run = a["recommended"], a["runner_up"]
    head = f"{a['scenario']}  ({a['gemm']['m']}x{a['gemm']['n']}x{a['gemm']['k']} {a['gemm']['dtype']}, " \
           f"{a['comm']['op']} {format_bytes(a['comm']['bytes'])} {a['comm'].get('link', '')}; " \
           f"inputs: {a['inputs']['source']})"
    if rec is None:
        return _fitted([head, "  no candidate could be predicted: " + "; ".join(a["not_predicted"].values())], width)
    lines = [head, f"  recommended {rec['candidate']}: predicted T_cc {_ms(rec['t_cc_ms'])} ms"
                   f"{_interval(rec['t_cc_interval_ms'])}, fraction of ideal {_pct(rec['fraction_of_ideal'])}"
                   f"{_interval(rec['fraction_interval'], _pct)}"]
    if run is not None:
        lines.append(f"  runner-up   {run['candidate']}: predicted T_cc {_ms(run['t_cc_ms'])} ms"
                     f"{_interval(run['t_cc_interval_ms'])}"
                     + (f"; near tie ({_pct1(a['runner_up_margin'])} apart, within the model's typical "
                        "error): measure both" if a.get("near_tie") else ""))
    # Settings are sentences: wrapped to the width of the output (render).
    lines += [ln for s in rec["settings"] for ln in textwrap.wrap(s, width, initial_indent="    - ",
                                                                    subsequent_indent="      ")]
    ts = a.get("time_saved")
    if ts:
        lines.append(f"  {ts['label']}: saves {_ms(ts['saved_ms'])} ms per {ts['per']}"
                     f"{_interval(ts['saved_interval_ms'])} against {ts['traced_as']} "
                     f"({ts['instances_per_step']:g} instances; traced T_cc "
                     f"{_ms(ts['traced_t_cc_ms'])} ms, predicted {_ms(ts['predicted_now_t_cc_ms'])} ms)"
                     + (f"; {ts['note']}" if ts.get("note") else ""))
    return _fitted(lines, width)


def validation_lines(v: dict, width: int = DEFAULT_WIDTH) -> list[str]:
    """One validation: its prose wrapped to ``width``; its table's rows (84 columns) never wrapped,
    which would break their columns apart."""
    held = "every scenario held out" if v["all_held_out"] else "NOT held out: some scenario shapes are in training"
    head = _fitted([f"validation: {v['kind']} on {', '.join(v['sources'])} ({held})", f"  rule: {v['hit_rule']}"],
                   width)
    table = [f"  {'method':20s} {'hits':>7s} {'rate':>6s} {'max loss':>9s} {'mean loss':>10s} "
             f"{'mean loss|miss':>15s} {'unscored':>9s}"]
    for r in v["summary"]:
        table.append(f"  {r['method']:20s} {r['hits']:>3d}/{r['n']:<3d} {_pct(r['hit_rate']):>6s} "
                     f"{_pct1(r['max_loss']):>9s} {_pct1(r['mean_loss']):>10s} "
                     f"{_pct1(r['mean_loss_when_missed']):>15s} {r['unscored']:>9d}")
    lines = ["  (unscored: the method's choice was not measured in the scenario; it counts as a miss)"]
    cov = v["interval_coverage"]
    if cov["runs"]:
        lines.append(f"  predicted 95% intervals hold the measured T_cc of {cov['inside']} of {cov['runs']} runs "
                     f"({_pct(cov['share'])})")
    nt = v.get("near_ties")
    if nt:
        lines.append(f"  near ties flagged (runner-up within the model's typical error): {nt['flagged']} of "
                     f"{len(v['scenarios'])} scenarios, {nt['misses_flagged']} of the {nt['misses']} misses")
    misses = [s for s in v["scenarios"] if not s["choices"]["advice"]["hit"]]
    for s in misses:
        c = s["choices"]["advice"]
        lines.append(f"  miss: {s['scenario']}: advised {c['choice']} (loss {_pct1(c['loss'])}), "
                     f"best {s['measured_best']}")
    return head + table + _fitted(lines, width)


def _pct1(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def render(doc: dict, width: int = DEFAULT_WIDTH) -> str:
    """The advice and the validations as text, prose wrapped at its words to ``width`` columns (the
    command passes console.text_width(): a terminal's own, else $COLUMNS, else 100)."""
    lines = _fitted([f"c3prof advise: model fitted on {len(doc['training']['model']['training_scenarios'])} "
                     f"scenarios ({doc['training']['platform']}; {', '.join(doc['training']['sources'])})"], width)
    for a in doc["advice"]:
        lines += [""] + advice_lines(a, width)
    for v in doc["validation"]:
        lines += [""] + validation_lines(v, width)
    lines += _fitted([f"note: {n}" for n in doc["notes"]], width)
    return "\n".join(lines)


def _fitted(lines: list[str], width: int) -> list[str]:
    return [wrapped for line in lines for wrapped in _fit(line, width)]


def _fit(line: str, width: int) -> list[str]:
    """A line longer than ``width``, wrapped at its words, the rest indented under its text."""
    if len(line) <= width:
        return [line]
    indent = " " * (len(line) - len(line.lstrip()) + 2)
    return textwrap.wrap(line, width, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False)
