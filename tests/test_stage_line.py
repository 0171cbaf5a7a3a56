"""The stage line of ``c3prof report`` (c3prof.stage_line): at a terminal, one line of stderr says what a
long report is doing, rewritten in place and erased before the results; nothing off a terminal or with -q."""

from __future__ import annotations

import io

import pytest
from report_helpers import DATA, SYNTHETIC

from c3prof.cli import main
from c3prof.stage_line import StageLine

ERASE = "\r\x1b[2K"


class Terminal(io.StringIO):
    """stderr as a terminal would be (what the stage line writes is kept to read back)."""

    def isatty(self) -> bool:
        return True


def _report(monkeypatch, capsys, *argv: str, stderr: io.StringIO) -> tuple[int, str, str]:
    """(exit status, stdout, what went to ``stderr``) of ``c3prof report`` run in this process."""
    monkeypatch.setattr("sys.stderr", stderr)
    capsys.readouterr()
    rc = main(["report", *argv])
    monkeypatch.undo()
    return rc, capsys.readouterr().out, stderr.getvalue()


def test_at_a_terminal_each_stage_replaces_the_last_and_the_line_is_erased(tmp_path, monkeypatch, capsys):
    rc, out, err = _report(monkeypatch, capsys, str(SYNTHETIC), "--json", str(tmp_path / "r.json"),
                           "--csv", str(tmp_path / "csv"), stderr=Terminal())
    assert rc == 0
    shown = err.split(ERASE)
    assert shown[0] == "" and shown[-1] == ""   # every text follows an erase, and an erase ends it
    texts = shown[1:-1]
    assert len(texts) == 3, texts
    assert texts[0].startswith("c3prof report: reading 1 trace(s), ") and texts[0].endswith(" MB")
    assert texts[1].startswith("c3prof report: analysing ") and "runs of" in texts[1] and "2,000 resamples" in texts[1]
    assert texts[2] == "c3prof report: writing JSON, CSV tables"   # in the order they are written
    assert "\n" not in "".join(texts) and "Results" in out   # the table after the line is gone


def test_the_counts_are_the_reports(tmp_path, monkeypatch, capsys):
    """The analysing stage names the complete runs and their scenarios, as the report then lists them."""
    import json

    path = tmp_path / "r.json"
    _, _, err = _report(monkeypatch, capsys, str(SYNTHETIC), "--json", str(path), "-q", stderr=io.StringIO())
    results = json.loads(path.read_text())["results"]
    _, _, err = _report(monkeypatch, capsys, str(SYNTHETIC), stderr=Terminal())
    analysing = next(t for t in err.split(ERASE) if "analysing" in t)
    assert f"analysing {len(results):,} runs of {len({r['scenario'] for r in results}):,} scenarios" in analysing


@pytest.mark.parametrize("stderr, argv", [(io.StringIO(), ()), (Terminal(), ("-q",))])
def test_nothing_off_a_terminal_or_with_quiet(stderr, argv, monkeypatch, capsys):
    rc, _, err = _report(monkeypatch, capsys, str(SYNTHETIC), *argv, stderr=stderr)
    assert rc == 0 and err == ""


def test_an_error_is_printed_on_a_clean_line(tmp_path, monkeypatch, capsys):
    """A trace that fails while it is read: the line is erased, then the one-line error."""
    bad = tmp_path / "bad.jsonl"
    bad.write_text((DATA / "h200_default_1.jsonl").read_text().splitlines()[0] + "\n{not json\n")
    rc, _, err = _report(monkeypatch, capsys, str(bad), stderr=Terminal())
    assert rc == 2
    before, after = err.rsplit(ERASE, 1)
    assert "reading 1 trace(s)" in before
    assert after.startswith("c3prof report: error: ") and after.count("\n") == 1


def test_a_line_wider_than_the_terminal_is_cut(monkeypatch):
    monkeypatch.setenv("COLUMNS", "30")   # shutil.get_terminal_size reads it first
    term = Terminal()
    with StageLine("report", stream=term) as stage:
        stage.show("analysing 10,000 runs of 2,500 scenarios")
    text = term.getvalue().split(ERASE)[1]
    assert text == "c3prof report: analysing 10,…" and len(text) == 29


def test_a_missing_trace_is_named_by_the_reader_at_a_terminal_too(tmp_path, monkeypatch, capsys):
    """The stage line counts the bytes of the traces it can stat; the reader names the missing one."""
    missing = tmp_path / "nope.jsonl"
    rc, _, err = _report(monkeypatch, capsys, str(missing), stderr=Terminal())
    assert rc == 2
    assert "reading 1 trace(s), 0.0 MB" in err
    assert err.rsplit(ERASE, 1)[1].startswith(f"c3prof report: error: {missing}: cannot open")


def test_what_a_stage_counts_is_not_counted_off_a_terminal():
    with StageLine("report", stream=io.StringIO()) as stage:
        stage.show(lambda: pytest.fail("called off a terminal"))
