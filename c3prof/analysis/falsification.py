"""Falsification of the no-interference premise: "a transfer carried by copy engines (DMA) does not slow a GEMM".

For each GEMM shape and transfer of a group, three arms:

- the GEMM alone (the gemm phase of each run: slowdowns are relative to it, so this arm is 1),
- beside a DMA transfer: runs of strategy ``dma`` whose transport's carrier is ``copy_engine``
  according to the group's engine_evidence records,
- beside the same bytes over the **same link** carried by SMs: the ``base`` run of the same scenario
  (carrier ``sm``). This is the control: the same transfer, so the same bytes, link and roughly the
  same duration; only the carrier differs. It shows the measurement can see interference.

Each arm gives the GEMM slowdown (median concurrent gemm_ms / median isolated GEMM time) with its
interval, and the overlap fraction. The comparison of the two carriers is one interval: the paired
bootstrap interval of (slowdown beside the copy engine) - (slowdown beside the SM carrier). Runs
measured interleaved in rounds are resampled by round, so both arms' replicates come from the same
rounds. The verdict follows ``rule_text()``, printed with every verdict. A ``dma`` run whose
transport is not carried by copy engines is not evidence for the premise: it raises an alert instead.
"""

from __future__ import annotations

from dataclasses import dataclass

from c3prof.analysis.counters import l2_summary
from c3prof.analysis.dataset import Group, MergedRun
from c3prof.analysis.speedup import BootstrapSettings, Estimate, RunMetrics
from c3prof.analysis.stats import CI, no_ci, percentile_cis_of_rows
from c3prof.units import format_bytes

PREMISE = "a transfer carried by copy engines (DMA) does not slow a GEMM"
DEFAULT_TOLERANCE = 0.02
DEFAULT_MIN_OVERLAP = 0.5
VERDICTS = ("holds", "refuted", "inconclusive", "not enough data")


@dataclass(frozen=True)
class FalsificationSettings:
    tolerance: float = DEFAULT_TOLERANCE  # a slowdown below 1 + tolerance counts as none
    min_overlap: float = DEFAULT_MIN_OVERLAP  # "holds" needs the transfer to cover this share of the GEMM


def rule_text(s: FalsificationSettings) -> str:
    lim = 1 + s.tolerance
    return (f"refuted if the DMA arm's GEMM-slowdown CI lower bound > {lim:g}; holds if its CI upper bound "
            f"< {lim:g}, the paired interval of (DMA-arm slowdown - SM-arm slowdown) lies below 0 (the SM "
            f"carrier of the same bytes over the same link slows the GEMM more: the test can see interference), "
            f"and the transfer overlapped at least {s.min_overlap:.0%} of the GEMM (median); not enough data if "
            f"the DMA arm, its interval, or the same-link SM control needed for 'holds' is missing; otherwise "
            f"inconclusive.")


def paired_difference(dma: RunMetrics, sm: RunMetrics, confidence: float) -> Estimate:
    """(GEMM slowdown beside the copy engine) - (beside the SM carrier), with a paired interval."""
    return paired_differences([(dma, sm)], confidence)[0]


# paired_differences' memo: (id(dma), id(sm), confidence) -> (dma, sm, difference); the arms are
# kept beside their difference so that their ids stay theirs while the memo lives.
DifferenceMemo = dict[tuple[int, int, float], tuple[RunMetrics, RunMetrics, Estimate]]


def paired_differences(pairs: list[tuple[RunMetrics, RunMetrics]], confidence: float,
                       memo: DifferenceMemo | None = None) -> list[Estimate]:
    """paired_difference of every (dma, sm) pair, the intervals from one call (a large report has
    thousands of pairs; one percentile_ci each cost more than the differences themselves).

    ``memo``: pairs already in it are not computed again, and those computed are added. The report
    passes one per group to falsify and dose_response, whose pairs are mostly the same (a DMA run
    and its scenario's base run): each such pair is then one Estimate, computed once."""
    memo = {} if memo is None else memo
    key = lambda dma, sm: (id(dma), id(sm), confidence)  # noqa: E731
    todo = list({key(dma, sm): (dma, sm) for dma, sm in pairs if key(dma, sm) not in memo}.values())
    for (dma, sm), est in zip(todo, _differences(todo, confidence)):
        memo[key(dma, sm)] = (dma, sm, est)
    return [memo[key(dma, sm)][2] for dma, sm in pairs]


def _differences(pairs: list[tuple[RunMetrics, RunMetrics]], confidence: float) -> list[Estimate]:
    out: list[Estimate] = []
    diffs, defined = [], []
    for dma, sm in pairs:
        a, b = dma.gemm_slowdown, sm.gemm_slowdown
        if a.value is None or b.value is None:
            out.append(Estimate(None, no_ci("a GEMM slowdown is undefined in one of the arms")))
        elif a.replicates is None or b.replicates is None:
            out.append(Estimate(a.value - b.value, no_ci("slowdown replicates not kept")))
        else:
            out.append(Estimate(a.value - b.value, no_ci("interval not computed yet")))
            diffs.append(a.replicates.astype(float) - b.replicates.astype(float))
            defined.append((out[-1], dma.paired and sm.paired))
    for (est, paired), ci in zip(defined, percentile_cis_of_rows(diffs, confidence)):
        if not paired and ci.ok:
            ci = CI(ci.low, ci.high, "arms not measured interleaved: resampled independently")
        est.ci = ci
    return out


def gemm_key(run: MergedRun) -> tuple:
    return run.gemm_shape


def gemm_label(run: MergedRun) -> str:
    m, n, k, dtype = run.gemm_shape
    return f"{m}x{n}x{k} {dtype}"


def gemm_json(run: MergedRun) -> dict:
    m, n, k, dtype = run.gemm_shape
    return {"m": m, "n": n, "k": k, "dtype": dtype, "label": f"{m}x{n}x{k} {dtype}"}


def transfer_json(run: MergedRun, group: Group) -> dict:
    comm = run.scenario.get("comm", {})
    carrier, evidence = group.carrier(run.transport)
    nbytes = comm.get("bytes")
    label = f"{comm.get('op')} {format_bytes(nbytes) if isinstance(nbytes, int) and nbytes > 0 else nbytes}"
    return {"op": comm.get("op"), "bytes": nbytes, "label": label, "transport": run.transport,
            "carrier": carrier, "carrier_evidence": evidence, "run": run.id}


def carrier_alerts(group: Group) -> list[dict]:
    """Every ``dma`` run (complete or not) whose transport is not shown to run on copy engines."""
    out = []
    for run in group.runs.values():
        if run.strategy != "dma":
            continue
        carrier, evidence = group.carrier(run.transport)
        if carrier != "copy_engine":
            out.append({"platform": group.key, "run": run.id, "transport": run.transport, "carrier": carrier,
                        "message": f"DMA run {run.id} uses transport {run.transport!r} whose carrier is "
                                   f"{carrier!r}, not 'copy_engine' ({evidence}): it is not a DMA transfer "
                                   f"and is excluded from the falsification test"})
    return out


def _fmt(e: Estimate) -> str:
    if e.value is None:
        return "n/a"
    ci = e.ci.as_list()
    return f"{e.value:.3f}x" + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else " (no interval)")


def verdict(dma: RunMetrics | None, sm: RunMetrics | None, s: FalsificationSettings,
            diff: Estimate | None = None) -> tuple[str, str]:
    lim = 1 + s.tolerance
    if dma is None:
        return "not enough data", "no DMA run (strategy dma over a copy-engine transport) with this GEMM"
    sd = dma.gemm_slowdown
    if sd.value is None or not sd.ci.ok:
        return "not enough data", f"DMA arm has no slowdown interval ({sd.ci.reason})"
    lo, hi = sd.ci.as_list()
    ov = dma.overlap.value
    if lo > lim:
        why = f"DMA arm slowdown CI lower bound {lo:.3f} > {lim:g}"
        if ov is not None and ov < s.min_overlap:
            # Still a slowdown beside the transfer, but not one its traffic can explain: say so.
            why += (f"; caution: the transfer overlapped only {ov:.0%} of the GEMM, so look for launch, "
                    "ordering or clock effects rather than memory contention")
        return "refuted", why
    if hi >= lim:
        return "inconclusive", f"DMA arm slowdown CI [{lo:.3f}, {hi:.3f}] contains {lim:g}"
    if sm is None:
        return "not enough data", "no SM carrier of the same bytes over the same link (the scenario's base run)"
    if diff is None or diff.value is None or not diff.ci.ok:
        return "not enough data", f"no interval for the carrier difference ({diff.ci.reason if diff else 'none'})"
    if s.min_overlap > 0 and (ov is None or ov < s.min_overlap):
        shown = "unknown" if ov is None else f"{ov:.0%}"
        return "inconclusive", f"the DMA transfer overlapped {shown} of the GEMM (< {s.min_overlap:.0%})"
    d_lo, d_hi = diff.ci.as_list()
    if d_hi < 0:
        return "holds", (f"DMA CI upper bound {hi:.3f} < {lim:g} and DMA - SM slowdown {diff.value:+.3f} "
                         f"[{d_lo:+.3f}, {d_hi:+.3f}] < 0")
    return "inconclusive", (f"the SM carrier of the same bytes did not slow the GEMM more (DMA - SM "
                            f"{diff.value:+.3f} [{d_lo:+.3f}, {d_hi:+.3f}]): the test could not have seen interference")


def _arm_json(prefix: str, m: RunMetrics | None) -> dict:
    if m is None:
        return {f"{prefix}slowdown": None, f"{prefix}slowdown_ci": None, f"{prefix}slowdown_ci_reason": None,
                f"{prefix}overlap_fraction": None, f"{prefix}overlap_fraction_ci": None}
    return {f"{prefix}slowdown": m.gemm_slowdown.value, f"{prefix}slowdown_ci": m.gemm_slowdown.ci_list,
            f"{prefix}slowdown_ci_reason": m.gemm_slowdown.ci.reason,
            f"{prefix}overlap_fraction": m.overlap.value, f"{prefix}overlap_fraction_ci": m.overlap.ci_list}


def _controls(sm: list[RunMetrics]) -> dict:
    """SM-carrier base runs keyed by scenario name and by (GEMM, link, comm): the candidates for a
    DMA arm's same-link control, looked up in constant time (a report may hold 10,000 runs)."""
    by_name = {c.run.name: c for c in sm}
    by_work: dict = {}
    for c in sm:
        by_work.setdefault((gemm_key(c.run), c.run.link, repr(c.run.scenario.get("comm", {}))), c)
    return {"name": by_name, "work": by_work}


def _same_link_control(d: RunMetrics, controls: dict) -> RunMetrics | None:
    """The SM carrier of the same bytes over the same link: the scenario's base run, else a base run of
    another scenario with the same GEMM, op, bytes and link."""
    same = controls["name"].get(d.run.name)
    comm = d.run.scenario.get("comm", {})
    if same is not None and same.run.link == d.run.link and same.run.scenario.get("comm", {}) == comm:
        return same
    return controls["work"].get((gemm_key(d.run), d.run.link, repr(comm)))


def falsify(group: Group, metrics: dict[str, RunMetrics], s: FalsificationSettings,
            boot: BootstrapSettings, memo: DifferenceMemo | None = None) -> list[dict]:
    """One entry per (GEMM shape, DMA transfer); a shape without a DMA arm gets one 'not enough data'
    entry. ``memo``: see paired_differences."""
    shapes: dict[tuple, list[RunMetrics]] = {}
    for m in metrics.values():
        shapes.setdefault(gemm_key(m.run), []).append(m)
    rule = rule_text(s)
    entries = []
    arms: list[tuple[list[RunMetrics], RunMetrics | None, RunMetrics | None]] = []   # (shape's runs, dma, control)
    for ms in shapes.values():
        dma = [m for m in ms if m.run.strategy == "dma" and group.carrier(m.run.transport)[0] == "copy_engine"]
        sm = [m for m in ms if m.run.strategy == "base" and group.carrier(m.run.transport)[0] == "sm"]
        controls = _controls(sm)
        arms += [(ms, d, _same_link_control(d, controls) if d else None) for d in dma or [None]]
    compared = [(d, control) for _, d, control in arms if d and control]
    diffs = iter(paired_differences(compared, boot.confidence, memo))
    for ms, d, control in arms:
        diff = next(diffs) if d and control else None
        v, reason = verdict(d, control, s, diff)
        gemm = gemm_json((d or ms[0]).run)
        e = {"platform": group.key, "gpu": group.gpu_name, "premise": PREMISE, "gemm": gemm,
             "scenario": d.run.name if d else None, "link": d.run.link if d else None,
             "transfer": transfer_json(d.run, group) if d else None,
             "sm_transfer": transfer_json(control.run, group) if control else None,
             "gemm_alone_ms": d.medians["T_g"] if d else None,
             **_arm_json("", d), **_arm_json("sm_", control),
             "dma_minus_sm": diff.value if diff else None, "dma_minus_sm_ci": diff.ci_list if diff else None,
             "dma_minus_sm_ci_reason": diff.ci.reason if diff else None,
             "paired": bool(d and control and d.paired and control.paired),
             "verdict": v, "reason": reason, "rule": rule,
             "validation_ok": _validated(d.run) if d else None,
             "counters": l2_summary(d.run, boot) if d else None}
        e["evidence"] = _evidence(group, gemm, d, control, v, reason)
        entries.append(e)
    return entries


def _validated(run: MergedRun) -> bool | None:
    if not run.validations:
        return None
    return all(v.get("ok") for v in run.validations)


def _evidence(group: Group, gemm: dict, d: RunMetrics | None, c: RunMetrics | None, v: str, reason: str) -> str:
    head = f"Premise '{PREMISE}' on {group.gpu_name}: {v} ({reason})."
    if d is None:
        return head
    t = transfer_json(d.run, group)
    ov = d.overlap.value
    txt = (f"{head} GEMM {gemm['label']} slowed {_fmt(d.gemm_slowdown)} beside {t['label']} over "
           f"{t['transport']} ({t['carrier']}, {t['carrier_evidence']}); overlap "
           f"{'unknown' if ov is None else f'{ov:.0%}'}; n={d.n_reps['concurrent']} concurrent repetitions.")
    if c is not None:
        txt += f" SM control {c.run.id}: {_fmt(c.gemm_slowdown)}."
    return txt
