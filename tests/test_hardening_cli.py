"""Issue 12 and issue 15 at the CLI boundary: the catch-all, one-line usage errors, bounds on
numeric options, special files, ordering of checks, broken pipes, and one vocabulary with
examples and defaults in every --help."""

from __future__ import annotations

import json

import os
import subprocess
import sys

import pytest
from hardening_helpers import DATA, KINETO, SYNTHETIC, cli, one_line_error

import c3prof.inputs as inputs
from c3prof.cli import SUBCOMMANDS


def test_unexpected_error_is_one_line_exit_1(monkeypatch):
    import c3prof.suites_cli

    def boom(args):
        raise ZeroDivisionError("division by zero\nsecond line")

    monkeypatch.setattr(c3prof.suites_cli, "run", boom)
    r = cli("suites")
    lines = r.err.strip().splitlines()
    assert r.rc == 1 and len(lines) == 1 and "internal error: ZeroDivisionError" in lines[0] and "--debug" in lines[0]
    r = cli("--debug", "suites")
    assert r.rc == 1 and "Traceback" in r.err


@pytest.mark.parametrize("argv", [["report"], ["report", "--bogus", "x"], ["capture", "--reps", "many", "-o", "t"],
                                  ["ingest", "k.json"], ["suites", "a", "b"], ["frobnicate"]])
def test_bad_arguments_print_one_line(argv):
    r = cli(*argv)
    assert r.rc == 2 and len(r.err.strip().splitlines()) == 1, r.err
    assert "--help" in r.err


@pytest.mark.parametrize("option,value", [("--resamples", "100000000"), ("--resamples", "10"),
                                          ("--perfetto-max-reps", "0"), ("--threshold", "nan"),
                                          ("--threshold", "inf"), ("--confidence", "1"), ("--seed", "-1"),
                                          ("--min-gain", "1e300")])
def test_report_numeric_options_are_bounded(option, value):
    one_line_error(cli("report", SYNTHETIC, option, value), option)


@pytest.mark.parametrize("option,value", [("--reps", "0"), ("--max-reps", "0"), ("--max-noise", "nan"),
                                          ("--phase-timeout", "inf"), ("--warmup", "-1"), ("--counter-reps", "0")])
def test_capture_numeric_options_are_bounded_without_internal_names(tmp_path, option, value):
    line = one_line_error(cli("capture", "--suite", "smoke", "-o", tmp_path / "x" / "t.jsonl", option, value), option)
    assert "min_reps" not in line and "timeout_s" not in line
    assert not (tmp_path / "x").exists()


@pytest.fixture
def fifo(tmp_path):
    p = tmp_path / "fifo"
    os.mkfifo(p)
    return p


def test_report_refuses_a_fifo(fifo):
    one_line_error(cli("report", fifo), "not a regular file")


def test_capture_refuses_a_fifo_scenario_file(fifo, tmp_path):
    one_line_error(cli("capture", "--scenarios", fifo, "-o", tmp_path / "t.jsonl"), "not a regular file")


def test_ingest_refuses_a_fifo(fifo, tmp_path):
    one_line_error(cli("ingest", fifo, "-o", tmp_path / "o"))  # refused without opening it (no hang)


def test_report_refuses_a_device():
    one_line_error(cli("report", "/dev/zero"), "not a regular file")


def test_huge_files_are_refused_before_reading(tmp_path, monkeypatch):
    monkeypatch.setattr(inputs, "TRACE_MAX_BYTES", 1000)
    import c3prof.trace
    monkeypatch.setattr(c3prof.trace, "TRACE_MAX_BYTES", 1000)
    one_line_error(cli("report", SYNTHETIC), "refusing to read it")


def test_capture_validates_scenarios_before_counting_gpus(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text('[[scenario]]\nname = "x"\ngemm = { m = 8, n = 8, k = 0 }\ncomm = { bytes = "1MiB" }\n')
    one_line_error(cli("capture", "--scenarios", f, "--gpus", "4", "-o", tmp_path / "o" / "t.jsonl"),
                   "gemm.k must be positive")
    assert not (tmp_path / "o").exists()


def test_capture_without_gpu_creates_no_output_directory(tmp_path):
    one_line_error(cli("capture", "--suite", "smoke", "-o", tmp_path / "new" / "t.jsonl"), "GPU")
    assert not (tmp_path / "new").exists()


@pytest.mark.parametrize("args", ["suites", f"report {SYNTHETIC}", f"ingest {KINETO} -o {{tmp}}/ingest",
                                  f"report {SYNTHETIC} --json -"])
def test_broken_pipe_ends_quietly_with_status_141(args, tmp_path):
    """A reader that went away (`| head`): no traceback, no message, and the status a shell reports
    for a closed pipe (docs/cli.md), for rich's tables too (rich's own handler exits with 1). The
    reader here closes at once, so the first write already finds the pipe closed."""
    command = f"{sys.executable} -m c3prof {args.format(tmp=tmp_path)} | true"
    proc = subprocess.run(["bash", "-c", f"{command}; exit ${{PIPESTATUS[0]}}"], capture_output=True, text=True)
    assert proc.returncode == 141 and proc.stderr == "", (proc.returncode, proc.stderr)


def test_a_file_of_the_wrong_kind_is_named_with_the_command_that_reads_it(tmp_path):
    """report given a profiler trace (plain or gzip) or a report JSON, ingest given a c3prof trace or
    report, advise given a profiler trace: one line that says what the file is and what reads it."""
    report_json = tmp_path / "report.json"
    assert cli("report", SYNTHETIC, "-q", "--json", report_json).rc == 0
    kineto_gz = DATA / "synthetic_kineto_rank1.json.gz"
    one_line_error(cli("report", KINETO, "-q"), "not a c3prof trace but a PyTorch profiler (Kineto) trace",
                   "`c3prof ingest` reads it")
    one_line_error(cli("report", kineto_gz, "-q"), "not a c3prof trace but a gzip file", "`c3prof ingest`")
    one_line_error(cli("report", report_json, "-q"), "not a c3prof trace but a c3prof report JSON")
    one_line_error(cli("ingest", SYNTHETIC, "-q", "-o", tmp_path / "i"),
                   "not a Kineto trace but a c3prof trace: `c3prof report` reads it")
    one_line_error(cli("ingest", report_json, "-q", "-o", tmp_path / "i"), "not a Kineto trace but a c3prof report")
    one_line_error(cli("advise", KINETO, "--train", DATA / "h200_default_1.jsonl", "-q"),
                   "a PyTorch profiler (Kineto) trace: `c3prof ingest` reads it")


def test_an_unknown_argument_is_reported_by_its_subcommand():
    for argv, prefix in ((["suites", "smoke", "extra"], "c3prof suites: error: unrecognized arguments: extra"),
                         (["report", "t.jsonl", "--bogus"], "c3prof report: error: unrecognized arguments: --bogus"),
                         (["--bogus"], "c3prof: error: unrecognized arguments: --bogus")):
        r = cli(*argv)
        assert r.rc == 2 and r.err.startswith(prefix) and len(r.err.splitlines()) == 1, r.err
    assert "examples:" in cli("--help").out


def test_quiet_still_says_where_files_went(tmp_path):
    """-q drops the tables, not the line per file written (docs/cli.md); --json - moves it to stderr."""
    r = cli("report", SYNTHETIC, "-q", "--json", tmp_path / "r.json")
    assert r.rc == 0 and r.out.splitlines() == [f"c3prof report: wrote {tmp_path / 'r.json'}"]
    r = cli("ingest", KINETO, "-q", "-o", tmp_path / "i", "--json", "-")
    assert r.rc == 0 and r.out.lstrip().startswith("{")
    assert f"c3prof ingest: wrote {tmp_path / 'i' / 'ingest.json'}" in r.err.splitlines()
    train = DATA / "h200_default_1.jsonl"
    r = cli("advise", DATA / "h200_default_2.jsonl", "--train", train, "-q", "--no-loso", "--figures", tmp_path / "f")
    assert r.rc == 0 and r.out == "" and "is empty: the figures plot validations" in r.err


@pytest.mark.parametrize("command", sorted(SUBCOMMANDS))
def test_help_has_examples_and_defaults(command):
    r = cli(command, "--help")
    assert r.rc == 0 and "examples:" in r.out and f"c3prof {command}" in r.out
    if command != "suites":
        assert "(default:" in r.out and "-q, --quiet" in r.out
    assert "PHASE_TIMEOUT" not in r.out and "(default None)" not in r.out


def test_out_is_the_main_output_everywhere():
    for command in ("capture", "ingest"):
        assert "-o PATH, --out PATH" in cli(command, "--help").out or "-o DIR, --out DIR" in cli(command, "--help").out


def test_report_of_a_directory_of_mixed_captures_works():
    r = cli("report", DATA, "-q", "--resamples", "100", "--json", "-")
    assert r.rc == 0, r.err
    rep = json.loads(r.out)       # compact above 2000 results (json_out.PRETTY_MAX_RESULTS): parse, don't grep
    assert rep["split_by"] == "trace" and any("reported on its own" in n for n in rep["notes"])


def test_ingest_accepts_a_directory(tmp_path):
    d = tmp_path / "traces"
    d.mkdir()
    (d / "rank0.json").write_bytes(KINETO.read_bytes())
    r = cli("ingest", d, "-o", tmp_path / "o", "-q")
    assert r.rc == 0, r.err
    assert (tmp_path / "o" / "ingest.json").exists()
    one_line_error(cli("ingest", tmp_path / "o" / "..", "-o", tmp_path / "p"), "trace files")
