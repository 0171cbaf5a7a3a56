"""Figures drawn in worker processes (c3prof.figures.worker) and ``--figure-formats``.

The worker is forked from the test process and its helpers from the worker, so a figure function
replaced here (monkeypatch, after its module is imported) is the one a worker or helper runs: that
is how a failing or dying figure job is simulated. Errors must come back as one line on stderr,
with the exit status of c3prof.cli (2 for a C3profError or a dead worker, 1 for a bug), no
traceback (capfd: the workers write to the same file descriptors) and no figures directory or
temporary directory left behind.
"""

from __future__ import annotations

import argparse
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
from c3prof.figures.worker import FigurePool, default_drawers, draw_in_helpers
from c3prof.report.build import build_report
from c3prof.report.cli import _load, _settings

KINETO = ROOT / "tests" / "data" / "synthetic_kineto_rank0.json"
REPORT_FIGURES = {"speedup", "strategy_summary", "fraction_of_ideal", "slowdowns", "falsification", "interference",
                  "timeline"}


def _report_and_dataset(trace: Path):
    args = build_parser("report").parse_args(["report", str(trace)])
    dataset = _load([trace], None, 1)
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


@pytest.mark.parametrize("command", ["report", "ingest", "advise"])
def test_bad_figure_formats_refused_before_any_work(tmp_path, capfd, command):
    """Refused while the arguments are parsed (argparse's exit, status 2), in one line."""
    trace = KINETO if command == "ingest" else SYNTHETIC
    extra = {"ingest": ["-o", str(tmp_path / "out")], "advise": ["--train", str(SYNTHETIC)]}.get(command, [])
    with pytest.raises(SystemExit) as exit_:
        main([command, str(trace), *extra, "--figures", str(tmp_path / "fig"), "--figure-formats", "png,gif"])
    line = _one_line(capfd.readouterr().err)
    assert exit_.value.code == 2
    assert line.startswith(f"c3prof {command}: error: argument --figure-formats: gif is not one of png, pdf, svg")
    _nothing_left(tmp_path, "fig")
    _nothing_left(tmp_path, "out")


def test_parse_formats():
    assert parse("png") == ("png",)
    assert parse(" PDF , png,pdf ") == ("pdf", "png")
    for bad, named in (("", "nothing"), (" , ", "nothing"), ("jpeg", "jpeg"), ("png,eps", "eps")):
        with pytest.raises(argparse.ArgumentTypeError, match=f"^{named} is not one of png, pdf, svg$"):
            parse(bad)


@pytest.mark.parametrize("command", ["report", "ingest", "advise"])
def test_figure_formats_parse_to_a_tuple_default_included(command):
    """Every command gets a tuple from argparse, the default as well (argparse applies the type to it)."""
    parser = build_parser(only=command)
    required = {"ingest": ["-o", "out"], "advise": ["--train", "t"]}.get(command, [])
    args = parser.parse_args([command, "x", *required])
    assert args.figure_formats == ("png",)
    args = parser.parse_args([command, "x", *required, "--figure-formats", "svg,PNG"])
    assert args.figure_formats == ("svg", "png")


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
    assert 1 <= default_drawers() <= 4


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


def _meet(folder: str, name: str, others: int) -> list[Path]:
    """A stand-in job that says which process ran it, once ``others`` more such jobs run at the same
    time (each leaves a file in ``folder`` and waits for the others'): it never returns if one process
    ran them one after the other."""
    import time

    Path(folder, name).touch()
    deadline = time.monotonic() + 60
    while len(list(Path(folder).iterdir())) <= others:
        if time.monotonic() > deadline:
            raise TimeoutError(f"job {name}: the other jobs never ran beside it")
        time.sleep(0.01)
    return [Path(str(os.getpid()))]


def test_helpers_forked_from_the_worker_draw_at_the_same_time(tmp_path):
    """With 2 drawers, two jobs run at once, in two processes that are neither this one nor the warm
    worker (helpers forked from it), and the paths come back in job order."""
    with FigurePool(2) as pool:
        worker = pool.draw([(__name__, "_here", ())])[0]   # one job: the worker draws it itself
        pids = pool.draw([(__name__, "_meet", (str(tmp_path), "a", 1)), (__name__, "_paths", ("x.png",)),
                          (__name__, "_meet", (str(tmp_path), "b", 1))])
    assert pids[1] == Path("x.png")
    helpers = {str(pids[0]), str(pids[2])}
    assert len(helpers) == 2 and not helpers & {str(worker), str(os.getpid())}


def test_worker_draws_itself_when_it_cannot_fork_helpers(monkeypatch):
    """The first fork (the worker's) succeeds, every later one (in the worker: its helpers') is refused:
    the worker then draws every job itself."""
    real_fork, forked = os.fork, []

    def fork_once():
        if forked:
            raise BlockingIOError(11, "Resource temporarily unavailable")
        forked.append(True)
        return real_fork()

    monkeypatch.setattr(os, "fork", fork_once)
    with FigurePool(2) as pool:
        pids = pool.draw([(__name__, "_here", ()), (__name__, "_paths", ("a.png",)), (__name__, "_here", ())])
    assert pids[1] == Path("a.png") and pids[0] == pids[2] != Path(str(os.getpid()))


def test_helper_errors_come_back_as_the_workers():
    """In the worker's helpers: a job's error keeps its type; a helper that dies breaks the helpers' pool,
    which the caller names."""
    with FigurePool(1) as pool:   # draw_in_helpers as a job of the warm worker
        with pytest.raises(C3profError, match="figure refused"):
            pool.draw([(__name__, "_paths", ()), ("c3prof.figures.worker", "draw_in_helpers",
                                                  ([(__name__, "_refused", ())], 2))])
    assert draw_in_helpers([(__name__, "_paths", ("a.png",)), (__name__, "_paths", ("b.png",))], 2) == [
        Path("a.png"), Path("b.png")]
    with FigurePool(2) as pool:
        with pytest.raises(C3profError, match="a figure process ended unexpectedly"):
            pool.draw([(__name__, "_paths", ()), ("os", "_exit", (3,))])


def test_pool_reraises_a_job_error():
    with FigurePool(1) as pool:
        with pytest.raises(C3profError, match="figure refused"):
            pool.draw([(__name__, "_refused", ())])
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


def _pid_then_wait(folder: str) -> list[Path]:
    """A stand-in job that leaves its pid in ``folder`` and then waits (for a parent that never comes back)."""
    import time

    Path(folder, str(os.getpid())).touch()
    time.sleep(120)
    return []


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process states from /proc")
def test_workers_end_when_their_parent_is_killed(tmp_path):
    """A parent killed abruptly (no shutdown) must not leave its worker waiting for jobs forever, nor
    the worker's helpers (here killed while they draw)."""
    import subprocess
    import sys
    import time

    pids_dir = tmp_path / "pids"
    pids_dir.mkdir()
    code = f"""
import os, sys, time
sys.path.insert(0, {str(ROOT)!r})
sys.path.insert(0, {str(Path(__file__).parent)!r})
from c3prof.figures.worker import FigurePool, draw_in_helpers
pool = FigurePool(2).start()
pool.draw([("os.path", "split", ("a/b",))])  # the worker is up
pool._executor.submit(draw_in_helpers, [("test_figure_worker", "_pid_then_wait", ({str(pids_dir)!r},))] * 2, 2)
while len(os.listdir({str(pids_dir)!r})) < 2:
    time.sleep(0.01)
print(" ".join(str(p) for p in pool._executor._processes), flush=True)
os._exit(0)  # no shutdown, no atexit: as if killed
"""
    out, err = tmp_path / "out", tmp_path / "err"
    with open(out, "w") as o, open(err, "w") as e:  # files, not pipes: a stray worker would hold a pipe open
        rc = subprocess.run([sys.executable, "-c", code], stdout=o, stderr=e, timeout=120).returncode
    assert rc == 0, err.read_text()
    pids = [int(p) for p in out.read_text().split()] + [int(p.name) for p in pids_dir.iterdir()]
    assert len(pids) == 3   # the worker and its two helpers
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and any(_state(p) not in (None, "Z") for p in pids):
        time.sleep(0.1)
    alive = [p for p in pids if _state(p) not in (None, "Z")]
    for p in alive:  # the test's own strays: do not leave them behind when it fails
        os.kill(p, 9)
    assert not alive


@pytest.mark.parametrize("usable, drawers", [(1, 1), (2, 2), (3, 3), (16, 4)])   # at most MAX_DRAWERS
def test_default_drawers_is_one_per_cpu_of_this_process_whatever_the_load(usable, drawers, monkeypatch):
    from c3prof.figures import worker

    monkeypatch.setattr(worker, "available_cpus", lambda: usable)
    monkeypatch.setattr(worker.os, "getloadavg", lambda: (9.0, 9.0, 9.0), raising=False)
    assert worker.default_drawers() == drawers
