"""Issue 12, "inputs are never outputs": no output may resolve to an input or to another output,
every output is written atomically, and an output directory is replaced as a whole set."""

from __future__ import annotations

import os
import shutil

import pytest
from hardening_helpers import KINETO, SYNTHETIC, cli, one_line_error, sha

from c3prof.errors import C3profError
from c3prof.outputs import Output, atomic_directory, atomic_file, check_outputs, write_text_atomic


@pytest.fixture
def trace(tmp_path):
    p = tmp_path / "t.jsonl"
    shutil.copy(SYNTHETIC, p)
    return p


def report(*argv):
    return cli("report", *argv, "-q", "--resamples", "100")


@pytest.mark.parametrize("flag", ["--json", "-o", "--perfetto"])
def test_report_never_overwrites_its_trace(trace, flag):
    before = sha(trace)
    one_line_error(report(trace, flag, trace), "is the input", "never overwrites")
    assert sha(trace) == before


def test_symlink_and_hard_link_to_the_input_are_refused(trace, tmp_path):
    (tmp_path / "sym.json").symlink_to(trace)
    os.link(trace, tmp_path / "hard.json")
    before = sha(trace)
    one_line_error(report(trace, "--json", tmp_path / "sym.json"), "is the input")
    one_line_error(report(trace, "--perfetto", tmp_path / "hard.json"), "is the input")
    assert sha(trace) == before


def test_output_directory_holding_the_input_is_refused(trace, tmp_path):
    one_line_error(report(trace, "--csv", tmp_path), "the input")
    one_line_error(report(trace, "--figures", tmp_path), "the input")
    assert trace.exists()


def test_two_outputs_in_one_place_are_refused(trace, tmp_path):
    one_line_error(report(trace, "--json", tmp_path / "x", "--perfetto", tmp_path / "x"), "overlap")
    one_line_error(report(trace, "--csv", tmp_path / "d", "--json", tmp_path / "d" / "results.csv"), "overlap")


def test_report_json_into_a_directory_leaves_nothing(trace, tmp_path):
    (tmp_path / "dir").mkdir()
    one_line_error(report(trace, "--json", tmp_path / "dir"), "is a directory")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir", "t.jsonl"]
    assert not any((tmp_path / "dir").iterdir())


def test_csv_rerun_replaces_the_set_and_refuses_a_foreign_directory(trace, tmp_path):
    out = tmp_path / "csv"
    assert report(trace, "--csv", out).rc == 0
    (out / "results.csv").write_text("stale")
    assert report(trace, "--csv", out).rc == 0
    assert (out / "results.csv").read_text() != "stale"
    (out / "notes.txt").write_text("mine")
    one_line_error(report(trace, "--csv", out), "would not write again", "notes.txt")
    assert (out / "notes.txt").read_text() == "mine"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary left


def test_ingest_never_overwrites_its_kineto_trace(tmp_path):
    k = tmp_path / "k.json"
    shutil.copy(KINETO, k)
    before = sha(k)
    one_line_error(cli("ingest", k, "--out", tmp_path / "d", "--json", k), "is the input")
    assert not (tmp_path / "d").exists()  # refused before any work: nothing created
    os.link(k, tmp_path / "hard.json")
    one_line_error(cli("ingest", k, "--out", tmp_path / "d", "--json", tmp_path / "hard.json"), "is the input")
    assert cli("ingest", k, "-o", tmp_path, "-q").rc in (0, 2)  # --out DIR holding the input: written beside it
    assert sha(k) == before


@pytest.mark.parametrize("flag", ["--json", "--figures", "--out"])
def test_ingest_unwritable_outputs_are_one_line(tmp_path, flag):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    argv = ["ingest", KINETO, "-o", tmp_path / "o", "-q"]
    if flag == "--out":
        argv[3] = blocker / "sub"
    else:
        argv += [flag, blocker / "sub"]
    one_line_error(cli(*argv))
    assert blocker.read_text() == "x"


def test_ingest_json_directory_is_refused(tmp_path):
    (tmp_path / "dir").mkdir()
    one_line_error(cli("ingest", KINETO, "-o", tmp_path / "o", "--json", tmp_path / "dir"), "directory")
    assert not any((tmp_path / "dir").iterdir())


def test_ingest_json_dash_writes_stdout(tmp_path):
    r = cli("ingest", KINETO, "-o", tmp_path / "o", "-q", "--json", "-")
    assert r.rc == 0 and r.out.lstrip().startswith("{") and not (tmp_path / "-").exists()


@pytest.mark.parametrize("argv, flag, what", [
    (["report", SYNTHETIC, "-q", "--perfetto", "-"], "--perfetto", "file name"),
    (["report", SYNTHETIC, "-q", "--csv", "-"], "--csv", "directory"),
    (["report", SYNTHETIC, "-q", "--figures", "-"], "--figures", "directory"),
    (["ingest", KINETO, "-q", "-o", "-"], "--out", "directory"),
    (["capture", "--suite", "smoke", "-o", "-"], "--out", "file name")])
def test_only_json_goes_to_standard_output(argv, flag, what, tmp_path, monkeypatch):
    """'-' for any other output used to write nothing and exit 0: the main output silently lost."""
    monkeypatch.chdir(tmp_path)
    one_line_error(cli(*argv), f"{flag} -: only --json can go to standard output", what)
    assert not any(tmp_path.iterdir())


def test_reingest_without_figures_names_the_earlier_figures(tmp_path):
    """ingest -o out --figures out/figures, then ingest -o out: the figures are c3prof's, but this
    run would not write them again, and replacing the directory would lose them."""
    out = tmp_path / "out"
    assert cli("ingest", KINETO, "-q", "-o", out, "--figures", out / "figures").rc == 0
    one_line_error(cli("ingest", KINETO, "-q", "-o", out), "would not write again (figures)", "lose")
    assert (out / "figures").is_dir()


def test_capture_out_may_not_be_its_scenario_file(tmp_path):
    s = tmp_path / "s.toml"
    shutil.copy(SYNTHETIC.parents[1].parent / "c3prof" / "suites" / "smoke.toml", s)
    before = sha(s)
    one_line_error(cli("capture", "--scenarios", s, "-o", s, "--resume"), "is the input")
    assert sha(s) == before


def test_atomic_file_removes_its_temporary_on_failure(tmp_path):
    with pytest.raises(RuntimeError):
        with atomic_file(tmp_path / "x.json", "test") as tmp:
            tmp.write_text("half")
            raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []


def test_unencodable_text_is_an_error_not_a_crash(tmp_path):
    with pytest.raises(C3profError, match="not valid Unicode"):
        write_text_atomic(tmp_path / "x.csv", "a\ud800b", "CSV table")
    assert list(tmp_path.iterdir()) == []


def test_atomic_directory_keeps_the_old_set_on_failure(tmp_path):
    out = Output.directory("--csv", tmp_path / "d", ["*.csv"])
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.csv").write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_directory(out, "tables") as tmp:
            (tmp / "a.csv").write_text("new")
            raise RuntimeError("boom")
    assert (tmp_path / "d" / "a.csv").read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d"]


def test_check_outputs_accepts_distinct_paths(tmp_path):
    (tmp_path / "in.jsonl").write_text("x")
    check_outputs([tmp_path / "in.jsonl"], [Output.file("--json", tmp_path / "a.json"),
                                            Output.directory("--csv", tmp_path / "csv", ["*.csv"])])


def test_outputs_nested_in_an_output_directory_are_written_after_it(trace, tmp_path):
    """README's layout: `ingest -o out/ingest --figures out/ingest/figures`, and twice in a row."""
    out = tmp_path / "out"
    for _ in range(2):
        r = cli("ingest", KINETO, "-o", out, "--figures", out / "figures", "-q")
        assert r.rc == 0, r.err
        assert (out / "ingest.json").exists() and any((out / "figures").glob("*.png"))
    for _ in range(2):
        assert report(trace, "--csv", tmp_path / "rep", "--json", tmp_path / "rep" / "report.json").rc == 0
        assert (tmp_path / "rep" / "report.json").exists() and (tmp_path / "rep" / "results.csv").exists()
