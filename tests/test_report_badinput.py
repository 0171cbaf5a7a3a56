"""Bad input: one line on stderr naming the file and the problem, exit status 2, no traceback."""

import json
import shutil

import pytest
from report_helpers import SYNTHETIC, run_cli


def assert_one_line_error(proc, *needles):
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    err = proc.stderr.strip()
    assert "Traceback" not in proc.stderr + proc.stdout
    assert len(err.splitlines()) == 1, err
    assert err.startswith("c3prof report: error:")
    for n in needles:
        assert n in err, (n, err)


def _lines():
    return SYNTHETIC.read_text().splitlines(keepends=True)


def test_missing_file(tmp_path):
    missing = tmp_path / "nope.jsonl"
    assert_one_line_error(run_cli(str(missing)), str(missing), "cannot open")


def test_truncated_trace(tmp_path):
    p = tmp_path / "cut.jsonl"
    text = SYNTHETIC.read_text()
    p.write_text(text[: len(text) // 2])  # cut inside a line, as a killed writer leaves it
    assert_one_line_error(run_cli(str(p)), str(p), "truncated")


def test_corrupt_line(tmp_path):
    p = tmp_path / "corrupt.jsonl"
    lines = _lines()
    lines[5] = '{"record": "phase", "run": \n'
    p.write_text("".join(lines))
    assert_one_line_error(run_cli(str(p)), str(p), "line 6", "not valid JSON")


def test_wrong_version(tmp_path):
    p = tmp_path / "v99.jsonl"
    lines = _lines()
    header = json.loads(lines[0])
    header["version"] = 99
    lines[0] = json.dumps(header) + "\n"
    p.write_text("".join(lines))
    assert_one_line_error(run_cli(str(p)), str(p), "version 99")


def test_not_a_trace_and_empty_file(tmp_path):
    p = tmp_path / "other.jsonl"
    p.write_text('{"hello": "world"}\n')
    assert_one_line_error(run_cli(str(p)), str(p), "not a c3prof trace")
    e = tmp_path / "empty.jsonl"
    e.write_text("")
    assert_one_line_error(run_cli(str(e)), str(e), "empty")


@pytest.mark.parametrize("bad", [0.0, -0.5])
def test_non_positive_time_is_rejected(tmp_path, bad):
    p = tmp_path / "nonpos.jsonl"
    lines = _lines()
    i = next(i for i, line in enumerate(lines) if '"record":"phase"' in line)
    rec = json.loads(lines[i])
    rec["samples"]["total_ms"][0] = bad
    lines[i] = json.dumps(rec) + "\n"
    p.write_text("".join(lines))
    assert_one_line_error(run_cli(str(p)), str(p), f"line {i + 1}", "must be positive")


def test_one_bad_file_among_good_ones(tmp_path):
    good = tmp_path / "good.jsonl"
    shutil.copy(SYNTHETIC, good)
    missing = tmp_path / "missing.jsonl"
    assert_one_line_error(run_cli(str(good), str(missing)), str(missing))


def test_bad_options(tmp_path):
    assert_one_line_error(run_cli(str(SYNTHETIC), "--confidence", "1.5"), "--confidence")
    assert_one_line_error(run_cli(str(SYNTHETIC), "--threshold", "0.9"), "--threshold")
    for jobs in ("0", "-1", "two", "65"):
        assert_one_line_error(run_cli(str(SYNTHETIC), "--jobs", jobs), "--jobs")
    for rows in ("0", "-1", "many", "100001"):
        assert_one_line_error(run_cli(str(SYNTHETIC), "--max-rows", rows), "--max-rows")
    assert_one_line_error(run_cli(str(SYNTHETIC), "--figures", str(tmp_path / "f"), "--timeline-run", "no/such/run"),
                          "--timeline-run")
    empty = tmp_path / "emptydir"
    empty.mkdir()
    assert_one_line_error(run_cli(str(empty)), str(empty), "no *.jsonl")


def test_unwritable_output(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert_one_line_error(run_cli(str(SYNTHETIC), "--json", str(blocker / "r.json"), "--quiet"), "cannot write")
    assert_one_line_error(run_cli(str(SYNTHETIC), "--csv", str(blocker), "--quiet"), "--csv needs a directory")
