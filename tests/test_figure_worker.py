"""Figures drawn in worker processes (c3prof.figures.worker) and ``--figure-formats``.

The workers are forked from the test process, so a figure function replaced here (monkeypatch,
after its module is imported) is the one a worker runs: that is how a failing or dying figure job
is simulated. Errors must come back as one line on stderr, with the exit status of c3prof.cli
(2 for a C3profError or a dead worker, 1 for a bug), no traceback (capfd: the workers write to
the same file descriptors) and no figures directory or temporary directory left behind.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from report_helpers import ROOT, SYNTHETIC

import c3prof.figures.speedup
import c3prof.ingest.figures
from c3prof.cli import build_parser, main
from c3prof.errors import C3profError
from c3prof.figures import write_figures
from c3prof.figures.formats import parse
from c3prof.figures.worker import FigurePool, default_workers
from c3prof.report.build import build_report
from c3prof.report.cli import _load, _settings

KINETO = ROOT / "tests" / "data" / "synthetic_kineto_rank0.json"
REPORT_FIGURES = {"speedup", "strategy_summary", "fraction_of_ideal", "slowdowns", "falsification", "interference",
                  "timeline"}


def _report_and_dataset(trace: Path):
    args = build_parser("report").parse_args(["report", str(trace)])
    dataset = _load([trace], None)
    return build_report(dataset, _settings(args)), dataset


def _one_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def _nothing_left(parent: Path, name: str) -> None:
    assert not (parent / name).exists()
    assert not [p for p in parent.iterdir() if p.name.startswith(f".{name}.")]  # no temporary sibling


def test_report_writes_png_only_by_default(tmp_path):
    assert main(["report", str(SYNTHETIC), "-q", "--figures", str(tmp_path / "fig")]) == 0
    names = {p.name for p in (tmp_path / "fig").iterdir()}
    assert names == {f"{n}.png" for n in REPORT_FIGURES}


def test_report_figure_formats_flag(tmp_path):
    assert main(["report", str(SYNTHETIC), "-q", "--figures", str(tmp_path / "fig"),
                 "--figure-formats", "svg,PDF,svg"]) == 0
    names = {p.name for p in (tmp_path / "fig").iterdir()}
    assert names == {f"{n}.{ext}" for n in REPORT_FIGURES for ext in ("svg", "pdf")}
    assert (tmp_path / "fig" / "speedup.pdf").read_bytes()[:5] == b"%PDF-"
    assert b"<svg" in (tmp_path / "fig" / "speedup.svg").read_bytes()[:2000]


@pytest.mark.parametrize("command", ["report", "ingest"])
def test_bad_figure_formats_refused_before_any_work(tmp_path, capfd, command):
    trace = SYNTHETIC if command == "report" else KINETO
    extra = ["-o", str(tmp_path / "out")] if command == "ingest" else []
    rc = main([command, str(trace), *extra, "--figures", str(tmp_path / "fig"), "--figure-formats", "png,gif"])
    line = _one_line(capfd.readouterr().err)
    assert rc == 2 and "--figure-formats: gif is not one of png, pdf, svg" in line
    _nothing_left(tmp_path, "fig")
    _nothing_left(tmp_path, "out")


def test_parse_formats():
    assert parse("png") == ("png",)
    assert parse(" PDF , png,pdf ") == ("pdf", "png")
    for bad in ("", " , ", "jpeg", "png,eps"):
        with pytest.raises(C3profError, match="--figure-formats"):
            parse(bad)


def test_workers_draw_the_same_files_as_one_process(tmp_path):
    """The CLI (forked workers, several figures at once) and write_figures in this process give the
    same file names and byte-identical PNGs."""
    assert main(["report", str(SYNTHETIC), "-q", "--figures", str(tmp_path / "cli")]) == 0
    report, dataset = _report_and_dataset(SYNTHETIC)
    here = write_figures(report, dataset, str(tmp_path / "here"))
    with FigurePool(2) as pool:
        pooled = write_figures(report, dataset, str(tmp_path / "pool"), pool=pool)
    assert [p.name for p in pooled] == [p.name for p in here]
    cli = sorted((tmp_path / "cli").iterdir())
    assert [p.name for p in cli] == sorted(p.name for p in here)
    for p in cli:
        assert p.read_bytes() == (tmp_path / "here" / p.name).read_bytes() == (tmp_path / "pool" / p.name).read_bytes()


def _paths(*names: str) -> list[Path]:
    """A stand-in figure job: returns the paths it was given."""
    return [Path(n) for n in names]


def test_pool_returns_every_path_in_job_order():
    jobs = [(__name__, "_paths", ("a.png", "b.png")), (__name__, "_paths", ()), (__name__, "_paths", ("c.png",))]
    with FigurePool(2) as pool:
        assert pool.draw(jobs) == [Path("a.png"), Path("b.png"), Path("c.png")]
    assert FigurePool(0).start().draw(jobs) == [Path("a.png"), Path("b.png"), Path("c.png")]  # in this process
    assert 1 <= default_workers() <= 4


def test_pool_draws_here_when_fork_is_refused(monkeypatch):
    def refuse():
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", refuse)
    pool = FigurePool(2).start()
    assert pool.draw([(__name__, "_paths", ("a.png",)), (__name__, "_here", ())]) == [Path("a.png"),
                                                                                    Path(str(os.getpid()))]


def _here() -> list[Path]:
    """A stand-in job that says which process ran it."""
    return [Path(str(os.getpid()))]


def test_pool_reraises_a_job_error():
    with FigurePool(1) as pool:
        with pytest.raises(C3profError, match="gif is not one of"):
            pool.draw([("c3prof.figures.formats", "parse", ("gif",))])
    with FigurePool(1) as pool:
        with pytest.raises(ValueError):  # a bug in a figure function keeps its type (c3prof.cli: exit 1)
            pool.draw([("json", "loads", ("{",))])
    with FigurePool(1) as pool:
        with pytest.raises(C3profError, match="a figure process ended unexpectedly"):
            pool.draw([("os", "_exit", (3,))])


def _boom(*args, **kwargs):
    raise RuntimeError("boom in a figure")


def _refused(*args, **kwargs):
    raise C3profError("figure refused (test)")


def _die(*args, **kwargs):
    os._exit(9)


@pytest.mark.parametrize("replacement,rc,needle", [
    (_boom, 1, "internal error: RuntimeError: boom in a figure"),
    (_refused, 2, "error: figure refused (test)"),
    (_die, 2, "a figure process ended unexpectedly"),
])
def test_report_figure_errors_are_one_line(tmp_path, capfd, monkeypatch, replacement, rc, needle):
    monkeypatch.setattr(c3prof.figures.speedup, "plot", replacement)  # inherited by the forked workers
    code = main(["report", str(SYNTHETIC), "-q", "--figures", str(tmp_path / "fig"), "--json", str(tmp_path / "r.json")])
    line = _one_line(capfd.readouterr().err)
    assert code == rc and line.startswith("c3prof report: ") and needle in line, line
    _nothing_left(tmp_path, "fig")


@pytest.mark.parametrize("replacement,rc,needle", [
    (_boom, 1, "internal error: RuntimeError: boom in a figure"),
    (_die, 2, "a figure process ended unexpectedly"),
])
def test_ingest_figure_errors_are_one_line(tmp_path, capfd, monkeypatch, replacement, rc, needle):
    monkeypatch.setattr(c3prof.ingest.figures, "draw", replacement)
    code = main(["ingest", str(KINETO), "-o", str(tmp_path / "out"), "-q", "--figures", str(tmp_path / "fig")])
    line = _one_line(capfd.readouterr().err)
    assert code == rc and line.startswith("c3prof ingest: ") and needle in line, line
    _nothing_left(tmp_path, "fig")


def _state(pid: int) -> str | None:
    """The process state letter from /proc (None: gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return None


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process states from /proc")
def test_workers_end_when_their_parent_is_killed(tmp_path):
    """A parent killed abruptly (no shutdown) must not leave idle workers waiting forever."""
    import subprocess
    import sys
    import time

    code = f"""
import os, sys
sys.path.insert(0, {str(ROOT)!r})
from c3prof.figures.worker import FigurePool
pool = FigurePool(2).start()
pool.draw([("os.path", "split", ("a/b",))])  # the workers are up
print(" ".join(str(p) for p in pool._executor._processes), flush=True)
os._exit(0)  # no shutdown, no atexit: as if killed
"""
    out, err = tmp_path / "out", tmp_path / "err"
    with open(out, "w") as o, open(err, "w") as e:  # files, not pipes: a stray worker would hold a pipe open
        rc = subprocess.run([sys.executable, "-c", code], stdout=o, stderr=e, timeout=120).returncode
    assert rc == 0, err.read_text()
    pids = [int(p) for p in out.read_text().split()]
    assert len(pids) == 2
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and any(_state(p) not in (None, "Z") for p in pids):
        time.sleep(0.1)
    alive = [p for p in pids if _state(p) not in (None, "Z")]
    for p in alive:  # the test's own strays: do not leave them behind when it fails
        os.kill(p, 9)
    assert not alive


@pytest.mark.parametrize("usable, machine, load, workers", [
    (2, 2, 0.1, 2), (2, 2, 1.0, 1), (2, 2, 3.0, 1),      # all the machine's CPUs: its load counts whole
    (2, 16, 1.0, 2), (2, 16, 12.0, 1),                    # 2 of 16 CPUs: their share of the load
    (16, 16, 0.0, 4),                                     # at most MAX_WORKERS
])
def test_default_workers_counts_the_idle_cpus_of_this_process(usable, machine, load, workers, monkeypatch):
    from c3prof.figures import worker

    monkeypatch.setattr(worker, "available_cpus", lambda: usable)
    monkeypatch.setattr(worker.os, "cpu_count", lambda: machine)
    monkeypatch.setattr(worker.os, "getloadavg", lambda: (load, load, load))
    assert worker.default_workers() == workers
