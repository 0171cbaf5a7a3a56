"""What ``c3prof ingest`` is given: trace files and tensorboard_trace_handler directories, of one job.

* A directory is read as ``torch.profiler.tensorboard_trace_handler`` writes it: one
  ``WORKER.TIMESTAMP.pt.trace.json[.gz]`` file per worker and capture (plain ``*.json``/``*.json.gz``
  files when there is no ``.pt.trace.`` file). A worker captured several times keeps its newest
  capture (the largest timestamp); the others are named in a note.
* Every file is checked before it is opened (c3prof.inputs, as for report): a FIFO, a device or a
  file above the size limit is refused (one line, exit 2) rather than read.
* Traces of different jobs are refused before anything is merged: their ``distributedInfo``
  (world size, backend) or GPU model (``deviceProperties``) differ.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from c3prof.ingest.errors import KinetoTraceError
from c3prof.ingest.events import KinetoTrace
from c3prof.inputs import TRACE_MAX_BYTES, check_input_file

_TB_FILE = re.compile(r"^(?P<worker>.+?)(?:\.(?P<stamp>\d+))?\.pt\.trace\.json(?:\.gz)?$")


def _trace_files(directory: Path) -> list[Path]:
    try:
        entries = sorted(p for p in directory.iterdir() if p.is_file())
    except OSError as exc:
        raise KinetoTraceError(f"{directory}: cannot list directory: {exc.strerror or exc}") from None
    tb = [p for p in entries if _TB_FILE.match(p.name)]
    if tb:
        return tb
    return [p for p in entries if p.name.endswith((".json", ".json.gz"))]


def _newest_per_worker(files: list[Path]) -> tuple[list[Path], list[str]]:
    by_worker: dict[str, list[tuple[int, Path]]] = {}
    for p in files:
        m = _TB_FILE.match(p.name)
        worker = m.group("worker") if m else p.name
        stamp = int(m.group("stamp")) if m and m.group("stamp") else -1
        by_worker.setdefault(worker, []).append((stamp, p))
    keep, notes = [], []
    for worker, items in sorted(by_worker.items()):
        items.sort()
        keep.append(items[-1][1])
        if len(items) > 1:
            older = ", ".join(p.name for _, p in items[:-1])
            notes.append(f"{items[-1][1].parent}: worker {worker!r} was captured {len(items)} times; using its "
                         f"newest capture {items[-1][1].name} (not {older}; pass files explicitly to choose)")
    return keep, notes


def expand_inputs(paths: list[str | os.PathLike]) -> tuple[list[Path], list[str]]:
    """Trace files to read (directories expanded), and notes on what a directory's choice left out."""
    files: list[Path] = []
    notes: list[str] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            found = _trace_files(p)
            if not found:
                raise KinetoTraceError(f"{p}: no *.json or *.json.gz trace files in this directory "
                                       "(tensorboard_trace_handler writes WORKER.TIMESTAMP.pt.trace.json[.gz])")
            chosen, why = _newest_per_worker(found)
            files += chosen
            notes += why
        else:
            files.append(p)
    for f in files:  # FIFOs, devices and huge files are refused before anything is read
        check_input_file(f, "trace file", TRACE_MAX_BYTES, KinetoTraceError)
    return files, notes


def _job_facts(t: KinetoTrace) -> dict[str, object]:
    facts: dict[str, object] = {}
    info = t.metadata.get("distributedInfo")
    if isinstance(info, dict):
        for key in ("world_size", "backend"):
            if isinstance(info.get(key), (int, str)) and not isinstance(info.get(key), bool):
                facts[key] = info[key]
    props = t.metadata.get("deviceProperties")
    if isinstance(props, list):
        models = sorted({str(d.get("name")) for d in props if isinstance(d, dict) and d.get("name")})
        if models:
            facts["GPU model"] = ", ".join(models)
    return facts


def check_same_job(traces: list[KinetoTrace]) -> None:
    """Refuse traces of different jobs, naming the first fact that differs (one line)."""
    seen: dict[str, tuple[object, str]] = {}
    for t in traces:
        for key, value in _job_facts(t).items():
            if key in seen and seen[key][0] != value:
                first_value, first_path = seen[key]
                raise KinetoTraceError(
                    f"traces of different jobs: {first_path} has {key} {first_value!r}, {t.path} has {value!r}; "
                    "ingest the ranks of one job together")
            seen.setdefault(key, (value, t.path))
