"""Turn ingest results into a c3prof scenario file that ``c3prof capture --scenarios`` replays.

One scenario per distinct (GEMM, communication) pair that c3prof capture can run, weighted by its
share of the trace's overlapped GEMM+communication time (Scenario.weight). Results that map to the
same scenario (a reduce_scatter mapped to an all_gather of the same size beside the same GEMM) are
merged and their weights added. The TOML is written by c3prof.scenarios.dump_scenarios and read back
with parse_scenarios before it is written, so a file that capture would reject is never produced.
"""

from __future__ import annotations

from pathlib import Path

from c3prof.ingest.summary import ScenarioResult
from c3prof.scenarios import CommSpec, GemmSpec, Scenario, dump_scenarios, parse_scenarios


def build_scenarios(results: list[ScenarioResult], sources: list[str]) -> list[Scenario]:
    merged: dict[tuple, dict] = {}
    for r in results:
        if r.replay_op is None or r.gemm is None:
            continue
        g = r.gemm
        spec = GemmSpec(m=g.m * g.batch, n=g.n, k=g.k, dtype=g.dtype)
        comm = CommSpec(op=r.replay_op, bytes=r.comm.bytes)
        entry = merged.setdefault((spec, comm), {"results": [], "weight": 0.0})
        entry["results"].append(r)
        entry["weight"] += r.time_share
    scenarios = []
    names: set[str] = set()
    for (spec, comm), entry in merged.items():
        rs: list[ScenarioResult] = entry["results"]
        first = rs[0]
        name = first.scenario
        while name in names:
            name += "-b"
        names.add(name)
        tags = ["ingested"]
        if first.taxonomy:
            tags.append(first.taxonomy)
        for r in rs:
            if r.replay_op != r.comm.op:
                tags.append(f"mapped-from:{r.comm.op}")
            if r.gemm is not None and r.gemm.batch > 1:
                tags.append("batch-folded")
        description = "; ".join(
            f"{r.comm.label} beside {r.gemm.label}: {r.n_instances} overlapped instances, "
            f"{r.overlap_ns / 1e6:.3f} ms ({100 * r.time_share:.1f}% of overlapped time)"
            + (f", fraction of ideal {r.fraction_of_ideal:.2f}" if r.fraction_of_ideal is not None else "")
            + "".join(f"; {n}" for n in r.notes if n.startswith("mapped") or n.startswith("batched"))
            for r in rs
        )
        weight = float(f"{max(entry['weight'], 1e-9):.6g}")
        scenarios.append(Scenario(name=name, gemm=spec, comm=comm, tags=tuple(dict.fromkeys(tags)),
                                  description=description, weight=weight))
    scenarios.sort(key=lambda s: -s.weight)
    return scenarios


def write_scenarios(scenarios: list[Scenario], path: Path, sources: list[str]) -> str:
    description = ("Scenarios found by c3prof ingest in " + ", ".join(sources) +
                   "; weight = share of the overlapped GEMM+communication time")
    text = dump_scenarios(scenarios, description=description)
    parse_scenarios(text, str(path))  # refuse to write what capture would not read
    path.write_text(text)
    return text
