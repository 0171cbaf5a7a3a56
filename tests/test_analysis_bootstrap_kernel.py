"""The compiled bootstrap kernels (c3prof/analysis/_bootstrap.pyx) give the numpy code's numbers, bit for bit.

Each kernel replaces numpy code that stays as the fallback (a checkout without the extension built);
a report must not depend on which one ran. So every comparison here is equality, not closeness:
the generator words and streams against numpy's own SeedSequence and PCG64, the median replicates
against many_bootstrap_medians with the keyed generators, the intervals against percentile_cis,
and whole reports of committed traces with and without the kernels. Inputs other than the
committed traces are small SYNTHETIC arrays.
"""

import json
import zlib
from pathlib import Path

import numpy as np
import pytest

from c3prof.analysis import stats
from c3prof.analysis.stats import (_TABLE_MAX_N, key_digest, keyed_bootstrap_medians, many_bootstrap_medians,
                                   percentile_cis, percentile_cis_of_rows, rng_for)

# The extension must be built (scripts/setup.sh, pip install -e .): missing is a failure, not a skip.
from c3prof.analysis import _bootstrap  # noqa: E402

DATA = Path(__file__).parent / "data"
SEEDS = [0, 7, stats.DEFAULT_SEED, 2**32 + 5, 2**32 - 1]
KEYS = [(), ("a",), ("H200", "s/base/default", "gemm", "total_ms"), ("x" * 300, 3, None)]


def test_stats_uses_the_built_kernels():
    # stats falls back to numpy when the import fails: here it must have found the extension.
    assert stats._bootstrap is _bootstrap


@pytest.mark.parametrize("seed", SEEDS)
def test_seed_sequence_words_are_numpys(seed):
    for key in KEYS:
        digest = key_digest(*key)
        words = np.array([seed & 0xFFFFFFFF, digest], dtype=np.uint32)
        assert _bootstrap.seed_sequence_words(seed & 0xFFFFFFFF, digest) == \
            np.random.SeedSequence(words).generate_state(4, np.uint64).tolist()


def test_keyed_uniforms_are_the_keyed_generators_stream():
    digests = np.array([key_digest(*k) for k in KEYS] + [0, 0xFFFFFFFF], dtype=np.uint32)
    for seed in SEEDS:
        out = np.empty((digests.size, 5000))
        _bootstrap.keyed_uniforms(seed & 0xFFFFFFFF, digests, out)
        for row, d in zip(out, digests.tolist()):
            gen = np.random.Generator(np.random.PCG64(np.array([seed & 0xFFFFFFFF, d], dtype=np.uint32)))
            assert np.array_equal(row, gen.random(5000))
    assert key_digest("a", 1) == zlib.crc32(b"a\x1f1")


@pytest.mark.parametrize("n", [2, 3, 4, 9, 10, 25, 26, 101, 1000, _TABLE_MAX_N])
def test_keyed_bootstrap_medians_kernel_equals_numpy(n, monkeypatch):
    xs = np.sort(np.random.default_rng(n).lognormal(0, 0.1, (6, n)), axis=1)
    xs[0] = np.round(xs[0], 1)  # ties
    keys = [("g", f"run{i}", "serial", "total_ms") for i in range(len(xs))]
    got = keyed_bootstrap_medians(xs, 11, keys, 700)
    assert np.array_equal(got, many_bootstrap_medians(xs, [rng_for(11, *k) for k in keys], 700))
    # The numpy sampler's bucket table (built after many draws of one n) gives the same draws too.
    monkeypatch.setattr(stats, "_DRAWS_BEFORE_TABLE", 0)
    assert np.array_equal(got, many_bootstrap_medians(xs, [rng_for(11, *k) for k in keys], 700))
    monkeypatch.setattr(stats, "_bootstrap", None)
    assert np.array_equal(got, keyed_bootstrap_medians(xs, 11, keys, 700))


def test_keyed_bootstrap_medians_outside_the_table_is_the_numpy_sampler():
    for n in (1, _TABLE_MAX_N + 1):
        xs = np.sort(np.random.default_rng(1).random((3, n)), axis=1)
        keys = [(i,) for i in range(3)]
        assert np.array_equal(keyed_bootstrap_medians(xs, 2, keys, 64),
                              many_bootstrap_medians(xs, [rng_for(2, *k) for k in keys], 64))


@pytest.mark.parametrize("n", [2, 4, 10, 24, 100])
@pytest.mark.parametrize("threads", [1, 3])
def test_even_medians_are_numpys(n, threads, monkeypatch):
    """The compiled even-n completion against numpy's, on every rank (J1 = n included, where no
    rank is left above) and uniforms at both ends of [0, 1)."""
    rows, b = 40, 3000
    rng = np.random.default_rng(n)
    xs = np.sort(rng.lognormal(0, 0.1, (rows, n)), axis=1)
    xs[0] = np.round(xs[0], 1)   # ties
    j1 = rng.integers(0, n, (rows, b)).astype(np.intp)
    u2 = rng.random((rows, 2, b))
    u2[:, :, :3] = [0.0, 0.5 ** 53, 1.0 - 2.0 ** -53]
    _bootstrap.set_threads(threads)
    try:
        got = stats.medians_from_ranks(xs, j1, u2)
    finally:
        _bootstrap.set_threads(stats.KERNEL_THREADS)
    monkeypatch.setattr(stats, "_bootstrap", None)
    with np.errstate(divide="ignore"):   # log(0), as in the report (its callers silence it)
        assert np.array_equal(got, stats.medians_from_ranks(xs, j1, u2))


def test_even_medians_refuse_bad_input():
    xs = np.sort(np.random.default_rng(0).random((3, 4)), axis=1)
    _, same = stats._median_rank_table(4)
    j1, u2, out = np.zeros((3, 5), dtype=np.intp), np.zeros((3, 2, 5)), np.empty((3, 5))
    with pytest.raises(ValueError, match="even length"):
        _bootstrap.even_medians(xs[:, :3].copy(), j1, u2, same[:3].copy(), out)
    with pytest.raises(ValueError, match="u2"):
        _bootstrap.even_medians(xs, j1, np.zeros((3, 1, 5)), same, out)
    j1[2, 4] = 4
    with pytest.raises(ValueError, match="a rank outside 0..3"):
        _bootstrap.even_medians(xs, j1, u2, same, out)


def test_keyed_bootstrap_medians_refuses_mismatched_shapes():
    xs = np.sort(np.random.default_rng(0).random((3, 5)), axis=1)
    keep, alias = stats._median_rank_alias(5)
    with pytest.raises(ValueError):
        _bootstrap.odd_tabled_medians(xs, 1, np.zeros(2, dtype=np.uint32), keep, alias, np.empty((3, 10)))
    with pytest.raises(ValueError):
        _bootstrap.odd_tabled_medians(xs, 1, np.zeros(3, dtype=np.uint32), keep[:4], alias[:4], np.empty((3, 10)))


def _interval_rows(b: int) -> list[np.ndarray]:
    """Rows that exercise the kernel's tail buffers and its whole-row fallback."""
    rng = np.random.default_rng(b)
    rows = [rng.lognormal(0, 0.2, b) for _ in range(20)]
    rows += [np.round(rng.random(b), 1), np.round(rng.random(b), 2)]     # few distinct values
    rows += [np.sort(rng.random(b)), np.sort(rng.random(b))[::-1].copy()]  # sorted either way
    rows.append(np.full(b, 1.5))                                          # no spread
    two = np.full(b, 2.0)
    two[: b // 2] = 1.0
    rows.append(two)                                                      # two values: buffers overfill
    nan_row = rng.random(b)
    nan_row[[0, b - 1]] = np.nan
    inf_row = rng.random(b)
    inf_row[0] = -np.inf
    rows += [nan_row, inf_row]
    # The strided sample sees only the smallest values: the low threshold is too low, so the
    # kernel partitions the whole row.
    skewed = rng.random(b) + 1.0
    skewed[:: max(1, b // 64)] = rng.random(skewed[:: max(1, b // 64)].size) * 1e-3
    rows.append(skewed)
    zeros = (np.arange(b) % 3).astype(float)
    zeros[zeros == 0] = np.where(rng.random(int((zeros == 0).sum())) < 0.5, -0.0, 0.0)
    rows.append(zeros)                                                    # signed zeros among ties
    return rows


@pytest.fixture(params=[True, False], ids=["avx2", "baseline"])
def simd(request):
    """The interval rows' passes with their AVX2 bodies (where the CPU has AVX2) and with the baseline
    ones: both must give the numpy numbers."""
    if request.param and not _bootstrap.use_avx2(True):
        _bootstrap.use_avx2(False)
        pytest.skip("this CPU (or compiler) has no AVX2 bodies")
    _bootstrap.use_avx2(request.param)
    yield request.param
    _bootstrap.use_avx2(True)


@pytest.mark.parametrize("b", [2, 5, 60, 200, 2000, 4001])
@pytest.mark.parametrize("conf", [0.95, 0.5, 0.999])
def test_percentile_cis_of_rows_kernel_equals_numpy(b, conf, simd):
    rows = _interval_rows(b)
    want = percentile_cis(np.stack(rows), conf)
    got = percentile_cis_of_rows(rows, conf)
    assert [(c.low, c.high, c.reason) for c in got] == [(c.low, c.high, c.reason) for c in want]
    # -0.0 and 0.0 compare equal: the signs must match too (json writes them differently).
    assert [json.dumps([c.low, c.high]) for c in got] == [json.dumps([c.low, c.high]) for c in want]


@pytest.mark.parametrize("b", [5, 2000])
def test_percentile_ci_kernel_equals_numpy(b):
    for row in _interval_rows(b):
        got, want = stats.percentile_ci(row, 0.95), stats._percentile_ci_numpy(row, 0.95)
        assert (got.low, got.high, got.reason) == (want.low, want.high, want.reason)


@pytest.mark.parametrize("kernel", [True, False])
def test_percentile_cis_of_rows_mixed_lengths_and_layouts(kernel, monkeypatch):
    if not kernel:
        monkeypatch.setattr(stats, "_bootstrap", None)
    rng = np.random.default_rng(9)
    rows = [rng.random(300), rng.random(2000), rng.random(600)[::2], rng.random(300).astype(np.float32)]
    assert percentile_cis_of_rows(rows) == [percentile_cis(r[None, :].astype(float))[0] for r in rows]


def test_percentile_pairs_refuses_bad_positions_and_lengths():
    rows = [np.random.default_rng(0).random(100)] * 2
    out = (np.empty(2), np.empty(2), np.empty(2, dtype=np.int8), np.empty(2, dtype=np.int64))
    with pytest.raises(ValueError):
        _bootstrap.percentile_pairs(rows, 10.0, 99.5, *out)         # hi + 1 beyond the row
    with pytest.raises(ValueError):
        _bootstrap.percentile_pairs([rows[0], rows[0][:50].copy()], 2.0, 40.0, *out)


@pytest.mark.parametrize("names", [["h200_default_pair_a.jsonl"], ["h200_default_visits.jsonl"],
                                   ["h200_smoke.jsonl"], ["h200x2_llama70b.rank0.jsonl", "h200x2_llama70b.rank1.jsonl"]])
def test_reports_are_the_same_with_and_without_the_kernels(names, monkeypatch):
    from c3prof.analysis.dataset import load
    from c3prof.report.build import build_report
    from c3prof.report.json_out import dumps

    paths = [str(DATA / n) for n in names]
    with_kernels = dumps(build_report(load(paths)))
    monkeypatch.setattr(stats, "_bootstrap", None)
    assert dumps(build_report(load(paths))) == with_kernels


# --- the strategy summary's means (hierarchical and fixed-units bootstraps) -------------------------

def _mid_stream_generator(seed: int) -> np.random.Generator:
    """A keyed generator part-way through its stream, with its 32-bit buffer filled or not."""
    gen = rng_for(seed, "summary")
    gen.random(3)
    gen.integers(0, 5, size=seed % 3)  # an odd count leaves the buffered high half for the next draw
    return gen


@pytest.mark.parametrize("high", [1, 2, 7, 2500, 2**31 + 5, 2**32 - 1])
def test_bounded_integers_are_numpys(high):
    gen = _mid_stream_generator(high)
    out = np.empty(20_001, dtype=np.int64)
    after = _bootstrap.bounded_integers(gen.bit_generator.state, high, out)
    assert np.array_equal(out, gen.integers(0, high, size=out.size))
    assert after == gen.bit_generator.state  # the same number of words consumed (rejections included)


@pytest.mark.parametrize("n", [1, 5, 7, 8, 9, 127, 128, 129, 1000, 2500, 10_001])
def test_pairwise_sum_is_numpys(n):
    values = np.random.default_rng(n).normal(0, 1, n) * 10.0 ** np.random.default_rng(n).integers(-8, 8, n)
    assert _bootstrap.pairwise_sum(values) == values.sum()
    assert json.dumps(_bootstrap.pairwise_sum(np.full(n, -0.0))) == json.dumps(np.full((1, n), -0.0).sum(axis=1)[0])


def _summary_inputs(s: int, b: int, seed: int):
    """SYNTHETIC fractions-of-ideal replicates (float32, as the summary keeps them) and an inclusion mask."""
    rng = np.random.default_rng(seed)
    reps = rng.normal(0.4, 0.2, (s, b)).astype(np.float32)
    reps[0, : b // 10] = np.nan                      # a unit undefined in some replicates
    include = (rng.random((s, b)) < 0.8) & np.isfinite(reps)
    return reps, include


@pytest.mark.parametrize("s,b", [(1, 50), (2, 3), (15, 2000), (300, 400)])
@pytest.mark.parametrize("with_include", [True, False])
@pytest.mark.parametrize("threads", [1, 3])
def test_hierarchical_mean_ci_kernel_equals_numpy(s, b, with_include, threads, monkeypatch):
    reps, include = _summary_inputs(s, b, s * b)
    include = include if with_include else None
    gen_k, gen_n = _mid_stream_generator(s), _mid_stream_generator(s)
    _bootstrap.set_threads(threads)   # 3: replicates shared over threads where there are 128 or more
    try:
        got = stats.hierarchical_mean_ci(np.array([0.4]), reps, gen_k, 0.95, include=include)
    finally:
        _bootstrap.set_threads(stats.KERNEL_THREADS)
    monkeypatch.setattr(stats, "_bootstrap", None)
    want = stats.hierarchical_mean_ci(np.array([0.4]), reps, gen_n, 0.95, include=include)
    assert json.dumps([got[0], got[1].as_list(), got[1].reason]) == json.dumps([want[0], want[1].as_list(), want[1].reason])
    assert gen_k.bit_generator.state == gen_n.bit_generator.state  # the caller's generator left alike


def test_hierarchical_means_kernel_counts_the_empty_replicates():
    reps, include = _summary_inputs(3, 500, 1)
    include[1:] = False     # only unit 0 can enter: an outer replicate without it draws none (8/27 of them)
    include[0] = np.isfinite(reps[0])
    got = stats._kernel_hierarchical_means(reps, include, _mid_stream_generator(4))
    want = stats._hierarchical_means(reps, include, _mid_stream_generator(4))
    assert got[1] == want[1] > 50 and np.array_equal(got[0], want[0])


@pytest.mark.parametrize("with_include", [True, False])
def test_fixed_units_mean_ci_kernel_equals_numpy(with_include, monkeypatch):
    reps, include = _summary_inputs(40, 2000, 3)
    include = include if with_include else None
    got = stats.fixed_units_mean_ci(reps, 0.95, include)
    monkeypatch.setattr(stats, "_bootstrap", None)
    assert got == stats.fixed_units_mean_ci(reps, 0.95, include)


def test_summary_kernels_refuse_mismatched_shapes():
    reps = np.zeros((3, 10), dtype=np.float32)
    state = rng_for(0, "x").bit_generator.state
    with pytest.raises(ValueError):
        _bootstrap.hierarchical_sums(reps, np.zeros((3, 9), dtype=np.uint8), state, np.empty(10),
                                     np.empty(10, dtype=np.int64))
    with pytest.raises(ValueError):
        _bootstrap.fixed_sums(reps, None, np.empty(9), np.empty(9, dtype=np.int64))


# --- estimates' rows computed in the kernel (speedup.PendingCIs.add_row) ----------------------------

def _replicate_series(b: int) -> list[np.ndarray]:
    """SYNTHETIC median replicates: ordinary ones, ties with the ideal at exactly 1, a NaN (a round-paired
    replicate that drew none of its rounds), an infinity and a constant series."""
    rng = np.random.default_rng(b)
    ts, tg, tc, tcc = (rng.lognormal(mu, 0.05, b) for mu in (0.3, 0.0, -0.5, 0.2))
    tied = tg.copy()
    tied[: b // 7] = ts[: b // 7]                       # ideal replicate exactly 1: a fraction unstable
    nan, inf = tc.copy(), tcc.copy()
    nan[3], inf[5] = np.nan, np.inf
    return [ts, tg, tc, tcc, tied, nan, inf, np.full(b, 2.0)]


def _numpy_row(kind: int, parts: list[np.ndarray]) -> tuple[np.ndarray, int]:
    from c3prof.analysis import speedup

    if kind == stats.ROW_SAME:
        return parts[0], 0
    if kind == stats.ROW_RATIO:
        return speedup.ratio(*parts), 0
    ideal = speedup.ideal(*parts[:3])
    if kind == stats.ROW_IDEAL:
        return ideal, 0
    return (speedup.realized(parts[0], parts[3]) - 1.0) / (ideal - 1.0), int(np.sum(ideal <= 1.0))


@pytest.mark.parametrize("b", [100, 2000, 2003])
def test_row_intervals_equal_the_numpy_formulas(b, simd):
    series = _replicate_series(b)
    cases = [(stats.ROW_SAME, (i,)) for i in range(len(series))]
    cases += [(stats.ROW_RATIO, (i, j)) for i in range(len(series)) for j in (1, 5, 6, 7)]
    cases += [(kind, (0, g, c, 3)) for kind in (stats.ROW_IDEAL, stats.ROW_FRACTION) for g in (1, 4, 5) for c in (2, 5, 7)]
    kinds = [k for k, _ in cases]
    args = [tuple(a) + (0,) * (4 - len(a)) for _, a in cases]
    kept = [np.empty(b, dtype=np.float32) for _ in cases]
    with np.errstate(divide="ignore", invalid="ignore"):
        cis, below = stats.row_intervals(series, kinds, args, kept, 0.95)
        want = [_numpy_row(k, [series[i] for i in a]) for k, a in cases]
    want_cis = percentile_cis_of_rows([w for w, _ in want], 0.95)
    assert json.dumps([[c.low, c.high, c.reason] for c in cis]) == json.dumps([[c.low, c.high, c.reason] for c in want_cis])
    assert below == [n for _, n in want] and max(below) > 0
    for got, (row, _) in zip(kept, want):
        assert np.array_equal(got, row.astype(np.float32), equal_nan=True)
    assert len({c.reason for c in cis}) >= 3  # defined, undefined (NaN/inf) and no-spread rows all checked


def test_row_intervals_refuses_what_it_cannot_serve(monkeypatch):
    series = _replicate_series(100)
    with pytest.raises(ValueError):   # a series index beyond the list
        stats.row_intervals(series, [stats.ROW_RATIO], [(0, 99, 0, 0)], [None], 0.95)
    with pytest.raises(ValueError):   # series of different lengths
        stats.row_intervals([series[0], series[1][:50].copy()], [stats.ROW_RATIO], [(0, 1, 0, 0)], [None], 0.95)
    assert not stats.row_intervals_apply(2, 0.95)   # too few replicates for the fast case
    monkeypatch.setattr(stats, "_bootstrap", None)
    assert not stats.row_intervals_apply(2000, 0.95)
    with pytest.raises(ValueError):
        stats.row_intervals(series, [stats.ROW_SAME], [(0, 0, 0, 0)], [None], 0.95)


def _select_cases() -> list[np.ndarray]:
    """SYNTHETIC arrays for the interval's selection: random, few distinct values, sorted either way,
    organ pipe, all equal, signed zeros, and a median-of-3 killer order (it must still end right)."""
    rng = np.random.default_rng(3)
    n = 2000
    killer = np.empty(n)
    half = n // 2
    for i in range(half):  # Musser's median-of-3 killer sequence
        killer[i] = 2 * i + 1 if i % 2 == 0 else half + i + (half % 2)
        killer[half + i] = 2 * (i + 1)
    cases = [rng.random(n), np.round(rng.random(n), 1), np.sort(rng.random(n)), np.sort(rng.random(n))[::-1],
             np.concatenate([np.arange(half), np.arange(half)[::-1]]).astype(float), np.full(n, 2.5),
             np.where(rng.random(n) < 0.5, -0.0, 0.0), killer, rng.random(17), rng.random(3), np.array([4.0])]
    return [np.ascontiguousarray(c, dtype=float) for c in cases]


@pytest.mark.parametrize("case", range(len(_select_cases())))
def test_select_places_the_kth_smallest_as_np_partition(case):
    values = _select_cases()[case]
    for k in sorted({0, 1, values.size // 40, values.size // 2, values.size - 2, values.size - 1} - {-1}):
        if not 0 <= k < values.size:
            continue
        got = values.copy()
        _bootstrap.select(got, k)
        want = np.partition(values, k)[k]
        assert got[k] == want   # -0.0 == 0.0: which zero lands there cannot change an interval (see below)
        assert np.all(got[:k] <= got[k]) and np.all(got[k + 1:] >= got[k])
        assert np.array_equal(np.sort(got), np.sort(values))   # a permutation, nothing lost
    with pytest.raises(ValueError):
        _bootstrap.select(values.copy(), values.size)
    # The interval interpolates r_lo + f * (r_lo1 - r_lo): with both ranks zeros of either sign that is
    # +0.0 + 0.0 or -0.0 + 0.0, both +0.0, so the sign of the zero selected never reaches the report.


def test_threads_give_the_numbers_of_one_thread():
    """estimate_rows and the tabled draws share rows and series over threads: any count, the same bits."""
    series = _replicate_series(2000)
    cases = [(k, (i, j, (i + 1) % 4, 3)) for k in range(4) for i in range(len(series)) for j in range(4)] * 12
    kinds, args = [k for k, _ in cases], [a for _, a in cases]
    xs_odd = np.sort(np.random.default_rng(5).random((70, 25)), axis=1)
    keys = [("t", i) for i in range(70)]

    def run(threads: int):
        _bootstrap.set_threads(threads)
        try:
            kept = [np.empty(2000, dtype=np.float32) for _ in cases]
            with np.errstate(divide="ignore", invalid="ignore"):
                cis, below = stats.row_intervals(series, kinds, args, kept, 0.95)
            odd = stats.keyed_bootstrap_medians(xs_odd, 11, keys, 2000)
            even = stats.keyed_bootstrap_medians(xs_odd[:, :24].copy(), 11, keys, 2000)
        finally:
            _bootstrap.set_threads(stats.KERNEL_THREADS)
        return json.dumps([[c.low, c.high, c.reason] for c in cis]), below, np.stack(kept), odd, even

    one, many = run(1), run(3)
    assert len(cases) >= 3 * 256   # enough rows for three threads (_ROWS_PER_THREAD)
    assert one[0] == many[0] and one[1] == many[1]
    for a, b in zip(one[2:], many[2:]):
        assert np.array_equal(a, b, equal_nan=True)


# --- round-paired medians ------------------------------------------------------------------------

def _paired_medians_equal_numpys(values, cols, draws, which, threads, simd, monkeypatch):
    """stats.paired_medians with the kernel on ``threads`` threads (its AVX2 bodies or not): asserts
    the medians and replicates are numpy's, bit for bit, and returns them."""
    _bootstrap.set_threads(threads)
    _bootstrap.use_avx2(simd)
    try:
        medians, reps = stats.paired_medians(values, cols, draws, which)
    finally:
        _bootstrap.set_threads(stats.KERNEL_THREADS)
        _bootstrap.use_avx2(True)
    with monkeypatch.context() as numpy_only:
        numpy_only.setattr(stats, "_bootstrap", None)
        want_medians, want = stats.paired_medians(values, cols, draws, which)
    assert medians == want_medians
    assert np.array_equal(reps, want, equal_nan=True)
    return medians, reps


def _series_of(draws, per_draw, columns, rng):
    """(values, cols, which) of ``per_draw`` series per draw: series i of a draw of R rounds has a
    value (rounded to 3 places: some ties) in each of the columns ``columns(i, R)``."""
    values, cols, which = [], [], []
    for k, d in enumerate(draws):
        for i in range(per_draw):
            c = columns(i, d.shape[1])
            values.append(np.round(rng.lognormal(0, 0.05, c.size), 3))
            cols.append(c)
            which.append(k)
    return values, cols, which


@pytest.mark.parametrize("seed", range(6))
def test_round_resampled_medians_kernel_equals_numpy(seed, monkeypatch):
    """Ties, odd and even totals, rounds drawn 0-3 times, replicates that drew none of the
    series' rounds (NaN), rounds the series lacks: the kernel's medians are numpy's, bit for bit."""
    rng = np.random.default_rng(seed)
    for _ in range(40):
        n, rounds, b = int(rng.integers(1, 80)), int(rng.integers(1, 25)), int(rng.integers(1, 60))
        values = np.round(rng.lognormal(0, 0.05, n), 2)          # rounded: many ties
        index = rng.integers(0, rounds, n)
        counts = rng.integers(0, 4, (b, rounds)).astype(np.int64)
        counts[0] = 0                                             # this replicate drew nothing: NaN
        got = stats.round_resampled_medians(values, index, counts)
        monkeypatch.setattr(stats, "_bootstrap", None)
        want = stats.round_resampled_medians(values, index, counts)
        monkeypatch.setattr(stats, "_bootstrap", _bootstrap)
        assert np.array_equal(got, want, equal_nan=True)
        assert np.isnan(got[0])


@pytest.mark.parametrize("threads, simd", [(1, True), (3, True), (1, False)])
def test_paired_medians_of_many_series_equal_numpys_one_by_one(threads, simd, monkeypatch):
    """One kernel call for a scenario's series (some with the same rounds, sharing the totals; some
    with others, or with rounds more than once): each row is that series' numpy replicates."""
    rng = np.random.default_rng(7)
    rounds, b = 12, 300
    counts = stats.draw_round_counts(rounds, b, rng)
    values, cols = [], []
    for i in range(150):   # more than one thread's share (64 series)
        n = rounds if i % 3 else int(rng.integers(1, 3 * rounds))
        values.append(np.round(rng.lognormal(0, 0.05, n), 2))
        cols.append(np.arange(n) % rounds if i % 3 else rng.integers(0, rounds, n))
    medians, _ = _paired_medians_equal_numpys(values, cols, [counts], [0] * len(values), threads, simd, monkeypatch)
    assert medians == [stats.fast_median(v) for v in values]


@pytest.mark.parametrize("simd", [True, False])
@pytest.mark.parametrize("weight", [255, 600])
def test_paired_medians_in_int16_and_int32_equal_numpy(weight, simd, monkeypatch):
    """The kernel counts in int16 while its bound on the running weights (largest row sum x the
    most values a series has in one round) stays below 2^15, else in int32. A series of 128 values in one round drawn up to 255
    times: bound 32,640, int16, with ranks past 16,000. Up to 600 times: ranks past 38,000, which
    int16 would wrap (int32). Either way numpy's replicates, bit for bit, in the blocks of
    replicates and the tail past them."""
    rng = np.random.default_rng(11)
    rounds, b = 8, 130                       # 130 replicates: two blocks of 64 and a tail of 2
    counts = np.zeros((b, rounds), dtype=np.int64)
    counts[:, 0] = rng.integers(0, weight + 1, b)
    counts[:, 1:] = rng.integers(0, 2, (b, rounds - 1)) * (counts[:, :1] < weight - rounds)
    counts[0, :] = 0
    counts[0, 0] = weight                     # the largest row sum: weight
    values = [np.round(rng.normal(size=128), 1), np.round(rng.normal(size=40), 1), np.array([2.0])]
    cols = [np.zeros(128, dtype=np.intp), rng.integers(0, rounds, 40), np.array([3])]
    _, reps = _paired_medians_equal_numpys(values, cols, [counts], [0, 0, 0], stats.KERNEL_THREADS, simd, monkeypatch)
    assert np.isnan(reps[2]).any() and not np.isnan(reps[0]).any()   # replicates that drew none of round 3


@pytest.mark.parametrize("simd", [True, False])
@pytest.mark.parametrize("most", [127, 128])
def test_paired_medians_in_int8_up_to_its_bound_equal_numpy(most, simd, monkeypatch):
    """The kernel counts in int8 while its bound stays below 2^7 (a capture's series of up to 127
    rounds): a replicate that draws round 0 ``most`` times has running weights up to ``most``; 127
    is int8's largest, 128 would wrap (int16 then). Series of a value per round (one middle rank
    where the total is odd) and series lacking rounds (replicates that drew none of them: NaN)."""
    rng = np.random.default_rng(5)
    rounds, b = 9, 130                       # 130 replicates: two blocks of 64 and a tail of 2
    counts = stats.draw_round_counts(rounds, b, rng)
    counts[0, :] = 0
    counts[0, 0] = most                      # the largest row sum
    counts[129, :] = 0
    counts[129, 3] = most - 1
    values = [np.round(rng.normal(size=rounds), 1) for _ in range(3)] + [np.array([2.0, 1.0])]
    cols = [np.arange(rounds)] * 3 + [np.array([3, 5])]
    _, reps = _paired_medians_equal_numpys(values, cols, [counts], [0, 0, 0, 0], stats.KERNEL_THREADS, simd,
                                           monkeypatch)
    assert np.isnan(reps[3]).any() and reps[0][0] == values[0][0]   # replicate 0 is round 0 alone


@pytest.mark.parametrize("threads, simd", [(1, True), (3, True), (1, False)])
def test_paired_medians_of_long_series_walked_in_groups_equal_numpys(threads, simd, monkeypatch):
    """Draws whose tables outgrow L2 (rounds x replicates x 2 bytes past 512 KB) are walked by
    groups of up to 32 series, block of replicates by block: 45 series per draw (a second group
    continuing the first's ranks), series lacking rounds or holding one twice (other ranks mid-group),
    one round alone (NaN where a replicate drew none of it),
    and a tail of replicates past the last block of 64: numpy's replicates, bit for bit."""
    rng = np.random.default_rng(3)
    b = 1030
    draws = [stats.draw_round_counts(r, b, rng) for r in (300, 260, 400)]

    def columns(i: int, rounds: int) -> np.ndarray:
        if i % 11 == 0:   # the first series too: the ranks a group starts with are not the full rounds'
            return np.delete(np.arange(rounds), rng.integers(0, rounds, 9))       # missing rounds
        if i % 11 == 8:   # not series 31: the group of 32 ends and the next begins with full rounds
            return np.concatenate([np.arange(rounds), [int(rng.integers(0, rounds))]])   # a round twice
        return np.array([1]) if i == 40 else np.arange(rounds)                    # one round alone

    values, cols, which = _series_of(draws, 45, columns, rng)
    _, reps = _paired_medians_equal_numpys(values, cols, draws, which, threads, simd, monkeypatch)
    assert np.isnan(reps[40]).any()


@pytest.mark.parametrize("threads, simd", [(1, True), (3, True), (1, False)])
def test_paired_medians_with_odd_rounds_count_once_and_equal_numpys(threads, simd, monkeypatch):
    """An odd number of rounds (a capture's 25, and 301: a table walked in groups) gives every series
    of one value per round an odd total in every replicate: one middle rank, counted once
    (c3_round_counts_pass<T, true>). Beside them in the same calls, series lacking a round (totals odd and even:
    two ranks) and holding one twice (a weight of 2): numpy's replicates, bit for bit."""
    rng = np.random.default_rng(13)
    b = 1030                                  # 16 blocks of 64 and a tail of 6
    draws = [stats.draw_round_counts(r, b, rng) for r in (25, 301, 25)]

    def columns(i: int, rounds: int) -> np.ndarray:
        if i % 7 == 3:
            return np.delete(np.arange(rounds), int(rng.integers(0, rounds)))          # a round missing
        if i % 7 == 5:
            return np.concatenate([np.arange(rounds), [int(rng.integers(0, rounds))]])  # a round twice
        return np.arange(rounds)

    values, cols, which = _series_of(draws, 40, columns, rng)
    _, reps = _paired_medians_equal_numpys(values, cols, draws, which, threads, simd, monkeypatch)
    assert not np.isnan(reps).any()


def test_paired_medians_over_several_draws_equal_each_draw_alone():
    """A batch of scenarios (one draw each, different round counts) in one call: each series'
    replicates are those of its own scenario's draw."""
    rng = np.random.default_rng(9)
    draws = [stats.draw_round_counts(r, 200, rng) for r in (3, 8, 5)]
    values, cols, which = [], [], []
    for k, d in enumerate(draws):
        for _ in range(5):
            n = int(rng.integers(1, 20))
            values.append(np.round(rng.normal(size=n), 1))
            cols.append(rng.integers(0, d.shape[1], n))
            which.append(k)
    medians, reps = stats.paired_medians(values, cols, draws, which)
    for i, (v, c, k) in enumerate(zip(values, cols, which)):
        assert np.array_equal(reps[i], stats.round_resampled_medians(v, c, draws[k]), equal_nan=True)
        assert medians[i] == stats.fast_median(v)


def _rows(values, cols, starts, which, draws, s=1, b=5):
    return _bootstrap.round_median_rows(np.asarray(values, dtype=float), np.asarray(cols, dtype=np.intp),
                                        np.asarray(starts, dtype=np.intp), np.asarray(which, dtype=np.intp), draws,
                                        np.empty((s, b)), np.empty(s))


def test_round_median_rows_refuses_bad_inputs():
    counts = [np.ones((5, 3), dtype=np.int64)]
    with pytest.raises(ValueError, match="column outside"):
        _rows([1.0, 2.0], [0, 3], [0, 2], [0], counts)
    with pytest.raises(ValueError, match="finite"):
        _rows([1.0, np.nan], [0, 1], [0, 2], [0], counts)
    with pytest.raises(ValueError, match="cover the values"):
        _rows([1.0, 2.0, 3.0], [0, 1, 2], [0, 2], [0], counts)
    with pytest.raises(ValueError, match="needs a value"):
        _rows([1.0, 2.0], [0, 1], [0, 0, 2], [0, 0], counts, s=2)
    with pytest.raises(ValueError, match="names no draw"):
        _rows([1.0, 2.0], [0, 1], [0, 2], [1], counts)
    with pytest.raises(ValueError, match="B rows"):
        _rows([1.0, 2.0], [0, 1], [0, 2], [0], [np.ones((4, 3), dtype=np.int64)])
    with pytest.raises(ValueError, match="negative"):
        _rows([1.0, 2.0], [0, 1], [0, 2], [0], [-np.ones((5, 3), dtype=np.int64)])


def test_paired_medians_with_weights_beyond_32_bits_use_numpy(monkeypatch):
    """The kernel refuses (False, nothing written) weights its int32 sums could not hold; numpy
    computes them. Just below the bound it serves them."""
    counts = np.full((4, 2), 2**30, dtype=np.int64)   # a running weight would pass 2^31
    values, cols = [np.array([3.0, 1.0, 2.0])], [np.array([0, 1, 1])]
    assert _rows(values[0], cols[0], [0, 3], [0], [counts], b=4) is False
    assert _rows(values[0], cols[0], [0, 3], [0], [np.full((4, 2), 2**29 // 3, dtype=np.int64)], b=4) is True
    # counts whose bound would wrap int64 (2^61 x 2 x 3 values): refused, not taken for small ones
    assert _rows(values[0], cols[0], [0, 3], [0], [np.full((4, 2), 2**61, dtype=np.int64)], b=4) is False
    got = stats.paired_medians(values, cols, [counts], [0])
    monkeypatch.setattr(stats, "_bootstrap", None)
    want = stats.paired_medians(values, cols, [counts], [0])
    assert got[0] == want[0] and np.array_equal(got[1], want[1])


@pytest.mark.parametrize("rounds", [1, 2, 7, 40])
def test_draw_round_counts_kernel_equals_numpy(rounds, monkeypatch):
    got = stats.draw_round_counts(rounds, 500, rng_for(3, "rounds", rounds))
    monkeypatch.setattr(stats, "_bootstrap", None)
    want = stats.draw_round_counts(rounds, 500, rng_for(3, "rounds", rounds))
    assert got.dtype == want.dtype == np.int64 and np.array_equal(got, want)
    assert (got.sum(axis=1) == rounds).all()
    with pytest.raises(ValueError, match="outside"):
        _bootstrap.round_counts(np.array([[0, 5]], dtype=np.int64), np.empty((1, 3), dtype=np.int64))


@pytest.mark.parametrize("rounds", [[2, 25, 1, 7, 25, 300] * 4, [1000, 900]])
@pytest.mark.parametrize("threads", [1, 3])
def test_keyed_round_counts_are_each_scenarios_draw(threads, rounds):
    """Several scenarios' round draws in one kernel call: each the counts draw_round_counts makes
    from the scenario's keyed generator with numpy (rounds of 1 draw nothing, as numpy's); two
    scenarios of many rounds get a thread each (threads are counted by the rounds drawn)."""
    keys = [("H200", f"scenario-{i}", "rounds") for i in range(len(rounds))]
    _bootstrap.set_threads(threads)
    try:
        got = stats.keyed_round_counts(rounds, 500, stats.DEFAULT_SEED, keys)
    finally:
        _bootstrap.set_threads(stats.KERNEL_THREADS)
    for r, key, counts in zip(rounds, keys, got):
        rng = rng_for(stats.DEFAULT_SEED, *key)
        want = rng.integers(0, r, size=(500, r), dtype=np.int64)
        want = np.stack([np.bincount(row, minlength=r) for row in want])
        assert counts.dtype == np.int64 and np.array_equal(counts, want), (r, key)


def test_keyed_round_counts_refuses_bad_shapes_and_falls_back_past_32_bits(monkeypatch):
    with pytest.raises(ValueError, match="one digest per scenario"):
        _bootstrap.keyed_round_counts(1, np.zeros(2, dtype=np.uint32), [np.empty((4, 3), dtype=np.int64)])
    with pytest.raises(ValueError, match="one B"):
        _bootstrap.keyed_round_counts(1, np.zeros(2, dtype=np.uint32),
                                      [np.empty((4, 3), dtype=np.int64), np.empty((5, 3), dtype=np.int64)])
    with pytest.raises(ValueError, match="1 <= R"):
        _bootstrap.keyed_round_counts(1, np.zeros(1, dtype=np.uint32), [np.empty((4, 0), dtype=np.int64)])
    calls = []
    monkeypatch.setattr(stats, "draw_round_counts", lambda r, b, rng: calls.append(r) or np.zeros((b, 1)))
    stats.keyed_round_counts([3, 2**32], 2, 0, [("a",), ("b",)])   # beyond the kernel's 32-bit bound: numpy
    assert calls == [3, 2**32]


@pytest.mark.parametrize("rounds", [[2, 25, 1, 7, 25, 127] * 4, [100, 90]])
@pytest.mark.parametrize("threads", [1, 3])
def test_keyed_round_draws_are_the_keyed_counts_transposed(threads, rounds):
    """keyed_round_draws' RoundTables (the kernel counting each draw straight into int8, rounds x
    replicates) hold keyed_round_counts' counts, transposed, for every thread count; their
    ``counts`` are those counts; up to 127 rounds (a count of 127 still fits int8)."""
    keys = [("H200", f"scenario-{i}", "rounds") for i in range(len(rounds))]
    _bootstrap.set_threads(threads)
    try:
        tables = stats.keyed_round_draws(rounds, 300, stats.DEFAULT_SEED, keys)
        counts = stats.keyed_round_counts(rounds, 300, stats.DEFAULT_SEED, keys)
    finally:
        _bootstrap.set_threads(stats.KERNEL_THREADS)
    for r, table, want in zip(rounds, tables, counts):
        assert isinstance(table, stats.RoundTable) and table.table.dtype == np.int8 and table.table.shape == (r, 300)
        assert np.array_equal(table.table.T, want) and np.array_equal(stats.round_counts_of(table), want)
        assert table.counts.dtype == np.int64 and table.counts.flags.c_contiguous


def test_keyed_round_draws_past_int8_or_without_the_kernel_are_counts(monkeypatch):
    """128 rounds or more (a count could pass int8), or numpy alone: keyed_round_counts' arrays."""
    keys = [("a",), ("b",)]
    for rounds in ([25, 128], [3, 4]):
        if rounds == [3, 4]:
            monkeypatch.setattr(stats, "_bootstrap", None)
        got = stats.keyed_round_draws(rounds, 50, 1, keys)
        want = stats.keyed_round_counts(rounds, 50, 1, keys)
        assert all(type(g) is np.ndarray and np.array_equal(g, w) for g, w in zip(got, want, strict=True))
    with pytest.raises(ValueError, match="R <= 127"):
        _bootstrap.keyed_round_tables(1, np.zeros(1, dtype=np.uint32), [np.empty((128, 4), dtype=np.int8)])
    with pytest.raises(ValueError, match="one B"):
        _bootstrap.keyed_round_tables(1, np.zeros(2, dtype=np.uint32),
                                      [np.empty((3, 4), dtype=np.int8), np.empty((3, 5), dtype=np.int8)])


@pytest.mark.parametrize("threads, simd", [(1, True), (3, True), (1, False)])
def test_paired_medians_over_round_tables_equal_numpys(threads, simd, monkeypatch):
    """Series weighted by RoundTables (read by round_median_tables, without a transpose): numpy's
    replicates, bit for bit, for a capture's series (a value per round of 25), series lacking a
    round and holding one twice, and draws of 127 rounds (running weights up to 127 in int8)."""
    rng = np.random.default_rng(17)
    rounds = [25, 127, 25, 8]
    draws = stats.keyed_round_draws(rounds, 1030, 5, [("t", i) for i in range(len(rounds))])
    assert all(isinstance(d, stats.RoundTable) for d in draws)

    def columns(i: int, r: int) -> np.ndarray:
        if i % 5 == 3:
            return np.delete(np.arange(r), int(rng.integers(0, r)))                   # a round missing
        if i % 5 == 4 and r < 127:
            return np.concatenate([np.arange(r), [int(rng.integers(0, r))]])          # a round twice
        return np.arange(r)

    values, cols, which = _series_of([d.counts for d in draws], 12, columns, rng)
    calls = []
    monkeypatch.setattr(_bootstrap, "round_median_rows", lambda *a: calls.append(a) or False, raising=True)
    got = _paired_medians_equal_numpys(values, cols, draws, which, threads, simd, monkeypatch)
    assert calls == []   # the int8 tables served every series
    assert got[1].shape == (len(values), 1030)


def test_paired_medians_over_round_tables_past_int8_take_the_counts(monkeypatch):
    """Series whose running weights int8 cannot hold (two values in every round of 100: up to 200):
    round_median_tables refuses them, and the same call serves them from the tables' int64 counts
    (round_median_rows, in int16): numpy's replicates."""
    rng = np.random.default_rng(19)
    draws = stats.keyed_round_draws([100], 200, 5, [("wide",)])
    values = [np.round(rng.normal(size=200), 2), np.round(rng.normal(size=100), 2)]
    cols = [np.arange(200) % 100, np.arange(100)]
    assert _bootstrap.round_median_tables(np.concatenate(values), np.concatenate(cols).astype(np.intp),
                                          np.array([0, 200, 300], dtype=np.intp), np.zeros(2, dtype=np.intp),
                                          [draws[0].table], np.empty((2, 200)), np.empty(2)) is False
    _paired_medians_equal_numpys(values, cols, draws, [0, 0], 1, True, monkeypatch)


def test_round_median_tables_refuses_bad_inputs():
    table = [np.ones((3, 5), dtype=np.int8)]

    def call(values, cols, starts, which, tables, s=1, b=5):
        return _bootstrap.round_median_tables(np.asarray(values, dtype=float), np.asarray(cols, dtype=np.intp),
                                              np.asarray(starts, dtype=np.intp), np.asarray(which, dtype=np.intp),
                                              tables, np.empty((s, b)), np.empty(s))

    with pytest.raises(ValueError, match="column outside"):
        call([1.0, 2.0], [0, 3], [0, 2], [0], table)
    with pytest.raises(ValueError, match="B columns"):
        call([1.0, 2.0], [0, 1], [0, 2], [0], [np.ones((3, 4), dtype=np.int8)])
    with pytest.raises(ValueError, match="names no draw"):
        call([1.0, 2.0], [0, 1], [0, 2], [1], table)
    assert call([1.0, 2.0, 4.0], [0, 1, 2], [0, 3], [0], table) is True
