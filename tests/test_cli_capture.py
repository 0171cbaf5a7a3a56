"""`c3prof capture` bad input: one line on stderr, exit status 2, no traceback, nothing lost."""

import os
import importlib.util
import subprocess
import sys

import pytest

from conftest import cuda_device_count


def c3prof(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "c3prof", *args], capture_output=True, text=True, cwd=cwd)


def assert_one_line_error(proc, *fragments):
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    for f in fragments:
        assert f in lines[0], lines[0]


@pytest.mark.parametrize("args,fragments", [
    (["--suite", "nope"], ["unknown suite 'nope'"]),
    (["--strategies", "base,warp"], ["unknown strategy 'warp'"]),
    (["--counters", "perf"], ["unknown counter source 'perf'"]),
    (["--reps", "0"], ["--reps must be between 1 and"]),
    (["--only", "ghost"], ["no scenario named 'ghost'"]),
    (["--scenarios", "/nonexistent.toml"], ["cannot read scenario file"]),
    (["--backend", "metal"], ["unknown backend 'metal'", "available: cuda, hip"]),
    (["--backend", "metal", "--gpus", "2"], ["unknown backend 'metal'"]),
])
def test_bad_arguments(tmp_path, args, fragments):
    assert_one_line_error(c3prof("capture", *args, "--out", str(tmp_path / "t.jsonl")), *fragments)


def test_bad_scenario_file(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text('[[scenario]]\nname = "x"\ngemm = { m = 8, n = 8, k = -8 }\ncomm = { bytes = "1MiB" }\n')
    assert_one_line_error(c3prof("capture", "--scenarios", str(f), "--out", str(tmp_path / "t.jsonl")),
                          "gemm.k must be positive", str(f))


def test_existing_trace_is_never_overwritten(tmp_path):
    out = tmp_path / "t.jsonl"
    out.write_text("precious\n")
    assert_one_line_error(c3prof("capture", "--out", str(out)), "already exists", "--resume")
    assert out.read_text() == "precious\n"


def test_resume_needs_a_trace(tmp_path):
    assert_one_line_error(c3prof("capture", "--resume", "--out", str(tmp_path / "none.jsonl")), "nothing to resume")


def test_unwritable_output(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert_one_line_error(c3prof("capture", "--out", str(blocker / "sub" / "t.jsonl")), "cannot write it")


@pytest.mark.skipif(cuda_device_count() > 0, reason="checks the message on a machine without a GPU")
def test_no_gpu_says_so_and_points_to_report(tmp_path):
    out = tmp_path / "t.jsonl"
    proc = c3prof("capture", "--suite", "smoke", "--out", str(out))
    if _installed("cuda.bindings"):
        assert_one_line_error(proc, "no usable GPU", "c3prof report tests/data/h200_default_proc2_t.jsonl")
    else:   # installed without the capture extra (as in CI): the error names the extra (tests/test_extras.py)
        assert_one_line_error(proc, "c3prof[capture]", "cuda-bindings")
    assert not out.exists()


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:   # its parent package is missing
        return False


def test_suites_listing():
    proc = c3prof("suites")
    assert proc.returncode == 0 and "default" in proc.stdout and "smoke" in proc.stdout
    # Descriptions wrapped to the width ($COLUMNS here, else the terminal's, else 100), under their own column.
    lines = proc.stdout.splitlines()
    assert max(map(len, lines)) <= max(60, int(os.environ.get("COLUMNS", "100")))
    assert all(line[:28].strip() == "" or line.split()[1].isdigit() for line in lines)
    proc = c3prof("suites", "smoke")
    assert "smoke-cb2k-x-4M" in proc.stdout


def test_no_command_prints_help():
    proc = c3prof()
    assert proc.returncode == 2 and "capture" in proc.stdout
