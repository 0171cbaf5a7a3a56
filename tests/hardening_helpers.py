"""Helpers of the hardening tests: call the CLI in-process, check one-line errors, edit trace records.

Traces are derived from the committed SYNTHETIC trace (tests/data/synthetic_small.jsonl).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
from dataclasses import dataclass
from pathlib import Path

from c3prof.cli import main

DATA = Path(__file__).resolve().parent / "data"
SYNTHETIC = DATA / "synthetic_small.jsonl"
KINETO = DATA / "synthetic_kineto_rank0.json"


@dataclass
class Result:
    rc: int
    out: str
    err: str


def cli(*argv: str) -> Result:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main([str(a) for a in argv])
        except SystemExit as exc:
            rc = exc.code if isinstance(exc.code, int) else 2
    return Result(rc, out.getvalue(), err.getvalue())


def one_line_error(result: Result, *needles: str) -> str:
    """Assert exit status 2 and exactly one line on stderr holding every needle; return the line."""
    lines = [ln for ln in result.err.splitlines() if ln.strip()]
    assert result.rc == 2, (result.rc, result.err)
    assert len(lines) == 1, result.err
    assert "Traceback" not in result.err
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]


def sha(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def trace_lines() -> list[str]:
    return SYNTHETIC.read_text().splitlines()


def first(kind: str) -> int:
    """Index of the first record of ``kind`` in the synthetic trace."""
    return next(i for i, ln in enumerate(trace_lines()) if json.loads(ln)["record"] == kind)


def write_edited(tmp_path: Path, index: int, text: str, name: str = "t.jsonl") -> Path:
    """The synthetic trace with line ``index`` replaced by ``text`` (verbatim: may hold NaN tokens)."""
    lines = trace_lines()
    lines[index] = text
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogatepass")
    return p


def edited_record(index: int, edit) -> str:
    """Line ``index`` as a dict, passed through ``edit(rec)``, serialized back."""
    rec = json.loads(trace_lines()[index])
    edit(rec)
    return json.dumps(rec)
