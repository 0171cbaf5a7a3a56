"""What ``c3prof advise`` advises on, each turned into prediction inputs (c3prof.advise.predict.Inputs).

- a scenario file (``.toml``, e.g. the ``scenarios.toml`` that ``c3prof ingest`` writes) or a
  built-in suite (``--suite``): isolated times from the fitted rate model;
- a trace (``.jsonl``): isolated times from each scenario's base run;
- a report JSON (``c3prof report --json``): isolated times from each base row's medians;
- an ingest JSON (``c3prof ingest``'s ``ingest.json``): the GEMM time measured alone in the traced
  job, the transfer's SM-carrier time from the rate model (the job may have used copy engines), and
  the overlapped time the job saw (``Region``), for the time-saved estimate.

Only single-GPU transfers are advised (the training captures hold no collective); other scenarios
are skipped with a note.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from c3prof.advise.data import measured_set
from c3prof.advise.fit import capture_inputs
from c3prof.advise.model import RateModel
from c3prof.advise.predict import Inputs
from c3prof.errors import C3profError
from c3prof.inputs import check_input_file, foreign_kind
from c3prof.scenarios import LINKS, CommSpec, GemmSpec, Scenario, load_scenario_file, load_suite

RATE_SOURCE = "rate model"
MAX_JSON_BYTES = 1 << 30
INGEST_LINKS = {"HtoD": "pcie_h2d", "DtoH": "pcie_d2h"}   # as c3prof.ingest.summary.TRANSFER_LINKS


@dataclass(frozen=True)
class Region:
    """A C3 region of a traced job: how often it ran and the overlapped time it took there."""

    instances: int
    steps: int | None          # ProfilerStep count of the trace (None: unannotated, the trace is one step)
    t_cc_ms: float             # median concurrent time in the trace
    carrier: str


@dataclass(frozen=True)
class Target:
    inputs: Inputs
    region: Region | None = None


def _rated(name: str, gemm: GemmSpec, comm: CommSpec, rates: RateModel, t_g: float | None = None) -> Inputs | str:
    t_c = rates.t_c(comm, "sm")
    if t_c is None:
        return f"{name}: no training transfer over {comm.link} to rate it"
    return Inputs(name=name, gemm=gemm, comm=comm, t_g=rates.t_g(gemm) if t_g is None else t_g, t_c=t_c,
                  source=RATE_SOURCE if t_g is None else "trace (GEMM) + rate model (transfer)")


def from_scenarios(scenarios: list[Scenario], rates: RateModel, notes: list[str]) -> list[Target]:
    out = []
    for s in scenarios:
        if s.comm.op != "transfer":
            notes.append(f"{s.name}: {s.comm.op} skipped (advise covers single-GPU transfers)")
            continue
        got = _rated(s.name, s.gemm, s.comm, rates)
        if isinstance(got, str):
            notes.append(got)
        else:
            out.append(Target(got))
    return out


def _read_json(path: Path) -> dict:
    check_input_file(path, "JSON file", MAX_JSON_BYTES)
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError) as exc:
        raise C3profError(f"{path}: not a readable JSON file ({exc})") from None
    if not isinstance(data, dict):
        raise C3profError(f"{path}: JSON is not an object; expected a c3prof report or ingest JSON")
    return data


def from_report(data: dict, path: Path, notes: list[str]) -> list[Target]:
    out, seen = [], set()
    for row in data.get("results") or []:
        name = row.get("scenario")
        if row.get("strategy") != "base" or name in seen or row.get("link") not in LINKS:
            continue
        seen.add(name)
        try:
            g, med = row["gemm"], row["medians_ms"]
            gemm = GemmSpec(m=int(g["m"]), n=int(g["n"]), k=int(g["k"]), dtype=str(g.get("dtype", "bf16")))
            comm = CommSpec(op="transfer", bytes=int(row["comm"]["bytes"]), link=row["link"])
            out.append(Target(Inputs(name, gemm, comm, float(med["T_g"]), float(med["T_c"]), "report (base medians)")))
        except (KeyError, TypeError, ValueError) as exc:
            raise C3profError(f"{path}: result row of {name!r} lacks {exc} (not a c3prof report?)") from None
    if not out:
        raise C3profError(f"{path}: no base transfer result in this report to advise on")
    notes.append(f"{path}: chunk sizes are not in a report; each transfer is taken as one copy")
    return out


def _ingest_target(r: dict, steps: int | None, rates: RateModel, notes: list[str]) -> Target | None:
    g, c = r.get("gemm") or {}, r.get("comm") or {}
    if r.get("replay_op") != "transfer" or c.get("direction") not in INGEST_LINKS or not g:
        notes.append(f"{r.get('scenario')}: not a host<->device transfer beside a GEMM; no advice")
        return None
    gemm = GemmSpec(m=int(g["m"]) * int(g.get("batch", 1)), n=int(g["n"]), k=int(g["k"]), dtype=str(g["dtype"]))
    comm = CommSpec(op="transfer", bytes=int(c["bytes"]), link=INGEST_LINKS[c["direction"]])
    got = _rated(str(r["scenario"]), gemm, comm, rates, t_g=float(r["t_gemm_alone_ms"]))
    if isinstance(got, str):
        notes.append(got)
        return None
    region = Region(instances=int(r["n_instances"]), steps=steps,
                    t_cc_ms=float(r["medians_ms"]["concurrent"]), carrier=str(r.get("carrier", "")))
    return Target(got, region)


def from_ingest(data: dict, path: Path, rates: RateModel, notes: list[str]) -> list[Target]:
    steps = [int((i.get("hta") or {}).get("n_profiler_steps") or 0) for i in data.get("inputs") or []]
    n_steps = max(steps) if steps and max(steps) >= 2 else None
    out = []
    for r in data.get("results") or []:
        try:
            t = _ingest_target(r, n_steps, rates, notes)
        except (KeyError, TypeError, ValueError) as exc:
            raise C3profError(f"{path}: result {r.get('scenario')!r} lacks {exc} (not a c3prof ingest JSON?)") from None
        if t is not None:
            out.append(t)
    return out


def targets(paths: list[str], suite: str | None, rates: RateModel, notes: list[str]) -> list[Target]:
    out: list[Target] = []
    if suite:
        out += from_scenarios(load_suite(suite), rates, notes)
    for p in map(Path, paths):
        if p.suffix == ".toml":
            out += from_scenarios(load_scenario_file(p), rates, notes)
        elif p.suffix == ".jsonl" or p.is_dir():
            out += [Target(capture_inputs(s)) for s in measured_set([str(p)]).scenarios]
        elif p.suffix == ".json":
            data = _read_json(p)
            kind = data.get("format") or data.get("schema")
            if kind == "c3prof-ingest":
                out += from_ingest(data, p, rates, notes)
            elif kind == "c3prof-report":
                out += from_report(data, p, notes)
            else:
                what = foreign_kind(p)
                raise C3profError(f"{p}: neither a c3prof report JSON nor an ingest JSON"
                                  + (f": {what}" if what else f" (format {kind!r})"))
        else:
            raise C3profError(f"{p}: unknown input kind; give a scenario file (.toml), a trace (.jsonl), "
                              "a report or ingest JSON (.json)")
    return out
