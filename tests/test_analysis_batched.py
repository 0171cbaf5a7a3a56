"""The report's batched statistics give the numbers of the one-series-at-a-time reference path.

``c3prof report`` draws the median replicates of many series in one call (many_bootstrap_medians,
SeriesBank.draw) and computes many intervals at once (percentile_cis, PendingCIs). Each is
checked here against the per-series path it replaces, for equality (not closeness): same keyed
generators, same replicates, same intervals. The inputs are small SYNTHETIC series.
"""

import numpy as np
import pytest

from c3prof.analysis import speedup
from c3prof.analysis.dataset import Group, MergedRun
from c3prof.analysis.speedup import BootstrapSettings, PendingCIs, SeriesBank, analyze_group, estimate, ratio, \
    run_metrics
from c3prof.analysis.stats import (CI, _median_rank_alias, _median_rank_table, bootstrap_medians,
                                   many_bootstrap_medians, percentile_ci, percentile_cis, rng_for)


def _alias_medians_reference(xs: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """The sampler as it was written before batching (one sorted series), kept as the reference."""
    n = xs.size
    _, same = _median_rank_table(n)
    keep, alias = _median_rank_alias(n)
    scaled = rng.random(n_resamples) * n
    cell = scaled.astype(np.intp)
    j1 = np.where(scaled - cell < keep[cell], cell, alias[cell])
    if same is None:
        return xs[j1]
    u = rng.random((2, n_resamples))
    jj = j1 + 1
    step = np.ceil((n - jj) * -np.expm1(np.log(u[1]) / (n - n // 2))).astype(np.int64)
    j2 = np.where(u[0] < same[j1], j1, np.clip(j1 + np.maximum(step, 1), 0, n - 1))
    return 0.5 * (xs[j1] + xs[j2])


@pytest.mark.parametrize("n", [2, 3, 9, 10, 25, 30])
def test_many_bootstrap_medians_equals_one_series_at_a_time(n):
    data = np.random.default_rng(n).lognormal(0, 0.1, (7, n))
    xs = np.sort(data, axis=1)
    keys = [("g", f"run{i}", "serial", "total_ms") for i in range(len(xs))]
    batched = many_bootstrap_medians(xs, [rng_for(5, *k) for k in keys], 300)
    for row, x, k in zip(batched, data, keys):
        assert np.array_equal(row, bootstrap_medians(x, 300, rng_for(5, *k)))
        assert np.array_equal(row, _alias_medians_reference(np.sort(x), 300, rng_for(5, *k)))


def test_many_bootstrap_medians_outside_the_table_uses_the_per_series_sampler():
    xs = np.sort(np.random.default_rng(0).random((2, 2049)), axis=1)  # above _TABLE_MAX_N: Beta draws
    batched = many_bootstrap_medians(xs, [rng_for(1, i) for i in range(2)], 50)
    assert all(np.array_equal(b, bootstrap_medians(x, 50, rng_for(1, i), presorted=True))
               for i, (b, x) in enumerate(zip(batched, xs)))


def test_rng_for_stream_is_that_of_the_seed_list():
    # rng_for passes its entropy as a uint32 array; the stream must be np.random.default_rng([seed, crc]).
    import zlib
    for seed, key in [(0, ("a",)), (2412_14335, ("H200", "s/base/default", "gemm", "total_ms")), (7, ())]:
        digest = zlib.crc32("\x1f".join(str(k) for k in key).encode("utf-8"))
        ref = np.random.default_rng([seed & 0xFFFFFFFF, digest]).random(20)
        assert np.array_equal(rng_for(seed, *key).random(20), ref)


def test_percentile_cis_equals_percentile_ci_row_by_row():
    rng = np.random.default_rng(3)
    rows = [rng.lognormal(0, 0.2, 400) for _ in range(5)]
    rows.append(np.full(400, 1.5))                     # no spread
    nan_row = rng.random(400)
    nan_row[[3, 70]] = np.nan                          # undefined in 2 resamples
    inf_row = rng.random(400)
    inf_row[9] = np.inf
    rows += [nan_row, inf_row, np.round(rng.random(400), 1)]  # ties
    block = np.stack(rows)
    for conf in (0.95, 0.5, 0.999):
        assert percentile_cis(block, conf) == [percentile_ci(r, conf) for r in rows]
    for b in (2, 3, 5):                                 # short rows: the general partition path
        assert percentile_cis(block[:, :b], 0.9) == [percentile_ci(r[:b], 0.9) for r in rows]
    assert percentile_cis(np.empty((2, 0))) == [percentile_ci(np.empty(0))] * 2


def test_pending_cis_set_the_interval_estimate_computes_now():
    rng = np.random.default_rng(4)
    run = _run("s", "base", "v", rng)
    bank = SeriesBank(BootstrapSettings(n_resamples=400))
    a, b = bank.get(run, "concurrent", "gemm_ms"), bank.get(run, "gemm", "total_ms")
    now = estimate(ratio, [a, b], ["a", "b"], 0.95)
    later = PendingCIs(0.95)
    deferred = estimate(ratio, [a, b], ["a", "b"], 0.95, later=later)
    vetoed = estimate(ratio, [a, b], ["a", "b"], 0.95, later=later, veto=lambda: "refused")
    assert len(later) == 2 and not deferred.ci.ok
    later.flush()
    assert deferred.ci == now.ci and now.ci.ok
    assert vetoed.ci == CI(None, None, "refused")


def _run(name, strategy, variant, rng, n=9, rounds=None):
    def s(scale):
        return scale * rng.lognormal(0, 0.05, n)
    g, c = s(1.0), s(0.7)
    conc = {"total_ms": s(1.2), "gemm_ms": g * 1.1, "comm_ms": c * 1.2, "gemm_start_ms": np.zeros(n),
            "comm_start_ms": s(0.01)}
    run = MergedRun(id=f"{name}/{strategy}/{variant}", group="g", scenario={"name": name}, strategy=strategy,
                    variant=variant, params={}, phases={"gemm": {"total_ms": g}, "comm": {"total_ms": c},
                                                        "serial": {"total_ms": s(1.75)}, "concurrent": conc})
    if rounds is not None:
        run.rounds = {p: np.asarray(rounds) for p in run.phases}
    return run


BASE_AND_SP = (("base", "default"), ("sp", "a"))


def _runs(seed: int, scenarios: int, strategies=BASE_AND_SP, **kwargs) -> list[MergedRun]:
    """_run of every (strategy, variant) of scenarios s0, s1, ..., from one generator seeded ``seed``."""
    rng = np.random.default_rng(seed)
    return [_run(f"s{s}", strategy, variant, rng, **kwargs)
            for s in range(scenarios) for strategy, variant in strategies]


def _group(runs: list[MergedRun]) -> Group:
    """Group "g" of these runs, each strategy's variants in the order they first appear."""
    order: dict[str, list[str]] = {}
    for r in runs:
        if r.variant not in order.setdefault(r.strategy, []):
            order[r.strategy].append(r.variant)
    return Group(key="g", gpu_name="g", runs={r.id: r for r in runs}, variant_order=order)


def _metrics_json(m):
    """Every estimate of a RunMetrics as plain values (value, CI) for comparison."""
    names = ("ideal", "realized", "fraction", "own_ideal", "own_realized", "own_fraction", "gemm_slowdown",
             "comm_slowdown", "overlap", "gemm_drift")
    return {k: (getattr(m, k).value, getattr(m, k).ci) for k in names} | {"medians": m.medians, "paired": m.paired}


@pytest.mark.parametrize("paired", [False, True])
def test_analyze_group_batched_equals_run_by_run(paired):
    """analyze_group (series drawn per scenario in one batch, intervals deferred and computed in
    blocks) against run_metrics called run by run with a fresh bank (every series drawn and every
    interval computed on its own)."""
    rng = np.random.default_rng(11)
    runs = []
    for s in range(3):
        for strategy, variant, n in (("base", "default", 9), ("sp", "a", 9), ("dma", "ce", 10)):
            runs.append(_run(f"s{s}", strategy, variant, rng, n=n,
                             rounds=(np.arange(n) % 3 + 3 * s) if paired else None))
    g = _group(runs)
    settings = BootstrapSettings(n_resamples=500)
    batched = analyze_group(g, SeriesBank(settings))
    bases = {r.name: r for r in runs if r.strategy == "base"}
    with np.errstate(divide="ignore", invalid="ignore"):
        for m in batched:
            bank = SeriesBank(settings)
            scenario_runs = [r for r in runs if r.name == m.run.name]
            bank.begin_scenario("g", m.run.name, scenario_runs, g.round_sweep)
            one = run_metrics(m.run, bases[m.run.name], bank)
            assert _metrics_json(m) == _metrics_json(one)
            assert m.paired == paired or m.run.strategy == "base"
            assert np.array_equal(m.fraction.replicates, one.fraction.replicates)


def test_batches_of_scenarios_are_cut_by_the_memory_of_their_round_draws(monkeypatch):
    """Scenarios of many rounds are drawn fewer at a time (PREPARE_BYTES), scenarios without rounds
    up to PREPARE_SCENARIOS, always at least one; the metrics do not depend on where batches end."""
    rng = np.random.default_rng(5)
    runs = [_run(f"s{s}", strategy, variant, rng, n=12, rounds=np.arange(12) + 12 * s if s % 3 else None)
            for s in range(7) for strategy, variant in BASE_AND_SP]
    g = _group(runs)
    by_scenario = {}
    for r in runs:
        by_scenario.setdefault(r.name, []).append(r)
    names = list(by_scenario)
    settings = BootstrapSettings(n_resamples=200)
    whole = analyze_group(g, SeriesBank(settings))
    one_draw = 8 * 200 * 12   # bytes of one scenario's round draw
    monkeypatch.setattr(speedup, "PREPARE_BYTES", 2 * one_draw)
    ends, at = [], 0
    while at < len(names):
        at = speedup._batch_end(names, by_scenario, at, 200)
        ends.append(at)
    assert ends == [4, 7]   # s0 (no rounds) s1 s2 s3 (none) | s4 s5 s6 (none): two draws each
    monkeypatch.setattr(speedup, "PREPARE_BYTES", 1)
    assert speedup._batch_end(names, by_scenario, 1, 200) == 2   # one at least, whatever the bound
    cut = analyze_group(g, SeriesBank(settings))
    assert [_metrics_json(m) for m in cut] == [_metrics_json(m) for m in whole]
    assert all(np.array_equal(a.fraction.replicates, b.fraction.replicates) for a, b in zip(cut, whole))


@pytest.mark.parametrize("jobs", [2, 3])
def test_analyze_group_in_several_processes_gives_the_same_metrics(jobs):
    from c3prof import forked
    if not forked.can_fork():
        pytest.skip("needs the fork start method")
    runs = _runs(12, 5)
    g = _group(runs)
    settings = BootstrapSettings(n_resamples=300)
    serial = analyze_group(g, SeriesBank(settings), jobs=1)
    split = analyze_group(g, SeriesBank(settings), jobs=jobs)
    assert all(m.run is r for m, r in zip(split, runs)) and len(split) == len(runs)
    assert all(m.base is (r if r.strategy == "base" else g.runs[f"{r.name}/base/default"])
               for m, r in zip(split, runs))
    assert [_metrics_json(m) for m in split] == [_metrics_json(m) for m in serial]
    assert all(np.array_equal(a.fraction.replicates, b.fraction.replicates) for a, b in zip(split, serial))


def test_report_with_jobs_is_the_report_without():
    """build_report with the bootstrap shared by two processes, on a capture measured in rounds and
    visits (tests/data/h200_default_visits.jsonl: the paired, two-stage path), is the same report."""
    from c3prof import forked
    if not forked.can_fork():
        pytest.skip("needs the fork start method")
    from pathlib import Path

    from c3prof.analysis.dataset import load
    from c3prof.report.build import ReportSettings, build_report
    trace = Path(__file__).parent / "data" / "h200_default_visits.jsonl"
    one = build_report(load([str(trace)]), ReportSettings(boot=BootstrapSettings(n_resamples=300)))
    two = build_report(load([str(trace)]), ReportSettings(boot=BootstrapSettings(n_resamples=300), jobs=2))
    assert one["results"] and any(r["paired"] and r["visits"] > 1 for r in one["results"])
    assert two == one


def test_fast_median_is_numpys_median():
    from c3prof.analysis.stats import fast_median
    rng = np.random.default_rng(5)
    for n in list(range(1, 40)) + [999, 1000]:
        x = rng.lognormal(0, 1, n) * rng.choice([1e-3, 1.0, 1e3])
        assert fast_median(x) == float(np.median(x))
        assert fast_median(np.round(x, 1)) == float(np.median(np.round(x, 1)))  # ties


@pytest.mark.parametrize("n", [2, 3, 7, 10, 25, 30, 64, 2048])
def test_alias_bucket_lookup_equals_the_alias_arithmetic(n, monkeypatch):
    """The bucket table answers exactly what the alias arithmetic answers, also for uniforms on and
    next to every cell boundary, keep threshold and bucket edge (where rounding could disagree)."""
    from c3prof.analysis import stats
    from c3prof.analysis.stats import _alias_draw, _alias_draw_exact, _alias_buckets
    monkeypatch.setattr(stats, "_DRAWS_BEFORE_TABLE", 0)   # the table from the first draw
    keep, _ = _median_rank_alias(n)
    edges = np.concatenate([np.arange(n) / n, (np.arange(n) + keep) / n, np.arange(0, 1 << 16, 7) / (1 << 16)])
    edges = edges[(edges > 0) & (edges < 1)]
    near = np.concatenate([edges, np.nextafter(edges, 0), np.nextafter(edges, 1), [0.0, np.nextafter(1.0, 0)]])
    near = near[(near >= 0) & (near < 1)]
    for u in (near, np.random.default_rng(n).random((3, 20000))):
        assert np.array_equal(_alias_draw(u, n), _alias_draw_exact(u, n))
    assert (_alias_buckets(n) < 0).sum() <= 4 * n  # only the buckets a boundary falls in


def test_few_draws_of_a_length_build_no_bucket_table(monkeypatch):
    """An ingest draws a few thousand medians of each of many lengths: the arithmetic serves them,
    and the table (about 10^5 draws' worth of work) is built only for a length drawn often."""
    from c3prof.analysis import stats
    monkeypatch.setattr(stats, "_exact_draws", {})
    stats._alias_buckets.cache_clear()
    u = np.random.default_rng(0).random(2000)
    assert np.array_equal(stats._alias_draw(u, 13), stats._alias_draw_exact(u, 13))
    assert stats._alias_buckets.cache_info().currsize == 0
    big = np.random.default_rng(1).random(stats._DRAWS_BEFORE_TABLE)
    stats._alias_draw(big, 13)
    assert np.array_equal(stats._alias_draw(u, 13), stats._alias_draw_exact(u, 13))
    assert stats._alias_buckets.cache_info().currsize == 1


@pytest.mark.parametrize("name", ["h200_default_1.jsonl", "h200_default_proc2_t.jsonl"])
def test_plan_scenarios_equals_plan_rounds_with_numpy(name, monkeypatch):
    """The round plans of a recorded capture (one visit, and four: visits then rounds), drawn for all
    scenarios at once (the compiled keyed_round_tables, one-visit draws as int8 RoundTables), are the
    plans numpy draws one scenario at a time from each scenario's keyed generator."""
    from pathlib import Path

    from c3prof.analysis import dataset, stats

    group = dataset.load([Path(__file__).parent / "data" / name]).groups[0]
    by_scenario: dict[str, list[MergedRun]] = {}
    for run in group.runs.values():
        if run.complete:
            by_scenario.setdefault(run.name, []).append(run)
    settings = BootstrapSettings(n_resamples=400)
    built = stats._bootstrap
    batched = SeriesBank(settings).plan_scenarios(group.key, list(by_scenario.items()), group.round_sweep)
    monkeypatch.setattr(stats, "_bootstrap", None)
    bank = SeriesBank(settings)
    one_by_one = [bank.plan_rounds(group.key, s, runs, group.round_sweep) for s, runs in by_scenario.items()]
    assert sum(p.counts is not None for p in batched) == len(by_scenario) > 10
    # Where the kernels are built (CI builds them), a one-visit draw comes as their RoundTable.
    assert all(isinstance(p.counts, stats.RoundTable) == (built is not None and p.visit_rounds is None)
               for p in batched)
    for got, want in zip(batched, one_by_one, strict=True):
        assert np.array_equal(got.ids, want.ids) and np.array_equal(stats.round_counts_of(got.counts), want.counts)
        assert (got.visit_rounds is None) == (want.visit_rounds is None) == ("proc2" not in name)
        for a, b in zip(got.visit_rounds or [], want.visit_rounds or [], strict=True):
            assert np.array_equal(a, b)


def test_auto_jobs_forks_only_for_large_groups(monkeypatch):
    from c3prof import forked
    from c3prof.analysis import speedup

    monkeypatch.setattr(forked, "available_cpus", lambda: 16)
    assert speedup.auto_jobs(speedup.AUTO_MIN_RUNS - 1) == 1
    assert speedup.auto_jobs(speedup.AUTO_MIN_RUNS) == speedup.MAX_AUTO_JOBS == 4
    monkeypatch.setattr(forked, "available_cpus", lambda: 2)
    assert speedup.auto_jobs(10**6) == 2
    monkeypatch.setattr(forked, "can_fork", lambda: False)
    assert speedup.auto_jobs(10**6) == 1


def test_kept_rows_hand_out_blocks_and_learn_their_owners():
    """Rows are handed out in blocks, in order; PendingCIs names the estimate of each row it fills
    (owners[i] holds rows[i]), which is how a child's packed metrics name their rows."""
    from c3prof.analysis.speedup import Estimate, KeptRows, PendingCIs
    from c3prof.analysis.stats import ROW_RATIO, row_intervals_apply

    store = KeptRows(5, 4)
    a, b = store.take(3), store.take(1)
    assert a.shape == (3, 5) and b.shape == (1, 5) and a.dtype == np.float32 and store.take(1) is None
    assert np.shares_memory(a, store.rows) and KeptRows(5, 0).take(1) is None
    if not row_intervals_apply(300, 0.95):
        pytest.skip("needs the compiled row kernel")
    store = KeptRows(300, 3)
    pending = PendingCIs(0.95, 300)
    pending.kept_rows = store
    reps = [np.random.default_rng(i).random(300) + 1.0 for i in range(4)]
    ests = [Estimate(1.0, None) for _ in range(4)]
    for est, keep, (x, y) in zip(ests, (True, False, True, True), ((0, 1), (1, 2), (2, 3), (3, 0))):
        pending.add_row(est, ROW_RATIO, [reps[x], reps[y]], keep)
    pending.flush()
    assert store.owners == [ests[0], ests[2], ests[3]] and ests[1].replicates is None
    for row, est in enumerate(store.owners):
        assert est.replicates is not None and np.shares_memory(est.replicates, store.rows[row])


def test_packed_metrics_travel_as_columns_and_come_back_the_same():
    """_pack_metrics / _unpack_metrics (a forked child's metrics, pickled): every field equal, None
    kept apart from numbers, a scenario's shared estimate one object again, kept rows found in the
    store or carried as arrays."""
    import pickle

    from c3prof.analysis import speedup
    settings = BootstrapSettings(n_resamples=300)
    g = _group(_runs(16, 4, BASE_AND_SP + (("dma", "ce"),)))
    metrics = analyze_group(g, SeriesBank(settings))
    store = speedup.KeptRows(300, 2)
    kept = [m.fraction for m in metrics if m.fraction.replicates is not None][:2]
    store.rows[:] = [e.replicates for e in kept]
    store.owners += kept
    metrics[0].medians["T_g_cc"] = None   # a series the trace lacks
    metrics[1].by_visit = ((1.5, 0.25), (1.4, float("nan")))
    back = speedup._unpack_metrics(g, pickle.loads(pickle.dumps(speedup._pack_metrics(metrics, {"s": store}))),
                                   {"s": store})
    assert len(back) == len(metrics)
    for a, b in zip(back, metrics):
        assert (a.run, a.base, a.reference, a.reference_note, a.paired, a.visits, a.n_reps) == \
            (b.run, b.base, b.reference, b.reference_note, b.paired, b.visits, b.n_reps)
        assert a.medians == b.medians and a.base_medians == b.base_medians
        assert str(a.by_visit) == str(b.by_visit)
        for name in speedup._ESTIMATE_FIELDS:
            x, y = getattr(a, name), getattr(b, name)
            assert (x.value, x.ci) == (y.value, y.ci), name
            assert (x.replicates is None) == (y.replicates is None) and (
                x.replicates is None or np.array_equal(x.replicates, y.replicates)), name
    assert back[0].medians["T_g_cc"] is None
    by_id = {m.run.id: m for m in back}
    for est in kept:
        m = next(m for m in metrics if m.fraction is est)
        assert np.shares_memory(by_id[m.run.id].fraction.replicates, store.rows)
    others = [m for m in back if m.run.name == "s2" and m.run.strategy != "base"]   # sp and dma: base's ideal
    assert len(others) == 2 and others[0].ideal is others[1].ideal


@pytest.mark.parametrize("room", [0, 1, 4])
def test_forked_children_return_their_kept_rows_through_the_shared_store(room, monkeypatch):
    """The children's kept replicates come back through KeptRows (or, where a store runs out of room,
    pickled with the metrics): the same replicates either way, and the runs' shared ideal estimate
    stays one object."""
    from c3prof import forked
    from c3prof.analysis import speedup
    if not forked.can_fork():
        pytest.skip("needs the fork start method")
    monkeypatch.setattr(speedup, "KEPT_PER_RUN", room)
    runs = _runs(13, 6, BASE_AND_SP + (("dma", "ce"),), rounds=np.arange(9) % 3)
    g = _group(runs)
    settings = BootstrapSettings(n_resamples=300)
    serial = analyze_group(g, SeriesBank(settings), jobs=1)
    split = analyze_group(g, SeriesBank(settings), jobs=3)
    assert [_metrics_json(m) for m in split] == [_metrics_json(m) for m in serial]
    for a, b in zip(split, serial):
        for name in speedup._ESTIMATE_FIELDS:
            got, want = getattr(a, name).replicates, getattr(b, name).replicates
            assert (got is None) == (want is None) and (got is None or np.array_equal(got, want)), name
    last = [m for m in split if m.run.name == "s5"]
    assert last[1].ideal is last[2].ideal and last[1].ideal.replicates is not None


def test_report_jobs_default_to_auto_and_accept_a_count():
    from c3prof.cli import build_parser
    from c3prof.report.build import ReportSettings
    from c3prof.report.cli import _settings
    from c3prof.analysis.speedup import AUTO

    parse = build_parser("report").parse_args
    assert _settings(parse(["report", "t.jsonl"])).jobs == AUTO == ReportSettings().jobs
    assert _settings(parse(["report", "t.jsonl", "-j", "auto"])).jobs == AUTO
    assert _settings(parse(["report", "t.jsonl", "--jobs", "3"])).jobs == 3


def test_auto_jobs_give_the_serial_metrics(monkeypatch):
    """jobs=AUTO on a group past AUTO_MIN_RUNS forks (here lowered to the test's 12 runs): the same metrics."""
    from c3prof import forked
    from c3prof.analysis import speedup
    if not forked.can_fork():
        pytest.skip("needs the fork start method")
    monkeypatch.setattr(speedup, "AUTO_MIN_RUNS", 12)
    monkeypatch.setattr(forked, "available_cpus", lambda: 2)
    calls = []
    real = forked.in_processes
    monkeypatch.setattr(forked, "in_processes", lambda items, jobs, *a: calls.append(jobs) or real(items, jobs, *a))
    g = _group(_runs(14, 6))
    settings = BootstrapSettings(n_resamples=300)
    auto = analyze_group(g, SeriesBank(settings), jobs=speedup.AUTO)
    assert calls == [2]
    assert [_metrics_json(m) for m in auto] == [_metrics_json(m) for m in analyze_group(g, SeriesBank(settings))]


def test_refused_fork_and_refused_mappings_give_the_serial_metrics(monkeypatch, capsys):
    """Where the system refuses the shared mappings, the kept rows come back pickled; where it refuses
    the fork, this process computes everything and says so on stderr: the same metrics either way."""
    import mmap
    import multiprocessing.context

    from c3prof import forked
    if not forked.can_fork():
        pytest.skip("needs the fork start method")
    g = _group(_runs(15, 4))
    settings = BootstrapSettings(n_resamples=300)
    serial = [_metrics_json(m) for m in analyze_group(g, SeriesBank(settings))]

    def refuse(*args, **kwargs):
        raise OSError(12, "Cannot allocate memory")

    monkeypatch.setattr(mmap, "mmap", refuse)
    assert [_metrics_json(m) for m in analyze_group(g, SeriesBank(settings), jobs=2)] == serial
    monkeypatch.setattr(multiprocessing.context.ForkProcess, "start", refuse)
    assert [_metrics_json(m) for m in analyze_group(g, SeriesBank(settings), jobs=2)] == serial
    err = capsys.readouterr().err
    assert "could not start 1 more process(es) (Cannot allocate memory); computing in this one" in err
    # The shared counter the processes claim batches from is refused (it lives in shared memory too).
    monkeypatch.setattr(forked._Counter, "__init__", refuse)
    assert [_metrics_json(m) for m in analyze_group(g, SeriesBank(settings), jobs=3)] == serial
    assert "could not share the work out (Cannot allocate memory); computing in this process" in \
        capsys.readouterr().err
