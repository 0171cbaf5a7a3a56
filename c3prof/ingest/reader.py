"""Read one Kineto trace file (plain or gzip JSON) into a :class:`KinetoTrace`, streaming.

The file is fed to the compiled scanner (c3prof.ingest._kineto) in chunks (CHUNK_BYTES), so memory
holds one chunk plus the kept events, never the document. gzip is decompressed incrementally with
zlib (a truncated gzip file yields what was decompressed before the cut). If the extension is not
built, reading fails with a message that says how to build it: there is no silent fallback to a
slow reader.
"""

from __future__ import annotations

import json
import os
import zlib

import numpy as np
from pathlib import Path
from typing import Callable, Iterator

from c3prof.ingest.classify import keep_cpu_op
from c3prof.ingest.errors import KinetoTraceError, ScannerMissingError
from c3prof.ingest.events import KinetoTrace
from c3prof.inputs import GZIP_MAGIC, foreign_kind

MISSING_DURATION = np.iinfo(np.int64).min  # the scanner's marker (c3prof.ingest._kineto.MISSING_DURATION)

# Small chunks: the allocator reuses their memory from one chunk to the next, where 8 MiB chunks got
# fresh pages each time (16k page faults, a third of the read's time, on a 35 MB trace), and a
# chunk is still in cache when the scanner reads it. A huge event still grows the chunk (_chunk_size).
CHUNK_BYTES = 256 << 10
# Both readers' error for JSON without the array (the streaming one names a known other kind first).
NO_TRACE_EVENTS = "not a Kineto trace (the JSON object has no 'traceEvents' array)"


def _scanner_class():
    try:
        from c3prof.ingest._kineto import KinetoScanner
    except ImportError as exc:
        raise ScannerMissingError(
            f"the Kineto scanner extension c3prof.ingest._kineto is not built ({exc}); build it with "
            "'python setup.py build_ext --inplace' or 'pip install -e .'"
        ) from None
    return KinetoScanner


def _chunk_size(scanner) -> int:
    """CHUNK_BYTES, or as much as the scanner already holds of an unfinished event: a huge event
    (a 300 MB kernel name) is then re-parsed a logarithmic, not linear, number of times."""
    return max(CHUNK_BYTES, int(scanner.pending)) if scanner is not None else CHUNK_BYTES


def _plain_chunks(f, scanner=None) -> Iterator[bytes]:
    while True:
        chunk = f.read(_chunk_size(scanner))
        if not chunk:
            return
        yield chunk


class _GzipChunks:
    """Decompress a (possibly multi-member, possibly truncated) gzip stream chunk by chunk."""

    def __init__(self, f, scanner=None):
        self.f = f
        self.scanner = scanner
        self.cut_short = False

    def __iter__(self) -> Iterator[bytes]:
        d = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        member_started = False
        while True:
            raw = self.f.read(CHUNK_BYTES // 4)
            if not raw:
                break
            while raw:
                member_started = True
                try:
                    out = d.decompress(raw, _chunk_size(self.scanner))
                except zlib.error as exc:
                    raise KinetoTraceError(f"{self.f.name}: corrupt gzip data: {exc}") from None
                if out:
                    yield out
                if d.eof:
                    # Another gzip member may follow (concatenated .gz files are valid gzip).
                    raw = d.unused_data
                    d = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
                    member_started = False
                else:
                    raw = d.unconsumed_tail
        tail = d.flush()
        if tail:
            yield tail
        # Input ended inside a member: the file was cut (its complete events are still used).
        self.cut_short = member_started and not d.eof


def read_kineto(path: str | os.PathLike, *, on_progress: Callable[[int], None] | None = None) -> KinetoTrace:
    """Stream-read ``path``. A truncated document is read up to the cut, with a warning in the result.

    Raises KinetoTraceError (a C3profError) for unreadable files and invalid JSON.
    """
    scanner_cls = _scanner_class()
    from c3prof.ingest._kineto import KinetoSyntaxError

    path = Path(path)
    try:
        f = open(path, "rb")
    except OSError as exc:
        raise KinetoTraceError(f"{path}: cannot read trace: {exc.strerror or exc}") from None
    scanner = scanner_cls(keep_cpu_op)
    warnings: list[str] = []
    gz = None
    with f:
        is_gzip = f.read(2) == GZIP_MAGIC
        f.seek(0)
        if is_gzip:
            gz = _GzipChunks(f, scanner)
            chunks = iter(gz)
        else:
            chunks = _plain_chunks(f, scanner)
        fed = 0
        try:
            for chunk in chunks:
                scanner.feed(chunk)
                fed += len(chunk)
                if on_progress is not None:
                    on_progress(fed)
            scanner.finish()
        except KinetoSyntaxError as exc:
            raise _not_kineto(path, f"{path}: not valid Kineto JSON at byte {exc.offset}: {exc}") from None
    if gz is not None and gz.cut_short:
        warnings.append(f"{path}: the gzip stream ends early (truncated file)")
    cols = scanner.columns()
    if not scanner.saw_trace_events:
        if scanner.truncated:
            raise KinetoTraceError(f"{path}: truncated before its 'traceEvents' array (read {fed} bytes)")
        raise _not_kineto(path, f"{path}: {NO_TRACE_EVENTS}")
    if scanner.truncated:
        warnings.append(
            f"{path}: the JSON ends early (truncated at byte {fed}); analyzing the "
            f"{scanner.events_seen} events read before the cut"
        )
    return _to_trace(str(path), cols, truncated=bool(scanner.truncated), bytes_read=fed,
                     events_seen=int(scanner.events_seen), warnings=warnings)


def _not_kineto(path: Path, otherwise: str) -> KinetoTraceError:
    """The error for a file the Kineto reader refused: named by its kind when it is another known
    file (a c3prof trace or report: inputs.foreign_kind, which names the command that reads it),
    else ``otherwise``."""
    kind = foreign_kind(path, expected=("gzip", "kineto"))
    return KinetoTraceError(f"{path}: not a Kineto trace but {kind}" if kind else otherwise)


def read_kineto_reference(path: str | os.PathLike) -> KinetoTrace:
    """The pure-Python reader (json.load of the whole file): for tests that compare the two."""
    import gzip

    from c3prof.ingest._kineto_py import read_columns

    path = Path(path)
    with open(path, "rb") as f:   # the first two bytes tell, not a read of the whole file
        opener = gzip.open if f.read(2) == GZIP_MAGIC else open
    with opener(path, "rb") as f:
        doc = json.load(f)
    if not isinstance(doc, dict) or "traceEvents" not in doc:
        raise KinetoTraceError(f"{path}: {NO_TRACE_EVENTS}")
    cols = read_columns(doc, keep_cpu_op)
    return _to_trace(str(path), cols, truncated=False, bytes_read=0,
                     events_seen=len(doc.get("traceEvents", [])), warnings=[])


def _to_trace(path: str, cols: dict, *, truncated: bool, bytes_read: int, events_seen: int,
              warnings: list[str]) -> KinetoTrace:
    top = cols["top_level"]
    metadata = {}
    for key, raw in top.items():
        if key == "traceEvents":
            continue
        try:
            metadata[key] = json.loads(raw)
        except ValueError:
            metadata[key] = None
    args = [_loads_args(raw) for raw in cols["args"]]
    return KinetoTrace(path=path, names=cols["names"], gpu=cols["gpu"], launch=cols["launch"], cpu=cols["cpu"],
                       args=args, metadata=metadata, truncated=truncated,
                       bytes_read=bytes_read, events_seen=events_seen, warnings=warnings,
                       duration_issues=_fix_durations(cols["gpu"]["dur_ns"]))


def _fix_durations(dur: np.ndarray) -> dict[str, int]:
    """Count zero, negative and missing GPU durations, and set the latter two to 0 (in place), so
    that an activity without a valid duration overlaps nothing but is still counted."""
    missing = dur == MISSING_DURATION
    negative = (dur < 0) & ~missing
    issues = {"zero": int(np.count_nonzero(dur == 0)), "negative": int(np.count_nonzero(negative)),
              "missing": int(np.count_nonzero(missing))}
    dur[missing | negative] = 0
    return {k: v for k, v in issues.items() if v}


def _loads_args(raw: bytes) -> dict:
    try:
        value = json.loads(raw)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
