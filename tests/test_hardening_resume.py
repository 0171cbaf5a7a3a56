"""Issue 12, --resume: validate before changing a byte; repair only a torn last line; keep every
completed measurement. These run without a GPU: the trace checks happen before the GPU opens."""

from __future__ import annotations

import json
import shutil

import pytest
from hardening_helpers import SYNTHETIC, cli, one_line_error, sha

from c3prof.errors import TraceError
from c3prof.trace import TraceWriter, read_for_resume, read_trace


@pytest.fixture
def trace(tmp_path):
    p = tmp_path / "t.jsonl"
    shutil.copy(SYNTHETIC, p)
    return p


def assert_refused_untouched(path, needle):
    """Both the writer and `capture --resume` refuse the file, and not a byte of it changes."""
    before = sha(path)
    with pytest.raises(TraceError, match=needle):
        TraceWriter(path, resume=True, fsync=False)
    assert sha(path) == before
    one_line_error(cli("capture", "--suite", "smoke", "-o", path, "--resume"), needle)
    assert sha(path) == before


def test_a_non_trace_file_is_refused_untouched(tmp_path):
    p = tmp_path / "notes.txt"
    p.write_bytes(b"my notes\nlast line without newline")
    assert_refused_untouched(p, "not valid JSON")


def test_a_version_2_trace_is_refused_untouched(trace):
    lines = trace.read_text().splitlines()
    header = json.loads(lines[0])
    header["version"] = 2
    trace.write_text("\n".join([json.dumps(header), *lines[1:]]) + '\n{"record":"phase","torn')
    assert_refused_untouched(trace, "version 2")


def test_a_bad_middle_line_is_refused_untouched(trace):
    lines = trace.read_text().splitlines()
    lines[5] = lines[5][:40]
    trace.write_text("\n".join(lines) + '\n{"record":"end","st')
    before = sha(trace)
    with pytest.raises(TraceError, match="line 6"):
        read_for_resume(trace)
    assert sha(trace) == before


def test_a_complete_last_record_without_newline_is_kept(trace):
    text = trace.read_text()
    trace.write_text(text.rstrip("\n"))
    n_before = len(read_for_resume(trace)[0].completed_phases())
    w = TraceWriter(trace, resume=True, fsync=False)
    w.close()
    assert w.repaired_bytes == 0
    assert trace.read_text() == text  # only the newline added
    assert len(read_trace(trace).completed_phases()) == n_before


def test_a_torn_last_line_is_dropped_and_nothing_else(trace):
    text = trace.read_text()
    torn = '{"record":"phase","run":"cb4k'
    trace.write_text(text + torn)
    w = TraceWriter(trace, resume=True, fsync=False)
    w.close()
    assert w.repaired_bytes == len(torn)
    assert trace.read_text() == text


def test_capture_checks_the_resume_trace_before_the_gpu(trace):
    """Without a GPU a valid trace ends in "no usable GPU"; a bad one names the trace problem instead."""
    bad = trace.with_name("bad.jsonl")
    bad.write_text("\n\n" + '{"record":"header","format":"c3prof-trace","version":0}\n')
    one_line_error(cli("capture", "--suite", "smoke", "-o", bad, "--resume"), "version 0")
