"""Merging several traces: pooling, duplicates, grouping, conflicts."""

import statistics

import numpy as np
import pytest
from report_helpers import SYNTHETIC, full_run, scenario, write_trace

from c3prof.analysis.dataset import Group, load
from c3prof.errors import C3profError


def two_ranks(tmp_path, second_gpu=None, reps=(3, 3)):
    scen = scenario("s")
    a = write_trace(tmp_path / "rank0.jsonl",
                    full_run(scen, "base", "default", [1.0, 1.1, 1.2], [0.5] * 3, [1.6] * 3, [1.3] * 3), rank=0,
                    world_size=2)
    machine = None
    if second_gpu:
        machine = {"record": "machine", "gpu": {"name": second_gpu}, "versions": {}, "clocks_start": {}}
    kw = {"machine": machine} if machine else {}
    b = write_trace(tmp_path / "rank1.jsonl",
                    full_run(scen, "base", "default", [2.0, 2.1, 2.2], [0.6] * 3, [1.7] * 3, [1.4] * 3), rank=1,
                    world_size=2, **kw)
    return a, b


def test_same_run_in_two_ranks_is_pooled(tmp_path):
    a, b = two_ranks(tmp_path)
    ds = load([str(a), str(b)])
    assert len(ds.groups) == 1
    run = ds.groups[0].runs["s/base/default"]
    assert run.n_reps("gemm") == 6
    assert float(np.median(run.series("gemm", "total_ms"))) == statistics.median([1.0, 1.1, 1.2, 2.0, 2.1, 2.2])
    assert run.sources == ["rank0.jsonl (rank 0)", "rank1.jsonl (rank 1)"]


def test_split_by_trace_keeps_ranks_apart(tmp_path):
    a, b = two_ranks(tmp_path)
    ds = load([str(a), str(b)], split_by="trace")
    assert len(ds.groups) == 2
    assert all(g.runs["s/base/default"].n_reps("gemm") == 3 for g in ds.groups)


def test_different_gpus_are_different_groups(tmp_path):
    a, b = two_ranks(tmp_path, second_gpu="OTHER GPU")
    ds = load([str(a), str(b)])
    assert [g.key for g in ds.groups] == ["TEST GPU (synthetic)", "OTHER GPU"]


def _capture_on(path, uuid):
    machine = {"record": "machine", "gpu": {"name": "TEST GPU (synthetic)", "uuid": uuid}, "versions": {},
               "clocks_start": {}}
    return str(write_trace(path, full_run(scenario("s"), "base", "default", [1.0] * 3, [0.5] * 3, [1.6] * 3,
                                          [1.3] * 3), machine=machine))


def test_captures_pooled_from_different_gpus_are_noted(tmp_path):
    """Two H200s differ (device sessions are lent a GPU afresh): a pool of their captures says so."""
    a, b = _capture_on(tmp_path / "a.jsonl", "GPU-1"), _capture_on(tmp_path / "b.jsonl", "GPU-1")
    assert not [n for n in load([a, b]).notes if "different GPUs" in n]
    two = load([a, _capture_on(tmp_path / "c.jsonl", "GPU-2")])
    assert [n for n in two.notes if "pools captures from 2 different GPUs" in n]


def test_same_trace_twice_is_read_once():
    ds = load([str(SYNTHETIC), str(SYNTHETIC)])
    assert ds.inputs[1].skipped and "same trace_id" in ds.inputs[1].skipped
    assert ds.groups[0].runs["cb4k-x-32M/base/default"].n_reps("gemm") == 9
    assert any("read once" in n for n in ds.notes)


def test_conflicting_definitions_are_an_error(tmp_path):
    write_trace(tmp_path / "a.jsonl", full_run(scenario("s"), "base", "d", [1.0] * 3, [1.0] * 3, [2.0] * 3, [1.5] * 3))
    write_trace(tmp_path / "b.jsonl", full_run(scenario("s", m=8), "base", "d", [1.0] * 3, [1.0] * 3, [2.0] * 3,
                                               [1.5] * 3))
    with pytest.raises(C3profError, match="cannot pool them"):
        load([str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")])


def test_series_missing_in_one_part_is_dropped_with_a_note(tmp_path):
    scen = scenario("s")
    write_trace(tmp_path / "a.jsonl", full_run(scen, "base", "d", [1.0] * 3, [1.0] * 3, [2.0] * 3, [1.5] * 3))
    write_trace(tmp_path / "b.jsonl", full_run(scen, "base", "d", [1.0] * 3, [1.0] * 3, [2.0] * 3, [1.5] * 3,
                                               starts=False))
    ds = load([str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")])
    conc = ds.groups[0].runs["s/base/d"].phases["concurrent"]
    assert "gemm_start_ms" not in conc and conc["total_ms"].size == 6
    assert any("gemm_start_ms" in n for n in ds.notes)


def test_directory_expands_and_variant_order(tmp_path):
    scen = scenario("s")
    recs = (full_run(scen, "sp", "gemm_first", [1.0] * 3, [1.0] * 3, [2.0] * 3, [1.5] * 3)
            + full_run(scen, "sp", "comm_first", [1.0] * 3, [1.0] * 3, [2.0] * 3, [1.5] * 3))
    write_trace(tmp_path / "t.jsonl", recs)
    ds = load([str(tmp_path)])
    assert ds.groups[0].variant_order["sp"] == ["gemm_first", "comm_first"]
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(C3profError, match="no \\*.jsonl"):
        load([str(empty)])


def test_unfinished_capture_is_noted(tmp_path):
    write_trace(tmp_path / "t.jsonl", full_run(scenario("s"), "base", "d", [1.0] * 3, [1.0] * 3, [2.0] * 3,
                                               [1.5] * 3), end=False)
    ds = load([str(tmp_path / "t.jsonl")])
    assert not ds.inputs[0].finished and any("did not finish" in n for n in ds.notes)


class _FirstSeen:
    """The rule of Group.round_id written out plainly: a (sweep, index) not seen before gets the next
    integer (0, 1, ...), and the id's sweep is remembered; one seen before keeps its id."""

    def __init__(self) -> None:
        self.ids: dict[tuple[str, int], int] = {}
        self.round_sweep: dict[int, str] = {}

    def round_id(self, sweep: str, index: int) -> int:
        if (sweep, index) not in self.ids:
            self.ids[(sweep, index)] = len(self.ids)
            self.round_sweep[len(self.ids) - 1] = sweep
        return self.ids[(sweep, index)]


def test_round_ids_give_the_ids_of_round_id_in_the_same_order():
    """Group.round_ids (kept per sweep and indices) and Group.round_id give every index the id of the
    rule (_FirstSeen), with the same sweeps; also when scalar calls, new indices and other sweeps
    come in between, and for repeated indices (answered from what it kept). SYNTHETIC indices."""
    rng = np.random.default_rng(4)
    batched, scalar = Group(key="g", gpu_name="g"), _FirstSeen()
    for step in range(60):
        sweep = f"s{int(rng.integers(0, 3))}"
        if step % 7 == 3:   # a scalar call in between
            index = int(rng.integers(0, 40))
            assert batched.round_id(sweep, index) == scalar.round_id(sweep, index)
            continue
        indices = rng.integers(0, 40, size=int(rng.integers(0, 30)))
        want = np.array([scalar.round_id(sweep, int(i)) for i in indices], dtype=np.int64)
        got = batched.round_ids(sweep, indices)
        assert got.dtype == np.int64 and np.array_equal(got, want)
        assert np.array_equal(batched.round_ids(sweep, indices.copy()), want)   # now from what it kept
        assert not got.flags.writeable
        shared = indices.copy()
        shared.flags.writeable = False   # as _rounds_array shares them: the same kept answer
        assert batched.round_ids(sweep, shared) is batched.round_ids(sweep, shared) is got
    assert batched.round_sweep == scalar.round_sweep


def test_round_ids_of_an_array_that_can_change_follow_its_content():
    """Group.round_ids keeps answers by the array itself only for read-only arrays that own their
    numbers: a writeable array (or a view) changed in place after a call gets the ids of its new
    content, as the rule of round_id (_FirstSeen) gives them. SYNTHETIC indices."""
    batched, scalar = Group(key="g", gpu_name="g"), _FirstSeen()
    owned = np.array([3, 1, 3, 2], dtype=np.int64)
    base = np.array([7, 8, 9, 7], dtype=np.int64)
    for indices in (owned, base[:3]):
        first = batched.round_ids("s", indices)
        assert np.array_equal(first, [scalar.round_id("s", int(i)) for i in indices])
        indices[:] = indices[::-1] + 10   # new indices, in place
        again = batched.round_ids("s", indices)
        assert np.array_equal(again, [scalar.round_id("s", int(i)) for i in indices])
        assert not np.array_equal(again, first)
    view = base[:3]
    view.flags.writeable = False   # read-only, but its base can still change it: not kept by identity
    kept = batched.round_ids("s", view)
    base[:3] = [40, 41, 42]
    assert np.array_equal(batched.round_ids("s", view), [scalar.round_id("s", i) for i in (40, 41, 42)])
    assert not np.array_equal(kept, batched.round_ids("s", view))
    assert batched.round_sweep == scalar.round_sweep


def test_equal_round_lists_share_one_read_only_array():
    """_rounds_array: the phases of a scenario's runs repeat their round list; equal lists (the same
    ints) become one read-only array, other lists arrays of their own."""
    from c3prof.analysis.dataset import _rounds_array

    seen: dict = {}
    a, b, c = _rounds_array([0, 1, 2], seen), _rounds_array([0, 1, 2], seen), _rounds_array([0, 2, 1], seen)
    assert a is b and a is not c and not a.flags.writeable and a.dtype == np.int64
    assert np.array_equal(c, [0, 2, 1]) and _rounds_array([5], None).flags.writeable
