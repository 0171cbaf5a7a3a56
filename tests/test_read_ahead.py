"""Reading a large trace's second part before the report's imports (c3prof/read_ahead.py): the
command line glanced at, the part used only for the file it was read from, the same Trace and the
same report as without it, the child stopped when its part is not taken, and the reader importable
without numpy (the point of starting so early).

The traces read here are the committed H200 captures (tests/data), read in parts as a 4 MB trace
would be: trace_parts.MIN_BYTES is lowered for the test, in this process and in the subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from c3prof import forked, read_ahead, trace, trace_parts
from c3prof.errors import TraceError
from trace_helpers import trace_contents

if trace._trace_read is None or not forked.can_fork() or not sys.platform.startswith("linux"):
    pytest.skip("needs the compiled reader, fork and Linux", allow_module_level=True)

DATA = Path(__file__).parent / "data"
SMOKE = DATA / "h200_smoke.jsonl"


@pytest.fixture
def small_parts(monkeypatch):
    """Any trace is large enough to be read in parts."""
    monkeypatch.setattr(trace_parts, "MIN_BYTES", 1)
    monkeypatch.setattr(forked, "available_cpus", lambda: 2)
    monkeypatch.setattr(read_ahead.os, "sched_getaffinity", lambda pid: {0, 1})


# -- the command line ---------------------------------------------------------------------------------

@pytest.mark.parametrize("args, found", [
    (["{t}"], True), (["{t}", "-q", "-o", "out.json"], True), (["--json=out.json", "{t}"], True),
    (["-j", "auto", "{t}"], True), (["--jobs", "3", "{t}"], True), (["-j2", "{t}"], True), (["--", "{t}"], True),
    (["-q", "--split-by", "trace", "{t}"], True),
    (["-j", "1", "{t}"], False), (["-j1", "{t}"], False), (["--jobs=1", "{t}"], False), (["--jo", "1", "{t}"], False),
    (["-j", "many", "{t}"], False), (["{t}", "-j"], False), (["{t}", "--help"], False), (["{t}", "{t}"], False),
    (["{small}"], False), (["{dir}"], False), (["missing.jsonl"], False),
])
def test_the_trace_to_read_is_the_one_large_file_named(small_parts, monkeypatch, tmp_path, args, found):
    monkeypatch.setattr(trace_parts, "MIN_BYTES", SMOKE.stat().st_size)
    small = tmp_path / "small.jsonl"
    small.write_bytes(b"{}\n")
    argv = ["report", *(a.format(t=SMOKE, small=small, dir=DATA) for a in args)]
    assert read_ahead.trace_to_read(argv) == (str(SMOKE) if found else None)


def test_an_option_value_is_never_the_trace(small_parts):
    assert read_ahead.trace_to_read(["report", "--perfetto", str(SMOKE), str(DATA / "h200_default_1.jsonl")]) \
        == str(DATA / "h200_default_1.jsonl")
    assert read_ahead.trace_to_read(["ingest", str(SMOKE)]) is None


def test_the_options_that_take_a_value_are_reports_own():
    """VALUE_OPTIONS is the report parser's options that take a value (it cannot be imported that early)."""
    from c3prof.cli import build_parser

    parser = build_parser(only="report").commands["report"]
    taking = {s for a in parser._actions if a.option_strings and a.nargs != 0 for s in a.option_strings}
    assert read_ahead.VALUE_OPTIONS == taking - {"-h", "--help"}


# -- the part read ahead --------------------------------------------------------------------------------

@pytest.mark.parametrize("path", sorted(DATA.glob("*.jsonl")), ids=lambda p: p.name)
def test_a_trace_read_ahead_is_the_trace_read_in_one_process(small_parts, path):
    ahead = read_ahead.start(["report", str(path)])
    if ahead is None:   # a trace of one line has no second part
        assert trace_parts.split_at(path, read_ahead.FIRST_SHARE) is None
        return
    assert ahead.start == trace_parts.split_at(path, read_ahead.FIRST_SHARE)
    two = trace.read_trace(path, processes=2)
    assert not trace_parts.ahead   # taken
    assert trace_contents(two) == trace_contents(trace.read_trace(path))


def test_a_bad_line_in_the_part_read_ahead_is_the_error_of_the_one_process_read(small_parts, tmp_path):
    lines = SMOKE.read_bytes().splitlines(keepends=True)
    at = len(lines) - 3
    lines[at] = b'{"record": "phase", "run": 3}\n'
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"".join(lines))
    with pytest.raises(TraceError) as one:
        trace.read_trace(path)
    assert f"line {at + 1}:" in str(one.value)
    ahead = read_ahead.start(["report", str(path)])
    assert ahead is not None and ahead.start < sum(map(len, lines[:at]))   # the bad line is in its part
    with pytest.raises(TraceError) as two:
        trace.read_trace(path, processes=2)
    assert str(two.value) == str(one.value)


def test_a_file_changed_since_is_read_without_the_part(small_parts, tmp_path):
    path = tmp_path / "growing.jsonl"
    path.write_bytes(SMOKE.read_bytes())
    ahead = read_ahead.start(["report", str(path)])
    assert ahead is not None
    with open(path, "ab") as f:   # a capture still writing: the child's part no longer ends the file
        f.write(SMOKE.read_bytes().splitlines(keepends=True)[-1])
    assert trace_parts._take_ahead(path) is None
    assert ahead._outcome is not None   # stopped
    with pytest.raises(ChildProcessError):
        os.waitpid(ahead._pid, os.WNOHANG)   # and reaped


def _dead_child(path: Path) -> read_ahead.ReadAhead:
    """A read-ahead of ``path`` whose child ended without writing its part (as if killed)."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os._exit(1)
    os.close(write_fd)
    ahead = read_ahead.ReadAhead(str(path), read_ahead._identity(str(path)),
                                 trace_parts.split_at(path, read_ahead.FIRST_SHARE), pid, read_fd)
    trace_parts.ahead[os.path.abspath(path)] = ahead
    return ahead


def test_a_child_that_died_leaves_its_part_to_this_process(small_parts):
    ahead = _dead_child(SMOKE)
    assert trace_contents(trace.read_trace(SMOKE, processes=2)) == trace_contents(trace.read_trace(SMOKE))
    assert ahead.result() is None   # what records_in_parts saw: it read the part itself
    with pytest.raises(ChildProcessError):
        os.waitpid(ahead._pid, os.WNOHANG)   # reaped


def test_parts_not_taken_are_stopped_and_reaped(small_parts):
    ahead = read_ahead.start(["report", str(SMOKE)])
    assert ahead is not None
    read_ahead._stop_all()
    assert not trace_parts.ahead and ahead._outcome is not None
    with pytest.raises(ChildProcessError):
        os.waitpid(ahead._pid, os.WNOHANG)


# -- as the command runs it ------------------------------------------------------------------------------

# The command as users run it (c3prof.cli.program), with any trace large enough and a record of
# whether the part read ahead was taken; argv after the code.
COMMAND = """
import sys
from c3prof import forked, read_ahead, trace_parts
trace_parts.MIN_BYTES = 1
taken = []
take = trace_parts._take_ahead
trace_parts._take_ahead = lambda path: taken.append(take(path)) or taken[-1]
import atexit
atexit.register(lambda: sys.stderr.write(f"taken: {[a is not None for a in taken]}\\n"))
sys.argv = ["c3prof", *sys.argv[1:]]
from c3prof.cli import program
program()
"""


def _command(*args: str) -> subprocess.CompletedProcess:
    # The interpreter as it is: the c3prof it imports is this process's (installed, or this checkout).
    return subprocess.run([sys.executable, "-c", COMMAND, *args], capture_output=True, text=True, timeout=300)


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one CPU: the report reads in one process")
def test_the_command_reads_ahead_and_reports_the_same(tmp_path):
    trace_path = DATA / "h200_default_1.jsonl"
    ahead = _command("report", str(trace_path), "--json", str(tmp_path / "ahead.json"), "-q")
    one = _command("report", str(trace_path), "--json", str(tmp_path / "one.json"), "-q", "-j", "1")
    assert ahead.returncode == 0 and one.returncode == 0, ahead.stderr + one.stderr
    assert "taken: [True]" in ahead.stderr
    assert "taken: []" in one.stderr   # -j 1: nothing started, nothing asked
    assert json.loads((tmp_path / "ahead.json").read_text()) == json.loads((tmp_path / "one.json").read_text())


NEVER_TAKEN = """
import sys
from c3prof import read_ahead, trace_parts
trace_parts.MIN_BYTES = 1
stop = read_ahead.ReadAhead.stop
def stopped(self):
    print("stopped", self._pid, flush=True)
    stop(self)
read_ahead.ReadAhead.stop = stopped
ahead = read_ahead.start(["report", sys.argv[1]])
print("started", ahead._pid if ahead else None, flush=True)
"""


def test_a_part_never_taken_is_stopped_when_the_command_exits():
    done = subprocess.run([sys.executable, "-c", NEVER_TAKEN, str(SMOKE)], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    started, stopped = done.stdout.split("\n")[:2]
    assert started.startswith("started ") and started != "started None"
    assert stopped == f"stopped {started.split()[1]}"   # at exit (atexit), by the process that started it


def test_the_reader_imports_no_numpy():
    """What the child imports before it reads (its head start is numpy's import)."""
    code = "import sys, c3prof.trace, c3prof._trace_read, c3prof.read_ahead; print(sorted(" \
           "m for m in sys.modules if m.split('.')[0] in ('numpy', 'multiprocessing', 'concurrent')))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
