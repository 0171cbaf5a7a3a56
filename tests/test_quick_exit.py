"""The ``c3prof`` command's exit (c3prof/quick_exit.py): ``report`` ends without freeing what it
built, and nothing written is lost. Each case runs a fresh interpreter: the command as users run it
(``python -m c3prof``, the console script's ``program()``) against ``c3prof.cli.main`` with the
interpreter's normal exit, on a recorded H200 capture (tests/data)."""

import subprocess
import sys
from pathlib import Path

import pytest

from c3prof import quick_exit

TRACE = str(Path(__file__).parent / "data" / "h200_default_1.jsonl")
# main() with the interpreter's normal exit: what the command did before quick_exit.
NORMAL_EXIT = "import sys; from c3prof.cli import main; raise SystemExit(main(sys.argv[1:]))"


def _run(args: list[str], quick: bool) -> subprocess.CompletedProcess:
    launch = ["-m", "c3prof"] if quick else ["-c", NORMAL_EXIT]
    return subprocess.run([sys.executable, *launch, *args], capture_output=True, timeout=300)


def test_report_writes_the_same_outputs_and_status_as_a_normal_exit(tmp_path):
    """The table on stdout (a pipe: block-buffered until the exit flushes it), the JSON file and the
    exit status are those of main() with the interpreter's normal exit; so are a bad input's."""
    outs = {}
    for quick in (True, False):
        out = tmp_path / f"r_{quick}.json"
        done = _run(["report", TRACE, "--json", str(out)], quick)
        assert done.returncode == 0, done.stderr.decode()
        outs[quick] = (done.stdout.replace(str(out).encode(), b"OUT"), out.read_bytes())
        bad = _run(["report", str(tmp_path / "missing.jsonl")], quick)
        assert bad.returncode == 2 and bad.stderr.count(b"\n") == 1 and b"Traceback" not in bad.stderr
    assert b"fraction" in outs[True][0] and outs[True] == outs[False]


def test_report_json_to_stdout_arrives_whole(tmp_path):
    piped = _run(["report", TRACE, "--json", "-", "-q"], True)
    _run(["report", TRACE, "--json", str(tmp_path / "r.json"), "-q"], True)
    assert piped.returncode == 0 and piped.stdout == (tmp_path / "r.json").read_bytes()


CLOSED_READER = """
import sys
from c3prof import quick_exit

quick_exit.arm()
sys.stdout = open(sys.stdout.fileno(), "w", closefd=False)   # block-buffered (whatever PYTHONUNBUFFERED says)
print("still buffered")   # written only when leave() flushes
sys.stdin.readline()      # the test closes the reading end first
quick_exit.leave(0)
"""


def test_a_reader_that_went_away_ends_it_quietly():
    """stdout's reader gone before the flush at the exit (`| head`): exit status 141 (a closed pipe,
    as c3prof.cli reports it), no traceback."""
    proc = subprocess.Popen([sys.executable, "-c", CLOSED_READER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    proc.stdin.write(b"go\n")
    proc.stdin.close()
    assert proc.wait(timeout=60) == 141 and proc.stderr.read() == b""


ARMED = """
import atexit, sys
from c3prof import quick_exit

class Kept:
    def __del__(self):
        print("freed")

quick_exit.arm()
quick_exit.hold(Kept())
atexit.register(lambda: print("atexit ran"))
sys.stdout = open(sys.stdout.fileno(), "w", closefd=False)   # block-buffered (whatever PYTHONUNBUFFERED says)
print("buffered", end=" ")
quick_exit.leave(0)
"""


def test_leave_runs_atexit_and_flushes_but_frees_nothing_held():
    done = subprocess.run([sys.executable, "-c", ARMED], capture_output=True, timeout=60)
    assert done.returncode == 0
    assert done.stdout == b"buffered atexit ran\n"   # what was held was never freed ("freed" not printed)


THREAD_STILL_RUNNING = """
import sys, threading, time
from c3prof import quick_exit

def finish():
    time.sleep(0.5)
    print("thread done")

quick_exit.arm()
sys.stdout = open(sys.stdout.fileno(), "w", closefd=False)   # block-buffered (whatever PYTHONUNBUFFERED says)
threading.Thread(target=finish).start()   # not a daemon: the interpreter's exit waits for it
quick_exit.leave(0)
"""


def test_leave_waits_for_threads_as_the_interpreter_does():
    """leave() shuts the threads down before the atexit handlers, as the interpreter's exit does:
    a thread that is not a daemon finishes (concurrent.futures tells its process pools to stop
    there, before multiprocessing joins their workers at exit)."""
    done = subprocess.run([sys.executable, "-c", THREAD_STILL_RUNNING], capture_output=True, timeout=60)
    assert done.returncode == 0 and done.stdout == b"thread done\n", done.stderr.decode()


def test_a_failed_report_with_its_figure_worker_starting_ends(tmp_path):
    """`report --figures` that fails after its figure worker started (a bad --timeline-run) cancels
    the worker and exits with status 2. The first version of quick_exit joined that worker forever
    (multiprocessing's exit handler ran before concurrent.futures had told it to stop)."""
    done = subprocess.run([sys.executable, "-m", "c3prof", "report", str(Path(TRACE).with_name("synthetic_small.jsonl")),
                           "--figures", str(tmp_path / "f"), "--timeline-run", "no/such/run"],
                          capture_output=True, timeout=120)
    assert done.returncode == 2 and b"--timeline-run" in done.stderr


def test_a_failed_command_exits_as_usual(monkeypatch):
    """Armed, a non-zero status (an error) takes the interpreter's normal exit."""
    monkeypatch.setattr(quick_exit, "_armed", True)
    with pytest.raises(SystemExit) as caught:
        quick_exit.leave(2)
    assert caught.value.code == 2


def test_other_commands_exit_as_usual():
    """Only report arms it: `c3prof suites` exits through the interpreter (its objects are freed)."""
    probe = ("import atexit, sys; from c3prof import cli, quick_exit; sys.argv = ['c3prof', 'suites'];"
             "atexit.register(lambda: print('armed', quick_exit.armed())); cli.program()")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, timeout=60)
    assert done.returncode == 0 and done.stdout.endswith(b"armed False\n")


def test_not_armed_it_is_a_normal_exit():
    assert not quick_exit.armed()
    quick_exit.hold(object())   # not kept: nothing armed it
    assert quick_exit._held == []
    with pytest.raises(SystemExit) as caught:
        quick_exit.leave(4)
    assert caught.value.code == 4


def test_build_report_hands_its_metrics_to_quick_exit(monkeypatch):
    """The analysis' metrics are not in the report: armed, build_report hands them to ``hold`` (the
    command then exits without freeing them); every complete run's RunMetrics is among them."""
    from c3prof.analysis.dataset import load
    from c3prof.analysis.speedup import BootstrapSettings, RunMetrics
    from c3prof.report.build import ReportSettings, build_report

    held: list = []
    monkeypatch.setattr(quick_exit, "hold", lambda *objects: held.extend(objects))
    dataset = load([TRACE])
    report = build_report(dataset, ReportSettings(boot=BootstrapSettings(n_resamples=200)))
    metrics = [m for obj in held if isinstance(obj, list) for m in obj if isinstance(m, RunMetrics)]
    assert {m.run.id for m in metrics} == {r["run"] for r in report["results"]}
    assert len(report["results"]) > 0
