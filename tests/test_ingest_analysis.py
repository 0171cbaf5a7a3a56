"""C3 regions and per-scenario results on the synthetic fixtures, against the planned numbers."""

from __future__ import annotations

from pathlib import Path

import pytest

from c3prof.ingest.analyze import ingest
from c3prof.ingest.errors import KinetoTraceError
from c3prof.ingest.events import COLLECTIVE, GEMM, TRANSFER, CommInfo, GemmShape, GpuOp
from c3prof.ingest.regions import find_regions, speedups, taxonomy
from c3prof.ingest.summary import summarize

DATA = Path(__file__).parent / "data"
RANK0 = DATA / "synthetic_kineto_rank0.json"
RANK1 = DATA / "synthetic_kineto_rank1.json.gz"
import c3prof.ingest._kineto  # noqa: E402,F401  (built by pip install -e .; missing fails, not skips)


def test_definitions():
    assert taxonomy(200, 100) == "G-long" and taxonomy(100, 200) == "C-long" and taxonomy(110, 100) == "GC-equal"
    assert taxonomy(114, 100) == "GC-equal" and taxonomy(116, 100) == "G-long"
    ideal, realized, fraction = speedups(200.0, 350.0, 420.0)
    assert ideal == pytest.approx(550 / 350) and realized == pytest.approx(550 / 420)
    assert fraction == pytest.approx((550 / 420 - 1) / (550 / 350 - 1))
    assert speedups(100.0, 0.0, 100.0)[2] is None  # nothing to gain: no fraction


def _op(kind, start, end, stream, **kw):
    return GpuOp(kind=kind, rank=0, device=0, stream=stream, start_ns=start, end_ns=end,
                 kernel=kw.pop("kernel", kind), **kw)


def test_sweep_pairs_and_alone():
    g = GemmShape(8, 8, 8, "bf16")
    c = CommInfo("all_reduce", 1024)
    ops = [
        _op(GEMM, 0, 100, 7, gemm=g),             # alone
        _op(COLLECTIVE, 200, 300, 20, comm=c),    # alone
        _op(GEMM, 400, 500, 7, gemm=g),           # overlaps the long collective
        _op(GEMM, 500, 600, 7, gemm=g),           # touches at 500: overlaps it too (starts before it ends)
        _op(COLLECTIVE, 450, 650, 20, comm=c),
        _op(GEMM, 650, 700, 7, gemm=g),           # starts exactly when it ends: alone
        _op(TRANSFER, 660, 690, 24, comm=CommInfo("transfer", 10, carrier="copy_engine")),
    ]
    rs = find_regions(ops)
    pairs = {(r.gemm.start_ns, r.comm.start_ns): r.overlap_ns for r in rs.regions}
    assert pairs == {(400, 450): 50, (500, 450): 100, (650, 660): 30}
    assert sorted(rs.alone[(0, ops[0].identity)]) == [100]
    assert rs.alone[(0, ops[1].identity)] == [100]
    (tl,) = rs.timelines
    assert (tl.gemm_ns, tl.comm_ns, tl.c3_ns) == (350, 330, 180)


def _result(results, prefix):
    (r,) = [r for r in results if r.scenario.startswith(prefix)]
    return r


def test_planned_numbers_rank0():
    res = ingest([RANK0])
    r = _result(res.results, "4096x4096x4096-bf16--all_reduce-64MiB")
    # plan: GEMM alone 200 us, all_reduce alone 350 us; together 230 and 420, launched together
    assert r.n_instances == 6 and r.ranks == [0]
    assert r.t_gemm_alone_ms == pytest.approx(0.200) and r.t_comm_alone_ms == pytest.approx(0.350)
    assert r.gemm_slowdown == pytest.approx(1.15) and r.comm_slowdown == pytest.approx(1.20)
    assert r.ideal_speedup == pytest.approx(550 / 350)
    assert r.realized_speedup == pytest.approx(550 / 420)
    assert r.fraction_of_ideal == pytest.approx((550 / 420 - 1) / (550 / 350 - 1))
    assert r.taxonomy == "C-long"
    assert r.fraction_ci[0] < r.fraction_of_ideal < r.fraction_ci[1]
    assert r.overlap_share == pytest.approx(1.0) and r.overlap_fraction == pytest.approx(1.0)
    assert r.comm.carrier == "sm" and r.replay_op == "all_reduce"
    assert r.medians_ms == pytest.approx({"gemm": 0.2, "comm": 0.35, "gemm_concurrent": 0.23,
                                          "comm_concurrent": 0.42, "concurrent": 0.42})
    assert r.ideal_speedup_ci[0] < r.ideal_speedup < r.ideal_speedup_ci[1]
    assert r.sources == [str(RANK0)]

    h = _result(res.results, "2048x8192x8192-bf16--transfer-HtoD-16MiB")
    assert h.taxonomy == "G-long" and h.comm.carrier == "copy_engine" and h.replay_op == "transfer"
    assert h.fraction_of_ideal == pytest.approx((705 / 404 - 1) / (705 / 400 - 1))

    # partial overlap: DtoH starts 150 us into a 200 us GEMM
    d = _result(res.results, "4096x4096x4096-bf16--transfer-DtoH-16MiB")
    assert d.overlap_ns == 3 * 50_000
    assert d.overlap_share == pytest.approx(50 / 200) and d.overlap_fraction == pytest.approx(50 / 200)
    assert d.realized_speedup == pytest.approx(505 / 455)

    rsr = _result(res.results, "2048x8192x8192-bf16--reduce_scatter-64MiB")
    # only 2 alone instances of the reduce_scatter: "no reference" instead of a ratio
    assert rsr.n_comm_alone == 2 and rsr.comm_slowdown is None and rsr.taxonomy is None
    assert rsr.gemm_slowdown is not None and rsr.fraction_of_ideal is None
    assert any(n.startswith("no reference: 2 non-overlapped instance(s) of this communication") for n in rsr.notes)
    assert rsr.replay_op == "all_gather" and any(n.startswith("mapped") for n in rsr.notes)
    assert any("reduce_scatter replayed as all_gather" in n for n in res.notes)

    # time shares add up to 1 and are ordered
    assert sum(x.time_share for x in res.results) == pytest.approx(1.0)
    assert [x.overlap_ns for x in res.results] == sorted((x.overlap_ns for x in res.results), reverse=True)
    # the bmm GEMM never overlapped: no result for it
    assert not any(x.gemm is not None and x.gemm.batch > 1 for x in res.results)


def test_no_map_nearest_refuses_reduce_scatter():
    res = ingest([RANK0], map_nearest=False)
    r = _result(res.results, "2048x8192x8192-bf16--reduce_scatter-64MiB")
    assert r.replay_op is None and any("--map-nearest" in n for n in r.notes)


def test_merge_ranks():
    both = ingest([RANK1, RANK0])  # order does not matter: ranks come from distributedInfo
    assert [(t.rank, t.rank_from) for t in both.traces] == [(1, "distributedInfo"), (0, "distributedInfo")]
    r = _result(both.results, "4096x4096x4096-bf16--all_reduce-64MiB")
    assert r.n_instances == 12 and r.ranks == [0, 1] and r.n_gemm_alone == 10
    # rank 1 runs 2% slower everywhere: ratios stay the same
    assert r.gemm_slowdown == pytest.approx(1.15, rel=0.02)
    assert {(t.rank, t.device) for t in both.region_set.timelines} == {(0, 0), (1, 0)}


def test_same_rank_twice_is_an_error():
    with pytest.raises(KinetoTraceError, match="both say they are rank 0"):
        ingest([RANK0, RANK0])


def test_no_alone_instance_gives_unknown_speedups():
    g = GemmShape(8, 8, 8, "bf16")
    c = CommInfo("all_gather", 4096)
    alone_comms = [_op(COLLECTIVE, 200 + 100 * i, 280 + 100 * i, 20, comm=c) for i in range(3)]
    ops = [_op(GEMM, 0, 100, 7, gemm=g), _op(COLLECTIVE, 10, 90, 20, comm=c)] + alone_comms
    (r,) = summarize(find_regions(ops))
    assert r.gemm_slowdown is None and r.fraction_of_ideal is None and r.taxonomy is None
    assert r.comm_slowdown == pytest.approx(1.0)
    assert any(n.startswith("no reference: 0 non-overlapped instance(s) of this GEMM") for n in r.notes)
