"""Aggregate C3 regions into one result per (GEMM shape, communication operation and size).

A result pools the regions of every rank and device. Its statistics are ratios of medians (as
``c3prof report`` computes them), each with a bootstrap interval from independent resampling of:

* the alone durations of the GEMM and of the communication operation (pooled over ranks),
* the overlapped durations of the GEMM and of the communication operation,
* the spans of the overlapped pairs.

    gemm_slowdown = median(GEMM overlapped) / median(GEMM alone), comm_slowdown likewise
    ideal = (T_g + T_c) / max(T_g, T_c) with T = median alone
    realized = (T_g + T_c) / median(pair span);  fraction_of_ideal = (realized - 1) / (ideal - 1)

Field names follow ``c3prof report`` where they mean the same thing (scenario, taxonomy, carrier,
medians_ms, ideal_speedup(_ci), realized_speedup(_ci), fraction_of_ideal, fraction_ci,
gemm_slowdown(_ci), comm_slowdown(_ci), overlap_fraction, ci_reasons, sources; n_instances).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from c3prof.analysis import speedup as formulas
from c3prof.ingest.events import CommInfo, GemmShape
from c3prof.ingest.names import json_name, short_name
from c3prof.ingest.regions import RegionSet, speedups, taxonomy
from c3prof.ingest.stats import MedianSample, quantiles, ratio_ci
from c3prof.scenarios import COMM_OPS, DTYPE_BYTES
from c3prof.units import format_bytes

# The scenario link a copy of each Kineto direction replays on (c3prof.scenarios.LINKS).
TRANSFER_LINKS = {"HtoD": "pcie_h2d", "DtoH": "pcie_d2h"}

# Fewer non-overlapped instances than this: "no reference" instead of a slowdown or speedup.
MIN_REFERENCE = 3

# Collectives c3prof capture cannot run, replayed as the nearest supported operation. Each mapping is
# stated in the output (notes, scenario tags and description).
NEAREST_OP = {
    # Same per-rank bytes on the wire in a ring, opposite direction; nccl-tests' reduce_scatter size
    # (the full input) equals all_gather's (the gathered output).
    "reduce_scatter": ("all_gather", "reduce_scatter replayed as all_gather of the same nccl-tests size "
                                     "(same bytes on the wire per rank, opposite direction, no reduction)"),
}


@dataclass
class ScenarioResult:
    scenario: str
    gemm: GemmShape | None
    comm: CommInfo
    gemm_kernels: list[str]
    comm_kernels: list[str]
    n_instances: int
    overlap_ns: int
    time_share: float
    ranks: list[int]
    n_gemm_alone: int
    n_comm_alone: int
    t_gemm_alone_ms: float | None
    t_comm_alone_ms: float | None
    taxonomy: str | None
    ideal_speedup: float | None
    ideal_speedup_ci: list[float] | None
    realized_speedup: float | None
    realized_speedup_ci: list[float] | None
    fraction_of_ideal: float | None
    fraction_ci: list[float] | None
    gemm_slowdown: float | None
    gemm_slowdown_ci: list[float] | None
    gemm_slowdown_p10_p90: list[float] | None
    comm_slowdown: float | None
    comm_slowdown_ci: list[float] | None
    comm_slowdown_p10_p90: list[float] | None
    overlap_share: float | None
    overlap_fraction: float | None
    medians_ms: dict
    sources: list[str]
    replay_op: str | None  # the c3prof comm op the scenario file uses, None if not replayable
    notes: list[str] = field(default_factory=list)
    ci_reasons: dict[str, str] = field(default_factory=dict)
    step_share: float | None = None  # overlap time / summed device spans of the traces
    flags: list[str] = field(default_factory=list)  # implausible statistics, each with its reason

    def to_json(self) -> dict:
        g = self.gemm
        return {
            "scenario": self.scenario,
            "gemm": None if g is None else {"m": g.m, "n": g.n, "k": g.k, "dtype": g.dtype, "batch": g.batch,
                                            "op": g.op, "label": g.label},
            "comm": {"op": self.comm.op, "bytes": self.comm.bytes, "group_size": self.comm.group_size,
                     "dtype": self.comm.dtype, "carrier": self.comm.carrier, "direction": self.comm.direction,
                     "label": self.comm.label},
            "gemm_kernels": [json_name(k) for k in self.gemm_kernels],
            "comm_kernels": [json_name(k) for k in self.comm_kernels],
            "n_instances": self.n_instances,
            "overlap_ms": self.overlap_ns / 1e6,
            "time_share": self.time_share,
            "step_share": self.step_share,
            "flags": self.flags,
            "ranks": self.ranks,
            "n_gemm_alone": self.n_gemm_alone,
            "n_comm_alone": self.n_comm_alone,
            "t_gemm_alone_ms": self.t_gemm_alone_ms,
            "t_comm_alone_ms": self.t_comm_alone_ms,
            "taxonomy": self.taxonomy,
            "carrier": self.comm.carrier,
            "medians_ms": self.medians_ms,
            "ideal_speedup": self.ideal_speedup,
            "ideal_speedup_ci": self.ideal_speedup_ci,
            "realized_speedup": self.realized_speedup,
            "realized_speedup_ci": self.realized_speedup_ci,
            "fraction_of_ideal": self.fraction_of_ideal,
            "fraction_ci": self.fraction_ci,
            "gemm_slowdown": self.gemm_slowdown,
            "gemm_slowdown_ci": self.gemm_slowdown_ci,
            "gemm_slowdown_p10_p90": self.gemm_slowdown_p10_p90,
            "comm_slowdown": self.comm_slowdown,
            "comm_slowdown_ci": self.comm_slowdown_ci,
            "comm_slowdown_p10_p90": self.comm_slowdown_p10_p90,
            "overlap_fraction": self.overlap_fraction,
            "overlap_share": self.overlap_share,
            "replay_op": self.replay_op,
            "sources": self.sources,
            "notes": self.notes,
            "ci_reasons": self.ci_reasons,
        }


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.+-]+", "-", text).strip("-")


def scenario_name(gemm: GemmShape | None, gemm_kernel: str, comm: CommInfo) -> str:
    if gemm is not None:
        b = f"{gemm.batch}x" if gemm.batch > 1 else ""
        g = f"{b}{gemm.m}x{gemm.n}x{gemm.k}-{gemm.dtype}"
    else:
        g = "gemm-" + _slug(short_name(gemm_kernel))[:48]
    size = format_bytes(comm.bytes) if comm.bytes > 0 else "unknown-size"
    direction = f"-{comm.direction}" if comm.direction else ""
    ranks = f"-x{comm.group_size}" if comm.group_size > 1 else ""
    return _slug(f"{g}--{comm.op}{direction}-{size}{ranks}")


def replay_op(comm: CommInfo, gemm: GemmShape | None, map_nearest: bool) -> tuple[str | None, list[str]]:
    """The c3prof comm op a result replays as, and the notes that explain any mapping or refusal."""
    notes = []
    op = comm.op
    if gemm is None:
        notes.append("GEMM shape unknown (no aten op with Input Dims linked to the kernel: was the "
                     "profiler run with record_shapes=True?): not replayable")
        return None, notes
    if gemm.dtype not in DTYPE_BYTES:
        notes.append(f"GEMM dtype {gemm.dtype} is not one c3prof capture runs ({', '.join(DTYPE_BYTES)}): not replayable")
        return None, notes
    if comm.bytes <= 0:
        notes.append("communication size unknown (no message size in the trace): not replayable")
        return None, notes
    if gemm.batch > 1:
        notes.append(f"batched GEMM ({gemm.batch} x {gemm.m}x{gemm.n}x{gemm.k}) replayed as one GEMM with "
                     f"m = {gemm.batch * gemm.m} (same FLOPs, different operand reuse)")
    if op == "transfer" and comm.direction not in TRANSFER_LINKS:
        notes.append(f"{comm.direction or 'unknown-direction'} copy: c3prof capture's transfers cross "
                     f"{', '.join(TRANSFER_LINKS.values())} only: not replayed")
        return None, notes
    if op in COMM_OPS:
        return op, notes
    if op in NEAREST_OP:
        target, why = NEAREST_OP[op]
        if map_nearest:
            notes.append(f"mapped: {why}")
            return target, notes
        notes.append(f"{op} is not a c3prof capture op; not replayed (use --map-nearest to replay it as {target})")
        return None, notes
    notes.append(f"{op} is not a c3prof capture op ({', '.join(COMM_OPS)}) and has no close equivalent: not replayed")
    return None, notes


def summarize(region_set: RegionSet, *, map_nearest: bool = True,
              sources: dict[int, str] | None = None, step_ns: int = 0) -> list[ScenarioResult]:
    """One result per (GEMM shape, communication label), largest overlapped time first."""
    rs, ops = region_set, region_set.ops
    if rs.n_regions == 0:
        return []
    # Scenario key of each identity: the GEMM shape (or kernel, without a shape), the comm info.
    gemm_keys: dict = {}
    comm_keys: dict = {}
    g_key = np.array([gemm_keys.setdefault(i.gemm if i.gemm is not None else ("kernel", i.kernel), len(gemm_keys))
                      for i in ops.identities], dtype=np.int64)
    c_key = np.array([comm_keys.setdefault(i.comm, len(comm_keys)) for i in ops.identities], dtype=np.int64)
    pair_key = g_key[ops.ident[rs.gemm_idx]] * (len(comm_keys) + 1) + c_key[ops.ident[rs.comm_idx]]
    order = np.argsort(pair_key, kind="stable")
    cuts = np.nonzero(np.diff(pair_key[order]))[0] + 1
    total_overlap = int(rs.overlap_ns.sum()) or 1
    # (rank, identity) of every op, to find the alone instances of the same operations.
    op_key = ops.rank * (len(ops.identities) + 1) + ops.ident
    alone_keys, alone_durs = op_key[rs.alone_mask], ops.dur_ns[rs.alone_mask]
    results = [_summarize_group(sel, rs, op_key, alone_keys, alone_durs, total_overlap, map_nearest, sources or {})
               for sel in np.split(order, cuts)]
    for r in results:
        r.step_share = r.overlap_ns / step_ns if step_ns > 0 else None
        r.flags = sanity_flags(r)
    results.sort(key=lambda r: (-r.overlap_ns, r.scenario))
    _dedupe_names(results)
    return results


def _summarize_group(sel: np.ndarray, rs: RegionSet, op_key: np.ndarray, alone_keys: np.ndarray,
                     alone_durs: np.ndarray, total_overlap: int, map_nearest: bool,
                     sources: dict[int, str]) -> ScenarioResult:
    ops = rs.ops
    g_ops = np.unique(rs.gemm_idx[sel])
    c_ops = np.unique(rs.comm_idx[sel])
    g_ident = ops.identities[int(ops.ident[g_ops[0]])]
    c_ident = ops.identities[int(ops.ident[c_ops[0]])]
    gemm, comm = g_ident.gemm, c_ident.comm
    assert comm is not None, "every collective or transfer op carries a CommInfo (classify._identify)"
    name = scenario_name(gemm, g_ident.kernel, comm)
    key = (name,)
    overlap, span = rs.overlap_ns[sel], rs.span_ns[sel]
    g_dur_pair, c_dur_pair = ops.dur_ns[rs.gemm_idx[sel]], ops.dur_ns[rs.comm_idx[sel]]
    g_alone = MedianSample(alone_durs[np.isin(alone_keys, op_key[g_ops])], key + ("gemm_alone",))
    c_alone = MedianSample(alone_durs[np.isin(alone_keys, op_key[c_ops])], key + ("comm_alone",))
    g_cc = MedianSample(ops.dur_ns[g_ops], key + ("gemm_cc",))
    c_cc = MedianSample(ops.dur_ns[c_ops], key + ("comm_cc",))
    span_s = MedianSample(span, key + ("span",))
    overlap_ns = int(overlap.sum())
    notes = _reference_notes(g_alone, c_alone)
    r = _ratios(g_alone, c_alone, g_cc, c_cc, span_s)
    have_g, have_c, t_g, t_c = r["have_g"], r["have_c"], g_alone.median, c_alone.median
    gemm_slowdown, comm_slowdown = r["gemm_slowdown"], r["comm_slowdown"]
    op, replay_notes = replay_op(comm, gemm, map_nearest)
    notes.extend(replay_notes)
    ranks = sorted(int(r) for r in np.unique(ops.rank[g_ops]))
    return ScenarioResult(
        scenario=name, gemm=gemm, comm=comm,
        gemm_kernels=sorted({ops.identities[int(i)].kernel for i in np.unique(ops.ident[g_ops])}),
        comm_kernels=sorted({ops.identities[int(i)].kernel for i in np.unique(ops.ident[c_ops])}),
        n_instances=int(len(sel)), overlap_ns=overlap_ns, time_share=overlap_ns / total_overlap, ranks=ranks,
        n_gemm_alone=g_alone.n, n_comm_alone=c_alone.n,
        t_gemm_alone_ms=t_g / 1e6 if have_g else None, t_comm_alone_ms=t_c / 1e6 if have_c else None,
        taxonomy=r["taxonomy"], ideal_speedup=r["ideal"], ideal_speedup_ci=r["ideal_ci"],
        realized_speedup=r["realized"], realized_speedup_ci=r["realized_ci"],
        fraction_of_ideal=r["fraction"], fraction_ci=r["fraction_ci"],
        gemm_slowdown=gemm_slowdown, gemm_slowdown_ci=r["gemm_slowdown_ci"],
        gemm_slowdown_p10_p90=quantiles(g_cc.values / t_g) if gemm_slowdown is not None else None,
        comm_slowdown=comm_slowdown, comm_slowdown_ci=r["comm_slowdown_ci"],
        comm_slowdown_p10_p90=quantiles(c_cc.values / t_c) if comm_slowdown is not None else None,
        overlap_share=float(np.median(overlap / np.maximum(1, np.minimum(g_dur_pair, c_dur_pair)))),
        # as c3prof report: the share of the GEMM's interval during which the communication ran
        overlap_fraction=float(np.median(overlap / np.maximum(1, g_dur_pair))),
        medians_ms={"gemm": t_g / 1e6 if have_g else None, "comm": t_c / 1e6 if have_c else None,
                    "gemm_concurrent": g_cc.median / 1e6, "comm_concurrent": c_cc.median / 1e6,
                    "concurrent": span_s.median / 1e6},
        sources=sorted({sources.get(r, str(r)) for r in ranks}),
        replay_op=op, notes=notes, ci_reasons=r["ci_reasons"],
    )


def _ratios(g_alone: MedianSample, c_alone: MedianSample, g_cc: MedianSample, c_cc: MedianSample,
            span_s: MedianSample) -> dict:
    """Speedups, slowdowns and their intervals of one scenario; None where a reference is missing."""
    ci_reasons: dict[str, str] = {}

    def ci(name_: str, fn, *samples):
        c = ratio_ci(fn, *samples)
        if not c.ok:
            ci_reasons[name_] = c.reason or "no interval"
        return c.as_list()

    have_g, have_c = g_alone.n >= MIN_REFERENCE, c_alone.n >= MIN_REFERENCE
    t_g, t_c = g_alone.median, c_alone.median
    out: dict = {"have_g": have_g, "have_c": have_c, "ci_reasons": ci_reasons,
                 "gemm_slowdown": g_cc.median / t_g if have_g and t_g > 0 else None,
                 "comm_slowdown": c_cc.median / t_c if have_c and t_c > 0 else None,
                 **dict.fromkeys(("ideal", "realized", "fraction", "taxonomy", "ideal_ci", "realized_ci",
                                  "fraction_ci"))}
    if have_g and have_c and t_g > 0 and t_c > 0:
        out["ideal"], out["realized"], out["fraction"] = speedups(t_g, t_c, span_s.median)
        out["taxonomy"] = taxonomy(t_g, t_c)
        out["ideal_ci"] = ci("ideal_speedup", lambda g, c: formulas.ideal(g + c, g, c), g_alone, c_alone)
        out["realized_ci"] = ci("realized_speedup", lambda g, c, s: formulas.realized(g + c, s),
                                g_alone, c_alone, span_s)
        out["fraction_ci"] = ci("fraction_of_ideal", lambda g, c, s: formulas.fraction(g + c, g, c, s),
                                g_alone, c_alone, span_s)
    out["gemm_slowdown_ci"] = (ci("gemm_slowdown", formulas.ratio, g_cc, g_alone)
                               if out["gemm_slowdown"] is not None else None)
    out["comm_slowdown_ci"] = (ci("comm_slowdown", formulas.ratio, c_cc, c_alone)
                               if out["comm_slowdown"] is not None else None)
    return out


def _reference_notes(g_alone: MedianSample, c_alone: MedianSample) -> list[str]:
    """"No reference" for a side with fewer than MIN_REFERENCE non-overlapped instances."""
    return [f"no reference: {sample.n} non-overlapped instance(s) of this {side} in the trace (fewer than "
            f"{MIN_REFERENCE}): its slowdown and the speedups are not computed"
            for side, sample in (("GEMM", g_alone), ("communication", c_alone)) if sample.n < MIN_REFERENCE]


def _dedupe_names(results: list[ScenarioResult]) -> None:
    seen: dict[str, int] = {}
    for r in results:
        if r.scenario in seen:
            seen[r.scenario] += 1
            r.scenario = f"{r.scenario}-{seen[r.scenario]}"
        else:
            seen[r.scenario] = 1


# Bounds beyond which a statistic is shown with a flag saying why it cannot be taken at face value.
SLOWDOWN_HIGH = 5.0
SLOWDOWN_LOW = 0.5
FRACTION_RANGE = (-1.0, 1.5)


def sanity_flags(r: ScenarioResult) -> list[str]:
    """Reasons to distrust a result's statistics (empty: nothing implausible)."""
    flags = []
    for side, v in (("GEMM", r.gemm_slowdown), ("communication", r.comm_slowdown)):
        if v is None:
            continue
        if v > SLOWDOWN_HIGH:
            why = (" (a collective kernel's time includes waiting for its peers; overlapped instances may wait "
                   "longer)" if side == "communication" else "")
            flags.append(f"{side} slowdown {v:.2f} > {SLOWDOWN_HIGH:g}: the alone instances are probably not "
                         f"comparable to the overlapped ones{why}")
        elif v < SLOWDOWN_LOW:
            flags.append(f"{side} slowdown {v:.2f} < {SLOWDOWN_LOW:g}: faster while overlapped, so the alone "
                         "instances are not comparable (different input, or warm-up)")
    f = r.fraction_of_ideal
    if f is not None and not FRACTION_RANGE[0] <= f <= FRACTION_RANGE[1]:
        flags.append(f"fraction of ideal {f:.2f} outside [{FRACTION_RANGE[0]:g}, {FRACTION_RANGE[1]:g}]: the pair's "
                     "span is not explained by the alone durations (partial overlap or incomparable references)")
    if r.realized_speedup is not None and r.ideal_speedup is not None and r.realized_speedup > 1.05 * r.ideal_speedup:
        flags.append(f"realized speedup {r.realized_speedup:.2f} above the ideal {r.ideal_speedup:.2f}: the "
                     "overlapped instances ran faster than the alone ones")
    return flags
