"""forked.in_background (the strategy summary computed in a forked child while the report goes on):
the child's value or error comes back, a refused fork computes here and says so, and a report that
uses it equals the one computed in one process (tests/data/h200_smoke.jsonl, a real H200 capture).
forked.Claims (the summary's rows shared from both ends by the child and this process): every index
handed out, none left out, across a fork. forked.in_processes (the analysis's batches claimed by
this process and children): the results in order, a child's error (even one that cannot be
pickled) raised here, a child that died named."""

from __future__ import annotations

import json
import multiprocessing
import os
import time
from pathlib import Path

import pytest

from c3prof import forked

if not forked.can_fork():
    pytest.skip("needs the fork start method", allow_module_level=True)

SMOKE = Path(__file__).parent / "data" / "h200_smoke.jsonl"


def test_background_work_runs_in_a_child_and_comes_back():
    later = forked.in_background(lambda: (os.getpid(), [1.5, None, "x"]))
    pid, value = later.result()
    assert pid != os.getpid() and value == [1.5, None, "x"]
    assert later.result() == (pid, value)   # asked again: the same value, no second wait


def test_background_error_is_raised_where_the_result_is_asked():
    def fail():
        raise ValueError("summary failed")

    later = forked.in_background(fail)
    for _ in range(2):
        with pytest.raises(ValueError, match="summary failed"):
            later.result()


def test_refused_fork_computes_here_and_says_so(monkeypatch, capsys):
    def refuse(*args, **kwargs):
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(forked.ProcessPoolExecutor, "submit", refuse)
    assert forked.in_background(os.getpid).result() == os.getpid()
    assert "could not start another process (Resource temporarily unavailable); computing in this one" in \
        capsys.readouterr().err


def test_report_with_the_summary_beside_equals_the_one_process_report(monkeypatch):
    from c3prof.analysis import speedup
    from c3prof.analysis.dataset import load
    from c3prof.report import build

    dataset = load([str(SMOKE)])
    serial = build.build_report(dataset, build.ReportSettings(jobs=1))
    started = []
    real = forked.in_background
    monkeypatch.setattr(forked, "in_background", lambda work: started.append(1) or real(work))
    monkeypatch.setattr(speedup, "AUTO_MIN_RUNS", 1)      # the smoke capture's few runs count as large
    monkeypatch.setattr(forked, "available_cpus", lambda: 2)
    beside = build.build_report(load([str(SMOKE)]), build.ReportSettings())
    assert started == [1] * len(dataset.groups) and serial["strategies"]
    assert json.dumps(beside, sort_keys=True) == json.dumps(serial, sort_keys=True)


def test_claims_hand_out_every_index_once_from_both_ends():
    claims = forked.Claims(5)
    taken = [claims.first(), claims.last(), claims.last(), claims.first(), claims.first()]
    assert taken == [0, 4, 3, 1, 2]
    assert claims.first() is None and claims.last() is None
    empty = forked.Claims(0)
    assert empty.first() is None and empty.last() is None


def test_claims_across_a_fork_leave_nothing_out():
    """A forked child takes from the front while this process takes from the back (once the child
    has begun), each item taking a while: together they take every index, both take some, and they
    overlap at most where they meet."""
    claims = forked.Claims(12)
    begun = multiprocessing.get_context("fork").Event()

    def take(next_index) -> list[int]:
        mine = []
        for at in iter(next_index, None):
            mine.append(at)
            begun.set()
            time.sleep(0.02)
        return mine

    child = forked.in_background(lambda: take(claims.first))
    assert begun.wait(30)
    here = take(claims.last)
    theirs = child.result()
    assert theirs[0] == 0 and here[0] == 11
    assert set(theirs) | set(here) == set(range(12))
    assert theirs == sorted(theirs) and here == sorted(here, reverse=True)
    assert len(set(theirs) & set(here)) <= 1


def test_strategy_rows_are_shared_with_the_child_and_come_back_in_order(monkeypatch):
    """build's summary: the child starts on the rows while this process is busy; this process then
    computes rows from the back; the rows come back in their order, whoever computed them."""
    from c3prof.analysis import speedup
    from c3prof.report import build

    monkeypatch.setattr(speedup, "AUTO_MIN_RUNS", 1)
    monkeypatch.setattr(forked, "available_cpus", lambda: 2)
    begun = multiprocessing.get_context("fork").Event()

    def row(at: int):
        def compute() -> dict:
            begun.set()
            time.sleep(0.05)
            return {"at": at, "pid": os.getpid()}
        return compute

    summary = build._StrategiesBeside([row(at) for at in range(8)], speedup.AUTO, 100)
    assert begun.wait(30)   # this process's other work: the child has taken the first row meanwhile
    rows = summary.result()
    assert [r["at"] for r in rows] == list(range(8))
    assert rows[0]["pid"] != os.getpid() and rows[-1]["pid"] == os.getpid()

    monkeypatch.setattr(forked, "available_cpus", lambda: 1)   # one process: every row computed here, at once
    alone = build._StrategiesBeside([row(at) for at in range(3)], speedup.AUTO, 100)
    assert [r["pid"] for r in alone.result()] == [os.getpid()] * 3


# Set by a child's start (in_processes): this process's first item waits for it, so a child
# always claims some items, however slow the fork (a loaded CI machine).
_BEGUN = multiprocessing.get_context("fork").Event()
_STARTED: int | None = None


def _start(child: int) -> None:
    global _STARTED
    _STARTED = child
    _BEGUN.set()


def _wait_for_a_child(parent: int) -> None:
    if os.getpid() == parent:
        assert _BEGUN.wait(30)
    time.sleep(0.01)


def test_in_processes_shares_the_items_and_gives_them_back_in_order():
    """Each process claims the next item when it is done with its last: both take some; each
    child ran ``start`` with its number first; the results come back in the order of the items."""
    parent = os.getpid()
    _BEGUN.clear()

    def work(at: int) -> tuple[int, int, int | None]:
        _wait_for_a_child(parent)
        return at, os.getpid(), _STARTED

    out = forked.in_processes(12, 3, work, lambda r: ("packed", r), lambda p: p[1], _start)
    assert [at for at, _, _ in out] == list(range(12))
    by_pid = {pid: started for _, pid, started in out}
    assert by_pid[parent] is None and len(by_pid) >= 2
    assert {started for pid, started in by_pid.items() if pid != parent} <= {1, 2}
    assert forked.in_processes(3, 1, work, None, None)[2][:2] == (2, parent)   # one job: all here


def _failing(how):
    """A work function whose items fail in a child, ``how``; computed here, they succeed."""
    parent = os.getpid()
    _BEGUN.clear()

    def work(at: int) -> int:
        _wait_for_a_child(parent)
        if os.getpid() != parent:
            how(at)
        return at
    return work


def test_in_processes_raises_a_childs_error_here():
    def fail(at):
        raise ValueError(f"item {at} failed in the child")

    with pytest.raises(ValueError, match="failed in the child"):
        forked.in_processes(8, 2, _failing(fail), lambda r: r, lambda p: p, _start)


def test_in_processes_names_a_child_that_died_without_reporting():
    def die(at):
        os._exit(3)   # killed, as by the OOM killer: nothing sent

    with pytest.raises(RuntimeError, match=r"came back from no process \(c3prof-share-1 exit code 3\)"):
        forked.in_processes(8, 2, _failing(die), lambda r: r, lambda p: p, _start)


def test_in_processes_sends_an_error_it_cannot_pickle_by_name():
    class Unpicklable(Exception):   # a local class: pickle cannot find it by name
        pass

    def fail(at):
        raise Unpicklable("no way back")

    with pytest.raises(RuntimeError, match="Unpicklable: no way back"):
        forked.in_processes(8, 2, _failing(fail), lambda r: r, lambda p: p, _start)


def test_work_of_its_own_first_leaves_the_rows_to_the_child(monkeypatch):
    """_StrategiesBeside.result(first): ``first`` runs in this process before it takes any row, and
    the child goes on taking rows meanwhile (here: ``first`` waits until the child has claimed them all)."""
    from c3prof.analysis import speedup
    from c3prof.report import build

    monkeypatch.setattr(speedup, "AUTO_MIN_RUNS", 1)
    monkeypatch.setattr(forked, "available_cpus", lambda: 2)
    summary = build._StrategiesBeside([lambda at=at: {"at": at, "pid": os.getpid()} for at in range(6)],
                                      speedup.AUTO, 100)
    ran = []

    def first() -> None:
        ends = summary._claims._ends
        deadline = time.monotonic() + 30
        while ends[0] < ends[1] and time.monotonic() < deadline:
            time.sleep(0.01)
        ran.append(os.getpid())

    rows = summary.result(first)
    assert ran == [os.getpid()] and [r["at"] for r in rows] == list(range(6))
    assert all(r["pid"] != os.getpid() for r in rows)


def test_report_hands_each_groups_final_rows_while_the_summary_is_computed(monkeypatch):
    """build_report(on_rows_final=...): called once per group, with the result rows, falsification
    and interference of the groups so far, which nothing changes afterwards (json_out.ReportListsJSON
    encodes them then); the report is the one built without it."""
    import copy

    from c3prof.analysis import speedup
    from c3prof.analysis.dataset import load
    from c3prof.report import build

    monkeypatch.setattr(speedup, "AUTO_MIN_RUNS", 1)
    monkeypatch.setattr(forked, "available_cpus", lambda: 2)
    traces = [str(SMOKE), str(SMOKE.with_name("h200_default_1.jsonl"))]
    seen: list = []
    lists = ("results", "falsification", "interference")
    report = build.build_report(load(traces, split_by="trace"), build.ReportSettings(),
                                lambda rep: seen.append(copy.deepcopy({k: rep[k] for k in lists})))
    plain = build.build_report(load(traces, split_by="trace"), build.ReportSettings())
    groups = [r["platform"] for r in plain["machine"]]
    assert len(seen) == len(groups) == 2
    for upto, got in enumerate(seen, 1):
        rows = got["results"]
        assert rows == report["results"][:len(rows)] and {r["platform"] for r in rows} == set(groups[:upto])
        for key in lists:   # falsification and interference as final as the rows: a prefix of the report's
            assert got[key] == report[key][:len(got[key])]
    assert seen[-1] == {k: report[k] for k in lists} and report["interference"] and report["falsification"]
    assert json.dumps(report, sort_keys=True) == json.dumps(plain, sort_keys=True)
