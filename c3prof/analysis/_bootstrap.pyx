# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled kernels of the report's bootstrap: the same numbers as the numpy code in stats.py, faster.

A large report resamples tens of thousands of short series (2000 median replicates each) and takes
two percentiles of as many replicate rows. In numpy that is a few calls per series, whose fixed cost
(creating a generator, ~25 us; a call, ~1 us) outweighs the arithmetic on 25 values. These kernels
loop over all the series in C instead. Each one reproduces its numpy counterpart exactly, so a report
is the same with and without them (tests/test_analysis_bootstrap_kernel.py compares them bitwise):

``keyed_uniforms`` / ``odd_tabled_medians`` / ``tabled_ranks``
    The generator of a series is ``stats.rng_for(seed, *key)``: numpy's PCG64 seeded through
    ``SeedSequence([seed, crc32(key)])``. Both are small, fully specified algorithms (numpy's
    ``bit_generator.pyx`` and ``pcg64.h``; O'Neill's PCG paper); they are re-implemented below in
    C with 128-bit integers, and ``Generator.random`` is ``(next64 >> 11) * 2**-53``. The median's
    rank is then drawn through the same alias table with the same floating-point operations as
    ``stats._alias_draw_exact``.

``even_medians``
    For even n, the median from J1 and two further uniforms (``stats.medians_from_ranks``), with
    the C library's ``log`` and ``expm1``, which numpy's float64 loops call too where the CPU has
    no AVX-512 (with AVX-512, numpy uses its own, whose last bit may differ; a rank then changes
    only where the product falls within that bit of an integer).

``percentile_pairs``
    The two tail quantiles of ``stats._linear_quantiles_rows``: the same order statistics (exact
    values, whatever algorithm selects them), interpolated with the same operations.

``round_counts`` / ``round_median_rows``
    The round-paired bootstrap of captures that record rounds: each replicate's round
    multiplicities (``stats.draw_round_counts``), then each series' weighted median under them
    (``stats._round_resampled_medians_numpy``): the same stable order of the values and the same
    integer counting against the two middle ranks, so the same values are picked.
    ``keyed_round_tables`` / ``round_median_tables`` do the same for a report's one-visit draws of
    up to 127 rounds, counted straight into the int8 (rounds, replicates) layout that the medians
    read, instead of int64 counts transposed there.

Built with ``-ffp-contract=off``: a fused multiply-add would round differently from numpy. The
passes over an interval's row also have AVX2 versions, chosen at import where the CPU has AVX2 (the
same IEEE operations: the same bits; ``use_avx2`` switches them for the tests). Independent series,
rows and replicates are shared over up to ``set_threads`` threads, each writing only its own
outputs, so the numbers do not depend on the thread count.
"""

from libc.stdint cimport uint8_t, uint32_t, uint64_t, int64_t, int8_t
from libc.math cimport NAN, isfinite
from libc.stdlib cimport free, malloc
from libc.string cimport memset
from libcpp.vector cimport vector

cdef extern from *:
    """
    #include <stdint.h>
    #include <stdlib.h>
    #include <algorithm>
    #include <atomic>
    #include <cmath>
    #include <thread>
    #include <utility>
    #include <vector>
    typedef unsigned __int128 c3_u128;
    typedef struct { c3_u128 state; c3_u128 inc; } c3_pcg64;

    /* numpy.random.SeedSequence: its hash constants (bit_generator.pyx). */
    static inline uint32_t c3_hashmix(uint32_t value, uint32_t *hash_const) {
        value ^= *hash_const;
        *hash_const *= 0x931e8875u;
        value *= *hash_const;
        value ^= value >> 16;
        return value;
    }
    static inline uint32_t c3_mix(uint32_t x, uint32_t y) {
        uint32_t r = 0xca01f9ddu * x - 0x4973f715u * y;
        r ^= r >> 16;
        return r;
    }
    /* SeedSequence(entropy=[w0, w1]).generate_state(4, uint64): pool of 4 words, no spawn key. */
    static void c3_seed_sequence(uint32_t w0, uint32_t w1, uint64_t out[4]) {
        uint32_t hash_a = 0x43b0d7e5u, pool[4], entropy[4] = {w0, w1, 0u, 0u};
        for (int i = 0; i < 4; i++) pool[i] = c3_hashmix(entropy[i], &hash_a);  /* missing words hash 0 */
        for (int src = 0; src < 4; src++)
            for (int dst = 0; dst < 4; dst++)
                if (src != dst) pool[dst] = c3_mix(pool[dst], c3_hashmix(pool[src], &hash_a));
        uint32_t hash_b = 0x8b51f9ddu, words[8];
        for (int i = 0; i < 8; i++) {
            uint32_t v = pool[i % 4];
            v ^= hash_b;
            hash_b *= 0x58f38dedu;
            v *= hash_b;
            v ^= v >> 16;
            words[i] = v;
        }
        for (int i = 0; i < 4; i++) out[i] = (uint64_t)words[2 * i] | ((uint64_t)words[2 * i + 1] << 32);
    }

    #define C3_PCG_MULT ((((c3_u128)2549297995355413924ULL) << 64) + 4865540595714422341ULL)

    /* numpy's PCG64(seed_sequence): pcg64_set_seed(state, words[0..1], words[2..3]). */
    static inline void c3_pcg64_seed(c3_pcg64 *rng, uint32_t seed, uint32_t digest) {
        uint64_t w[4];
        c3_seed_sequence(seed, digest, w);
        c3_u128 initstate = (((c3_u128)w[0]) << 64) + w[1];
        c3_u128 initseq = (((c3_u128)w[2]) << 64) + w[3];
        rng->state = 0;
        rng->inc = (initseq << 1u) | 1u;
        rng->state = rng->state * C3_PCG_MULT + rng->inc;
        rng->state += initstate;
        rng->state = rng->state * C3_PCG_MULT + rng->inc;
    }
    /* pcg64_random_r: the XSL-RR output of the advanced state. */
    static inline uint64_t c3_pcg64_next64(c3_pcg64 *rng) {
        rng->state = rng->state * C3_PCG_MULT + rng->inc;
        uint64_t x = ((uint64_t)(rng->state >> 64u)) ^ (uint64_t)rng->state;
        unsigned rot = (unsigned)(rng->state >> 122u);
        return (x >> rot) | (x << ((-rot) & 63u));
    }
    /* Generator.random(): the top 53 bits. */
    static inline double c3_pcg64_double(c3_pcg64 *rng) {
        return (double)(c3_pcg64_next64(rng) >> 11) * (1.0 / 9007199254740992.0);
    }

    /* numpy's PCG64 bit generator with its 32-bit buffer (pcg64_next32: the low half of a 64-bit
       output first, its high half on the next call), and Generator.integers(0, rng + 1) of int64
       (random_bounded_uint64_fill for a range below 2^32: Lemire's method,
       buffered_bounded_lemire_uint32). */
    typedef struct { c3_pcg64 g; int has_uint32; uint32_t uinteger; } c3_bitgen;
    static inline uint32_t c3_next32(c3_bitgen *r) {
        if (r->has_uint32) { r->has_uint32 = 0; return r->uinteger; }
        uint64_t next = c3_pcg64_next64(&r->g);
        r->has_uint32 = 1;
        r->uinteger = (uint32_t)(next >> 32);
        return (uint32_t)(next & 0xffffffffu);
    }
    /* A fresh generator as stats.rng_for(seed, key) makes it: PCG64([seed, digest]), no buffered half word. */
    static inline void c3_bitgen_seed(c3_bitgen *r, uint32_t seed, uint32_t digest) {
        c3_pcg64_seed(&r->g, seed, digest);
        r->has_uint32 = 0;
        r->uinteger = 0;
    }

    static inline uint32_t c3_bounded(c3_bitgen *r, uint32_t rng) {   /* uniform in 0..rng, rng < 2^32 - 1 */
        if (rng == 0) return 0;                                          /* numpy draws nothing then */
        const uint32_t rng_excl = rng + 1;
        uint64_t m = (uint64_t)c3_next32(r) * rng_excl;
        uint32_t leftover = (uint32_t)m;
        if (leftover < rng_excl) {
            const uint32_t threshold = (UINT32_MAX - rng) % rng_excl;
            while (leftover < threshold) {
                m = (uint64_t)c3_next32(r) * rng_excl;
                leftover = (uint32_t)m;
            }
        }
        return (uint32_t)(m >> 32);
    }

    /* numpy's pairwise summation of n doubles (DOUBLE_pairwise_sum, blocks of 128 summed with eight
       accumulators), the order np.sum uses along a contiguous axis. */
    static double c3_pairwise_sum(const double *a, ptrdiff_t n) {
        if (n < 8) {
            double res = 0.0;
            for (ptrdiff_t i = 0; i < n; i++) res += a[i];
            return res;
        }
        if (n <= 128) {
            double r[8];
            ptrdiff_t i;
            for (int k = 0; k < 8; k++) r[k] = a[k];
            for (i = 8; i < n - (n % 8); i += 8)
                for (int k = 0; k < 8; k++) r[k] += a[i + k];
            double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
            for (; i < n; i++) res += a[i];
            return res;
        }
        ptrdiff_t n2 = n / 2;
        n2 -= n2 % 8;
        return c3_pairwise_sum(a, n2) + c3_pairwise_sum(a + n2, n - n2);
    }

    static void c3_bitgen_set(c3_bitgen *r, uint64_t state_hi, uint64_t state_lo, uint64_t inc_hi,
                              uint64_t inc_lo, int has_uint32, uint32_t uinteger) {
        r->g.state = (((c3_u128)state_hi) << 64) + state_lo;
        r->g.inc = (((c3_u128)inc_hi) << 64) + inc_lo;
        r->has_uint32 = has_uint32;
        r->uinteger = uinteger;
    }
    static void c3_bitgen_get(const c3_bitgen *r, uint64_t words[4], int *has_uint32, uint32_t *uinteger) {
        words[0] = (uint64_t)(r->g.state >> 64); words[1] = (uint64_t)r->g.state;
        words[2] = (uint64_t)(r->g.inc >> 64); words[3] = (uint64_t)r->g.inc;
        *has_uint32 = r->has_uint32;
        *uinteger = r->uinteger;
    }

    /* stats.hierarchical_mean_ci's outer replicates without its (B, S) temporaries: for each b, S
       units drawn from `units` (integers(0, S) of the (B, S) block, in order) and S replicates from
       `draws` (integers(0, B), the stream after all the units), the included values summed as
       np.where(keep, drawn, 0.0).sum(axis=1) sums them; `counts[b]`: how many were included. */
    static void c3_hierarchical_sums(const float *reps, const uint8_t *included, ptrdiff_t S, ptrdiff_t B,
                                     c3_bitgen *units, c3_bitgen *draws, double *sums, int64_t *counts,
                                     double *row) {
        ptrdiff_t *at = (ptrdiff_t *)(row + S);   /* the caller's scratch holds S doubles, then S indices */
        for (ptrdiff_t b = 0; b < B; b++) {
            /* Indices first, then the gathers: the loads no longer wait behind the generators, so
               many cache misses (the block is tens of MB) are in flight at once. */
            for (ptrdiff_t s = 0; s < S; s++) {
                ptrdiff_t u = (ptrdiff_t)c3_bounded(units, (uint32_t)(S - 1));
                at[s] = u * B + (ptrdiff_t)c3_bounded(draws, (uint32_t)(B - 1));
                __builtin_prefetch(reps + at[s]);
                if (included) __builtin_prefetch(included + at[s]);
            }
            int64_t n_in = 0;
            for (ptrdiff_t s = 0; s < S; s++) {
                int keep = included ? included[at[s]] != 0 : 1;
                row[s] = keep ? (double)reps[at[s]] : 0.0;
                n_in += keep;
            }
            sums[b] = 0.0 + c3_pairwise_sum(row, S);
            counts[b] = n_in;
        }
    }

    /* The median rank J1 - 1 of `reps` replicates for each of `rows` series, series i drawing from
       the keyed generator (seed, digests[i]), through the alias table (stats._alias_draw_exact,
       operation for operation): values[i*reps + b] = xs[i*n + J1 - 1] when `values` is given, else
       ranks[i*reps + b] = J1 - 1. Then `extra` further uniforms of each generator go to
       more[i*extra + k]. Series are drawn C3_LANES at a time: their generators are independent
       chains of 128-bit multiplies, which the CPU overlaps; the alias choice is branch-free (a
       mispredicted branch per draw cost more than the draw). */
    #define C3_LANES 4
    /* Series i0 .. i0 + L - 1 (L a constant, so each lane's generator stays in registers); with
       VALUES the drawn order statistics go to `values`, else the ranks to `ranks`. */
    template <int L, bool VALUES>
    static inline void c3_tabled_lanes(const double *xs, ptrdiff_t n, ptrdiff_t i0, ptrdiff_t reps, uint32_t seed,
                                       const uint32_t *digests, const double *keep, const ptrdiff_t *alias,
                                       double *values, ptrdiff_t *ranks, ptrdiff_t extra, double *more) {
        const double dn = (double)n;
        c3_pcg64 g[L];
        for (int l = 0; l < L; l++) c3_pcg64_seed(&g[l], seed, digests[i0 + l]);
        for (ptrdiff_t b = 0; b < reps; b++) {
            for (int l = 0; l < L; l++) {
                double scaled = c3_pcg64_double(&g[l]) * dn;
                ptrdiff_t cell = (ptrdiff_t)scaled;
                ptrdiff_t other = alias[cell];
                ptrdiff_t j = other + (cell - other) * (ptrdiff_t)(scaled - (double)cell < keep[cell]);
                ptrdiff_t at = (i0 + l) * reps + b;
                if (VALUES) values[at] = xs[(i0 + l) * n + j];
                else ranks[at] = j;
            }
        }
        for (int l = 0; l < L; l++)
            for (ptrdiff_t k = 0; k < extra; k++) more[(i0 + l) * extra + k] = c3_pcg64_double(&g[l]);
    }

    template <bool VALUES>
    static void c3_tabled_rows(const double *xs, ptrdiff_t n, ptrdiff_t rows, ptrdiff_t reps, uint32_t seed,
                               const uint32_t *digests, const double *keep, const ptrdiff_t *alias,
                               double *values, ptrdiff_t *ranks, ptrdiff_t extra, double *more) {
        ptrdiff_t i0 = 0;
        for (; i0 + C3_LANES <= rows; i0 += C3_LANES)
            c3_tabled_lanes<C3_LANES, VALUES>(xs, n, i0, reps, seed, digests, keep, alias, values, ranks, extra, more);
        for (; i0 < rows; i0++)
            c3_tabled_lanes<1, VALUES>(xs, n, i0, reps, seed, digests, keep, alias, values, ranks, extra, more);
    }

    static void c3_tabled_draws(const double *xs, ptrdiff_t n, ptrdiff_t rows, ptrdiff_t reps, uint32_t seed,
                                const uint32_t *digests, const double *keep, const ptrdiff_t *alias,
                                double *values, ptrdiff_t *ranks, ptrdiff_t extra, double *more) {
        if (values) c3_tabled_rows<true>(xs, n, rows, reps, seed, digests, keep, alias, values, ranks, extra, more);
        else c3_tabled_rows<false>(xs, n, rows, reps, seed, digests, keep, alias, values, ranks, extra, more);
    }

    /* The interval rows' passes over B values. Each body is compiled twice where GCC targets x86-64
       Linux: for the baseline CPU and for AVX2 (4 doubles per instruction), chosen once at import
       (c3_simd_init) and switchable for the tests (use_avx2). Every operation is an IEEE division,
       comparison or selection, which SSE2 and AVX2 perform alike, and -ffp-contract=off forbids
       fused multiply-adds in both: the same bits either way. */
    #define C3_BODY static inline __attribute__((always_inline))

    /* np.maximum of two doubles: NaN if either is NaN (selected without a branch). */
    C3_BODY double c3_np_maximum(double x, double y) {
        return ((x >= y) | (x != x)) ? x : y;
    }

    /* Row `op` (ROW_SAME, RATIO, IDEAL, FRACTION) of the series a, b, c, d into `row`; for a fraction,
       returns how many ideal replicates are at most 1, else 0. speedup.py's formulas, operation for
       operation. */
    C3_BODY ptrdiff_t c3_fill_row_body(int op, const double *__restrict a, const double *__restrict b,
                                       const double *__restrict c, const double *__restrict d,
                                       ptrdiff_t size, double *__restrict row) {
        ptrdiff_t below = 0;
        if (op == 0) {
            for (ptrdiff_t j = 0; j < size; j++) row[j] = a[j];
        } else if (op == 1) {
            for (ptrdiff_t j = 0; j < size; j++) row[j] = a[j] / b[j];
        } else if (op == 2) {
            for (ptrdiff_t j = 0; j < size; j++) row[j] = a[j] / c3_np_maximum(b[j], c[j]);
        } else {
            for (ptrdiff_t j = 0; j < size; j++) {
                double ideal = a[j] / c3_np_maximum(b[j], c[j]);
                below += ideal <= 1.0;
                row[j] = (a[j] / d[j] - 1.0) / (ideal - 1.0);
            }
        }
        return below;
    }

    /* Whether every value is finite (v - v is 0 only for finite v) and whether any differs from the
       first: the interval's two refusals, in one pass without branches. */
    C3_BODY void c3_finite_spread_body(const double *__restrict row, ptrdiff_t size, int *finite, int *spread) {
        int64_t bad = 0, differ = 0;
        const double first = row[0];
        for (ptrdiff_t j = 0; j < size; j++) {
            bad |= (int64_t)(!(row[j] - row[j] == 0.0));
            differ |= (int64_t)(row[j] != first);
        }
        *finite = bad == 0;
        *spread = differ != 0;
    }

    /* Every value at or below t_low to `bottom`, at or above t_high to `top` (each with room for
       `size` values), in row order; without branches: every value is written, the count advanced
       or not. The AVX2 version compresses four values at a time (a lane permutation per mask). */
    C3_BODY void c3_split_tails_body(const double *__restrict row, ptrdiff_t size, double t_low, double t_high,
                                     double *__restrict bottom, ptrdiff_t *n_low, double *__restrict top,
                                     ptrdiff_t *n_high) {
        ptrdiff_t nl = 0, nh = 0;
        for (ptrdiff_t j = 0; j < size; j++) {
            double v = row[j];
            bottom[nl] = v;
            nl += v <= t_low;
            top[nh] = v;
            nh += v >= t_high;
        }
        *n_low = nl;
        *n_high = nh;
    }

    static ptrdiff_t c3_fill_row_base(int op, const double *a, const double *b, const double *c, const double *d,
                                      ptrdiff_t size, double *row) {
        return c3_fill_row_body(op, a, b, c, d, size, row);
    }
    static void c3_finite_spread_base(const double *row, ptrdiff_t size, int *finite, int *spread) {
        c3_finite_spread_body(row, size, finite, spread);
    }
    static void c3_split_tails_base(const double *row, ptrdiff_t size, double t_low, double t_high,
                                    double *bottom, ptrdiff_t *n_low, double *top, ptrdiff_t *n_high) {
        c3_split_tails_body(row, size, t_low, t_high, bottom, n_low, top, n_high);
    }

    #if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
    #include <immintrin.h>
    #define C3_AVX2 __attribute__((target("avx2,popcnt")))
    static int c3_simd_supported = 0;   /* the CPU has AVX2 and POPCNT (c3_simd_init, at import) */
    static int c3_simd_avx2 = 0;        /* the AVX2 bodies are in use */
    /* c3_split_perm[m]: the 32-bit lanes that move the doubles selected by the 4-bit mask m to the front. */
    static int32_t c3_split_perm[16][8];

    static void c3_simd_init(void) {
        for (int m = 0; m < 16; m++) {
            int out = 0;
            for (int k = 0; k < 4; k++)
                if (m & (1 << k)) { c3_split_perm[m][2 * out] = 2 * k; c3_split_perm[m][2 * out + 1] = 2 * k + 1; out++; }
            for (; out < 4; out++) { c3_split_perm[m][2 * out] = 0; c3_split_perm[m][2 * out + 1] = 1; }
        }
        __builtin_cpu_init();
        c3_simd_supported = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("popcnt");
        c3_simd_avx2 = c3_simd_supported;
    }

    C3_AVX2 static ptrdiff_t c3_fill_row_avx2(int op, const double *a, const double *b, const double *c,
                                              const double *d, ptrdiff_t size, double *row) {
        return c3_fill_row_body(op, a, b, c, d, size, row);
    }
    C3_AVX2 static void c3_finite_spread_avx2(const double *row, ptrdiff_t size, int *finite, int *spread) {
        c3_finite_spread_body(row, size, finite, spread);
    }
    C3_AVX2 static void c3_split_tails_avx2(const double *__restrict row, ptrdiff_t size, double t_low,
                                            double t_high, double *__restrict bottom, ptrdiff_t *n_low,
                                            double *__restrict top, ptrdiff_t *n_high) {
        const __m256d lo = _mm256_set1_pd(t_low), hi = _mm256_set1_pd(t_high);
        ptrdiff_t nl = 0, nh = 0, j = 0;
        /* nl, nh <= j: each store of four lands inside the first j + 4 <= size places. */
        for (; j + 4 <= size; j += 4) {
            __m256 v = _mm256_castpd_ps(_mm256_loadu_pd(row + j));
            int ml = _mm256_movemask_pd(_mm256_cmp_pd(_mm256_castps_pd(v), lo, _CMP_LE_OQ));
            int mh = _mm256_movemask_pd(_mm256_cmp_pd(_mm256_castps_pd(v), hi, _CMP_GE_OQ));
            __m256i pl = _mm256_loadu_si256((const __m256i *)c3_split_perm[ml]);
            __m256i ph = _mm256_loadu_si256((const __m256i *)c3_split_perm[mh]);
            _mm256_storeu_pd(bottom + nl, _mm256_castps_pd(_mm256_permutevar8x32_ps(v, pl)));
            _mm256_storeu_pd(top + nh, _mm256_castps_pd(_mm256_permutevar8x32_ps(v, ph)));
            nl += __builtin_popcount((unsigned)ml);
            nh += __builtin_popcount((unsigned)mh);
        }
        ptrdiff_t rl, rh;
        c3_split_tails_body(row + j, size - j, t_low, t_high, bottom + nl, &rl, top + nh, &rh);
        *n_low = nl + rl;
        *n_high = nh + rh;
    }
    #define C3_PICK(name, ...) (c3_simd_avx2 ? name##_avx2(__VA_ARGS__) : name##_base(__VA_ARGS__))
    #else
    static int c3_simd_supported = 0, c3_simd_avx2 = 0;
    static void c3_simd_init(void) {}
    #define C3_PICK(name, ...) name##_base(__VA_ARGS__)
    #endif

    /* The passes as the kernels call them: the AVX2 body when in use, else the baseline one. */
    static ptrdiff_t c3_fill_row(int op, const double *a, const double *b, const double *c, const double *d,
                                 ptrdiff_t size, double *row) {
        return C3_PICK(c3_fill_row, op, a, b, c, d, size, row);
    }
    static void c3_finite_spread(const double *row, ptrdiff_t size, int *finite, int *spread) {
        C3_PICK(c3_finite_spread, row, size, finite, spread);
    }
    static void c3_split_tails(const double *row, ptrdiff_t size, double t_low, double t_high,
                               double *bottom, ptrdiff_t *n_low, double *top, ptrdiff_t *n_high) {
        C3_PICK(c3_split_tails, row, size, t_low, t_high, bottom, n_low, top, n_high);
    }
    /* nth_element's contract for a[0..n) of finite doubles: a[k] is the k-th smallest, none before it
       larger, none after it smaller. A quickselect whose partitions move values without branches
       (a mispredicted branch per value made std::nth_element the costliest step of an interval):
       values below the pivot to the front, then those equal to it (ties are common: a median's
       replicates take few distinct values). After 64 rounds (an adversarial order) it hands the
       rest to std::nth_element. */
    static void c3_select(double *a, ptrdiff_t n, ptrdiff_t k) {
        ptrdiff_t lo = 0, hi = n;   /* rank k lies in a[lo..hi); before lo nothing larger, from hi nothing smaller */
        for (int round = 0; hi - lo > 16; round++) {
            if (round == 64) {
                std::nth_element(a + lo, a + k, a + hi);
                return;
            }
            double x = a[lo], y = a[lo + (hi - lo) / 2], z = a[hi - 1];
            double p = x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y));  /* median of 3 */
            ptrdiff_t i = lo;
            for (ptrdiff_t j = lo; j < hi; j++) {   /* a[lo..i) < p <= a[i..j) */
                double v = a[j];
                a[j] = a[i];
                a[i] = v;
                i += v < p;
            }
            if (k < i) { hi = i; continue; }        /* p itself is not below p: i < hi */
            ptrdiff_t e = i;
            for (ptrdiff_t j = i; j < hi; j++) {    /* a[i..e) == p < a[e..j) */
                double v = a[j];
                a[j] = a[e];
                a[e] = v;
                e += v == p;
            }
            if (k < e) return;                      /* rank k is p */
            lo = e;                                 /* p occurs at least once: e > i >= lo */
        }
        for (ptrdiff_t j = lo + 1; j < hi; j++) {   /* the last few: insertion sort */
            double v = a[j];
            ptrdiff_t t = j;
            while (t > lo && a[t - 1] > v) { a[t] = a[t - 1]; t--; }
            a[t] = v;
        }
    }

    /* fn(ctx, lo, hi) over 0..n, in chunks that `threads` threads (this one and threads - 1 started
       here, joined before returning) take in turn until none is left. On a machine whose other
       core is busy, a thread that is not scheduled takes few chunks and this one does the rest,
       instead of waiting for a fixed half. The chunks write disjoint outputs, so the result is the
       one a single thread gives. A thread that cannot be started leaves its share to the others. */
    typedef void (*c3_chunk_fn)(void *ctx, ptrdiff_t lo, ptrdiff_t hi);
    struct c3_chunks {
        c3_chunk_fn fn; void *ctx; ptrdiff_t n, grain; std::atomic<ptrdiff_t> next;
    };
    static void c3_take_chunks(c3_chunks *c) {
        for (;;) {
            ptrdiff_t lo = c->next.fetch_add(c->grain);
            if (lo >= c->n) return;
            c->fn(c->ctx, lo, std::min(c->n, lo + c->grain));
        }
    }
    static void c3_run_chunks(c3_chunk_fn fn, void *ctx, ptrdiff_t n, int threads) {
        if (threads < 2 || n < 2) { fn(ctx, 0, n); return; }
        c3_chunks chunks;
        chunks.fn = fn; chunks.ctx = ctx; chunks.n = n;
        chunks.grain = std::max((ptrdiff_t)1, n / ((ptrdiff_t)threads * 8));
        chunks.next.store(0);
        std::vector<std::thread> started;
        for (int t = 1; t < threads; t++) {
            try {
                started.emplace_back(c3_take_chunks, &chunks);
            } catch (...) {
                break;
            }
        }
        c3_take_chunks(&chunks);
        for (auto &t : started) t.join();
    }

    /* c3_hierarchical_sums in two stages: the generators' draws for every replicate first (in
       their order: all the units, then all the replicates), as flat indices into reps; then the
       gathers and sums, replicates shared by `threads` threads (each replicate's sum alone, in the
       same order: the same bits). The gathers miss the cache (the block is tens of MB), so two
       threads have twice the loads in flight. Returns 0 when memory for the S x B indices or a
       thread's scratch could not be had. */
    struct c3_sums_job {
        const float *reps; const uint8_t *included; ptrdiff_t S, B; const uint32_t *at; double *sums;
        int64_t *counts; int failed;
    };
    static void c3_sums_chunk(void *ctx, ptrdiff_t lo, ptrdiff_t hi) {
        c3_sums_job *j = (c3_sums_job *)ctx;
        double *row = (double *)malloc(j->S * sizeof(double));
        if (!row) { j->failed = 1; return; }
        for (ptrdiff_t b = lo; b < hi; b++) {
            const uint32_t *at = j->at + b * j->S;
            for (ptrdiff_t s = 0; s < j->S; s++) {
                __builtin_prefetch(j->reps + at[s]);
                if (j->included) __builtin_prefetch(j->included + at[s]);
            }
            int64_t n_in = 0;
            for (ptrdiff_t s = 0; s < j->S; s++) {
                int keep = j->included ? j->included[at[s]] != 0 : 1;
                row[s] = keep ? (double)j->reps[at[s]] : 0.0;
                n_in += keep;
            }
            j->sums[b] = 0.0 + c3_pairwise_sum(row, j->S);
            j->counts[b] = n_in;
        }
        free(row);
    }
    static int c3_hierarchical_sums_threads(const float *reps, const uint8_t *included, ptrdiff_t S, ptrdiff_t B,
                                            c3_bitgen *gen, double *sums, int64_t *counts, int threads) {
        uint32_t *at = (uint32_t *)malloc((size_t)(S * B) * sizeof(uint32_t));   /* filled below: no zeroing */
        if (!at) return 0;
        for (ptrdiff_t i = 0; i < S * B; i++)              /* units: integers(0, S, (B, S)) */
            at[i] = (uint32_t)c3_bounded(gen, (uint32_t)(S - 1)) * (uint32_t)B;
        for (ptrdiff_t i = 0; i < S * B; i++)              /* then draws: integers(0, B, (B, S)) */
            at[i] += (uint32_t)c3_bounded(gen, (uint32_t)(B - 1));
        c3_sums_job job = {reps, included, S, B, at, sums, counts, 0};
        c3_run_chunks(c3_sums_chunk, &job, B, threads);
        free(at);
        return !job.failed;
    }

    /* c3_tabled_draws with its series shared by `threads` threads (each series has its own
       generator and outputs: the same draws as one thread makes). */
    struct c3_draws_job {
        const double *xs; ptrdiff_t n, reps; uint32_t seed; const uint32_t *digests; const double *keep;
        const ptrdiff_t *alias; double *values; ptrdiff_t *ranks; ptrdiff_t extra; double *more;
    };
    static void c3_draws_chunk(void *ctx, ptrdiff_t lo, ptrdiff_t hi) {
        const c3_draws_job *j = (const c3_draws_job *)ctx;
        c3_tabled_draws(j->xs ? j->xs + lo * j->n : NULL, j->n, hi - lo, j->reps, j->seed, j->digests + lo,
                        j->keep, j->alias, j->values ? j->values + lo * j->reps : NULL,
                        j->ranks ? j->ranks + lo * j->reps : NULL, j->extra, j->more ? j->more + lo * j->extra : NULL);
    }
    static void c3_tabled_draws_threads(const double *xs, ptrdiff_t n, ptrdiff_t rows, ptrdiff_t reps, uint32_t seed,
                                        const uint32_t *digests, const double *keep, const ptrdiff_t *alias,
                                        double *values, ptrdiff_t *ranks, ptrdiff_t extra, double *more, int threads) {
        c3_draws_job job = {xs, n, reps, seed, digests, keep, alias, values, ranks, extra, more};
        c3_run_chunks(c3_draws_chunk, &job, rows, threads);
    }

    /* stats.medians_from_ranks for even n, operation for operation, rows lo..hi-1 of B replicates:
       J2 - 1 is J1 - 1 (j1) when the first further uniform falls below same[J1 - 1], else J1 - 1 plus
       ceil((n - J1) (1 - W^(1/(n/2)))), at least 1 and at most n - 1, W the second uniform; the
       median is the mean of the two order statistics. log and expm1 are the C library's, which
       numpy's float64 loops call on CPUs without AVX-512 (there numpy has its own). */
    struct c3_even_job {
        const double *xs; ptrdiff_t n; const ptrdiff_t *j1; const double *u2; const double *same; ptrdiff_t B;
        double *out; std::atomic<int> bad;   /* a rank outside 0..n-1 was met (its row is left unfinished) */
    };
    static void c3_even_medians_chunk(void *ctx, ptrdiff_t lo, ptrdiff_t hi) {
        c3_even_job *job = (c3_even_job *)ctx;
        const ptrdiff_t n = job->n, B = job->B;
        const double half = (double)(n - n / 2);
        for (ptrdiff_t i = lo; i < hi; i++) {
            const double *x = job->xs + i * n;
            const ptrdiff_t *j1 = job->j1 + i * B;
            const double *first = job->u2 + 2 * i * B, *second = first + B;
            double *out = job->out + i * B;
            for (ptrdiff_t b = 0; b < B; b++) {
                const ptrdiff_t j = j1[b];
                if (j < 0 || j >= n) { job->bad = 1; break; }
                ptrdiff_t j2 = j;
                if (!(first[b] < job->same[j])) {
                    /* With at most one rank above J1 the step is 1 whatever W (0 x a number in
                       (0, 1], or the ceiling of one such): no logarithm, which is every draw of a
                       series of 2 (the series of a capture of 2 repetitions). */
                    const ptrdiff_t above = n - (j + 1);
                    int64_t step = above <= 1 ? 1 : (int64_t)ceil((double)above * -expm1(log(second[b]) / half));
                    j2 = std::min(std::max(j + std::max(step, (int64_t)1), (ptrdiff_t)0), n - 1);
                }
                out[b] = 0.5 * (x[j] + x[j2]);
            }
        }
    }

    /* Every row, shared by `threads` threads; -1 when a rank is outside 0..n-1. */
    static int c3_even_medians(const double *xs, ptrdiff_t n, ptrdiff_t rows, const ptrdiff_t *j1, const double *u2,
                               const double *same, ptrdiff_t B, double *out, int threads) {
        c3_even_job job;
        job.xs = xs; job.n = n; job.j1 = j1; job.u2 = u2; job.same = same; job.B = B; job.out = out; job.bad = 0;
        c3_run_chunks(c3_even_medians_chunk, &job, rows, threads);
        return job.bad ? -1 : 0;
    }

    /* Round-paired medians of series s = first..last-1 (round_median_rows), numpy's algorithm
       (stats._round_resampled_medians_numpy) without its (B, n) arrays: each series' values ordered
       as np.argsort(kind="stable") orders them; then, for every replicate b at once, the running
       weight cw[b] over the sorted values (weights `ct`, the counts transposed to (R, B), so that the
       loop over b is contiguous and the compiler vectorizes it) and how many running weights fall
       short of the 1-based ranks (total + 1) / 2 and total / 2 + 1: those counts, capped at n - 1,
       are the two middle values' places. NaN where the total is 0. The totals depend only on how
       many values each column has, so consecutive series with the same pattern (the phases of one
       scenario's runs) share them. The integers are int8 where no running weight and no series
       length can reach 2^7 (c3_round_medians' bound: a capture's series of up to 127 rounds, as a
       report's of 25), int16 where none can reach 2^15 (2500 rounds), else int32 (it refuses 2^31):
       the same counts, twice the lanes per vector at each step down. */
    typedef struct {
        const double *values; const ptrdiff_t *cols; const ptrdiff_t *starts; const ptrdiff_t *which;
        const void *const *ct; const ptrdiff_t *R; ptrdiff_t B; double *out; double *medians;
        std::atomic<int> failed;
    } c3_round_job;

    /* Replicates a block of c3_round_counts_body holds: their running weights and counts (3 x 64
       integers) stay in L1 while the block streams, value after value, the contiguous stretch of
       the value's row of `ct` that weights them. */
    #define C3_ROUND_BLOCK 64

    /* For every replicate b: how many of the running weights over the sorted values fall short of
       lo_rank[b] and of hi_rank[b]. A block of C3_ROUND_BLOCK replicates at a time, value by value:
       the lane loop is one contiguous pass that the compiler turns into vector operations (4 or 8
       lanes of int32, 8 or 16 of int16, baseline or AVX2 body). A running weight only grows, so once
       every running weight of the block has reached hi_rank the rest of the values cannot change its
       counts. (The previous body held 8 replicates in registers and visited the values' rows in
       turn for each 8: a load from another row, often outside L1, for every 8 replicates and value;
       this one reads each row's stretch once per block, in order. For series of 25 values and 2000
       replicates this loop alone ran 3-4 times faster in int32 on the development VM, 6-7 times in
       int16, in a standalone C++ benchmark; the whole round_median_rows about 2 times.) */
    template <typename T, bool ONE_RANK>
    C3_BODY void c3_round_counts_pass(const T *__restrict ct, const ptrdiff_t *c, ptrdiff_t n, ptrdiff_t B,
                                      ptrdiff_t b, ptrdiff_t b_end, const T *__restrict lo_rank,
                                      const T *__restrict hi_rank, T *__restrict n_lo, T *__restrict n_hi) {
        for (; b + C3_ROUND_BLOCK <= b_end; b += C3_ROUND_BLOCK) {
            T cw[C3_ROUND_BLOCK] = {0}, nl[C3_ROUND_BLOCK] = {0}, nh[C3_ROUND_BLOCK] = {0};
            const T *__restrict lo = lo_rank + b, *__restrict hi = hi_rank + b;
            for (ptrdiff_t i = 0; i < n; i++) {
                const T *__restrict w = ct + c[i] * B + b;
                T below = 0;
                for (int k = 0; k < C3_ROUND_BLOCK; k++) {
                    cw[k] += w[k];
                    if (!ONE_RANK) nl[k] += cw[k] < lo[k];
                    const T short_of_hi = cw[k] < hi[k];
                    nh[k] += short_of_hi;
                    below |= short_of_hi;
                }
                if (!below) break;
            }
            for (int k = 0; k < C3_ROUND_BLOCK; k++) {
                if (!ONE_RANK) n_lo[b + k] = nl[k];   /* one rank: the caller reads n_hi for both */
                n_hi[b + k] = nh[k];
            }
        }
        for (; b < b_end; b++) {
            T cw = 0, nl = 0, nh = 0;
            for (ptrdiff_t i = 0; i < n && cw < hi_rank[b]; i++) {
                cw += ct[c[i] * B + b];
                nl += cw < lo_rank[b];
                nh += cw < hi_rank[b];
            }
            n_lo[b] = nl;
            n_hi[b] = nh;
        }
    }
    /* Where each replicate has one middle rank (lo_rank is hi_rank: the pattern's totals are all odd,
       as for every series of one value per round of an odd number of rounds), the count short of it
       is both counts: half the comparisons, and the block's running weights, counts and rank
       (3 x 64 integers) stay in vector registers, where the two counts and two ranks spilled. */
    template <typename T>
    C3_BODY void c3_round_counts_body(const T *ct, const ptrdiff_t *c, ptrdiff_t n, ptrdiff_t B, ptrdiff_t b,
                                      ptrdiff_t b_end, const T *lo_rank, const T *hi_rank, T *n_lo, T *n_hi) {
        if (lo_rank == hi_rank)
            c3_round_counts_pass<T, true>(ct, c, n, B, b, b_end, lo_rank, hi_rank, n_lo, n_hi);
        else
            c3_round_counts_pass<T, false>(ct, c, n, B, b, b_end, lo_rank, hi_rank, n_lo, n_hi);
    }
    template <typename T>
    static void c3_round_counts_base(const T *ct, const ptrdiff_t *c, ptrdiff_t n, ptrdiff_t B, ptrdiff_t b,
                                     ptrdiff_t b_end, const T *lo_rank, const T *hi_rank, T *n_lo, T *n_hi) {
        c3_round_counts_body<T>(ct, c, n, B, b, b_end, lo_rank, hi_rank, n_lo, n_hi);
    }
    #ifdef C3_AVX2
    template <typename T>
    C3_AVX2 static void c3_round_counts_avx2(const T *ct, const ptrdiff_t *c, ptrdiff_t n, ptrdiff_t B, ptrdiff_t b,
                                             ptrdiff_t b_end, const T *lo_rank, const T *hi_rank, T *n_lo, T *n_hi) {
        c3_round_counts_body<T>(ct, c, n, B, b, b_end, lo_rank, hi_rank, n_lo, n_hi);
    }
    #endif

    /* Each replicate's median from its two counts (the two middle values' places, capped at n - 1)
       over the sorted values `v`; NaN where the replicate drew none of the series' rounds. Apart from
       the counting, so that its AVX2 copy gathers four values at a time. */
    template <typename T>
    C3_BODY void c3_round_out_body(const double *__restrict v, ptrdiff_t n, const T *nl, const T *nh,
                                   const int64_t *__restrict tot, ptrdiff_t B, double *__restrict out) {
        const int32_t last = (int32_t)(n - 1);
        if (nl == nh && !tot) {   /* one middle rank: both places are one, 0.5 * (x + x) of one gather (the
                                     same bits); and no replicate without rounds (tot NULL), as one rank implies */
            for (ptrdiff_t b = 0; b < B; b++) {
                const double x = v[std::min<int32_t>(nh[b], last)];
                out[b] = 0.5 * (x + x);
            }
            return;
        }
        for (ptrdiff_t b = 0; b < B; b++) {
            const double m = 0.5 * (v[std::min<int32_t>(nl[b], last)] + v[std::min<int32_t>(nh[b], last)]);
            out[b] = tot && tot[b] == 0 ? NAN : m;
        }
    }
    template <typename T>
    static void c3_round_out_base(const double *v, ptrdiff_t n, const T *nl, const T *nh, const int64_t *tot,
                                  ptrdiff_t B, double *out) {
        c3_round_out_body<T>(v, n, nl, nh, tot, B, out);
    }
    #ifdef C3_AVX2
    template <typename T>
    C3_AVX2 static void c3_round_out_avx2(const double *v, ptrdiff_t n, const T *nl, const T *nh, const int64_t *tot,
                                          ptrdiff_t B, double *out) {
        c3_round_out_body<T>(v, n, nl, nh, tot, B, out);
    }
    #endif

    /* Series of one draw that c3_round_chunk_of walks together, block of replicates by block: the
       block's stretch of the draw's table (64 replicates x its rounds: 320 KB in int16 for 2500
       rounds) stays in L2 while every series of the group reads it. Series by series, each read a
       table of tens of MB from memory once per block: series of 2500 rounds took 3.4 ms each. */
    #define C3_ROUND_GROUP 32
    #define C3_ROUND_GROUP_BYTES (512 * 1024)

    template <typename T>
    static void c3_round_chunk_of(c3_round_job *j, ptrdiff_t first, ptrdiff_t last) {
        const ptrdiff_t B = j->B;
        try {
            std::vector<int32_t> per_col, shared;
            std::vector<std::vector<double>> v(C3_ROUND_GROUP);        /* each series' sorted values */
            std::vector<std::vector<ptrdiff_t>> c(C3_ROUND_GROUP);     /* and their columns */
            std::vector<ptrdiff_t> order, pattern(C3_ROUND_GROUP);    /* each series' ranks: which pattern */
            /* Per pattern of values per column (the series of one scenario's runs share one): the
               replicates' totals and the two middle ranks (hi_rank empty where they are the same). */
            std::vector<std::vector<int64_t>> totals;
            std::vector<char> some_empty;   /* per pattern: a replicate drew none of its rounds (total 0) */
            std::vector<std::vector<T>> lo_rank, hi_rank;
            std::vector<T> n_lo((size_t)C3_ROUND_GROUP * B), n_hi((size_t)C3_ROUND_GROUP * B);
            ptrdiff_t shared_draw = -1, last_pattern = -1;   /* the previous group's last pattern */
            for (ptrdiff_t s0 = first; s0 < last;) {
                const ptrdiff_t draw = j->which[s0], R = j->R[draw];
                /* Grouped only where the table outgrows L2: with a small one (25 rounds: 100 KB),
                   series by series was faster (5-15% on the dev VM), each series' counts in L1. */
                const ptrdiff_t group = (size_t)R * B * sizeof(T) > C3_ROUND_GROUP_BYTES ? C3_ROUND_GROUP : 1;
                ptrdiff_t s1 = s0 + 1;
                while (s1 < last && s1 - s0 < group && j->which[s1] == draw) s1++;
                const T *ct = (const T *)j->ct[draw];
                ptrdiff_t patterns = 0;
                for (ptrdiff_t g = 0; g < s1 - s0; g++) {
                    const ptrdiff_t s = s0 + g, lo = j->starts[s], n = j->starts[s + 1] - lo;
                    const double *x = j->values + lo;
                    per_col.assign(R, 0);
                    order.resize(n); v[g].resize(n); c[g].resize(n);
                    for (ptrdiff_t i = 0; i < n; i++) order[i] = i;
                    if (n <= 32) {   /* a capture's series (tens of rounds): an insertion sort, stable as
                                        std::stable_sort, without the buffer that one allocates per call */
                        for (ptrdiff_t i = 1; i < n; i++) {
                            const ptrdiff_t at = order[i];
                            ptrdiff_t k = i;
                            for (; k > 0 && x[at] < x[order[k - 1]]; k--) order[k] = order[k - 1];
                            order[k] = at;
                        }
                    } else {
                        std::stable_sort(order.begin(), order.end(), [x](ptrdiff_t a, ptrdiff_t b) { return x[a] < x[b]; });
                    }
                    for (ptrdiff_t i = 0; i < n; i++) {
                        v[g][i] = x[order[i]];
                        c[g][i] = j->cols[lo + order[i]];
                        per_col[c[g][i]] += 1;
                    }
                    j->medians[s] = n % 2 ? v[g][n / 2] : 0.5 * (v[g][n / 2 - 1] + v[g][n / 2]);
                    if (patterns == 0 && last_pattern >= 0 && draw == shared_draw && per_col == shared) {
                        /* the previous group's last series had the same pattern: its ranks move to slot 0 */
                        std::swap(totals[0], totals[last_pattern]);
                        std::swap(lo_rank[0], lo_rank[last_pattern]);
                        std::swap(hi_rank[0], hi_rank[last_pattern]);
                        std::swap(some_empty[0], some_empty[last_pattern]);
                        patterns = 1;
                    } else if (patterns == 0 || per_col != shared) {
                        if ((ptrdiff_t)totals.size() <= patterns) {
                            totals.emplace_back(B); lo_rank.emplace_back(B); hi_rank.emplace_back(B);
                            some_empty.push_back(0);
                        }
                        std::vector<int64_t> &tot = totals[patterns];
                        std::fill(tot.begin(), tot.end(), 0);
                        for (ptrdiff_t r = 0; r < R; r++) {
                            const T *w = ct + r * B;
                            const int64_t times = per_col[r];
                            if (times == 1)   /* a value per round: no multiplication (vectorized) */
                                for (ptrdiff_t b = 0; b < B; b++) tot[b] += w[b];
                            else if (times)
                                for (ptrdiff_t b = 0; b < B; b++) tot[b] += (int64_t)w[b] * times;
                        }
                        std::vector<T> &lo_r = lo_rank[patterns], &hi_r = hi_rank[patterns];
                        hi_r.resize(B);
                        bool one_rank = true, empty = false;
                        for (ptrdiff_t b = 0; b < B; b++) {
                            lo_r[b] = (T)((tot[b] + 1) / 2);
                            hi_r[b] = (T)(tot[b] / 2 + 1);
                            one_rank &= lo_r[b] == hi_r[b];
                            empty |= tot[b] == 0;
                        }
                        some_empty[patterns] = empty;
                        if (one_rank)   /* every total odd: an empty hi_rank says lo_rank is both */
                            hi_r.clear();
                        shared = per_col;
                        shared_draw = draw;
                        patterns++;
                    }
                    pattern[g] = patterns - 1;
                }
                last_pattern = patterns - 1;
                for (ptrdiff_t b = 0; b < B; b += group > 1 ? C3_ROUND_BLOCK : B) {
                    const ptrdiff_t b_end = group > 1 ? std::min<ptrdiff_t>(B, b + C3_ROUND_BLOCK) : B;
                    for (ptrdiff_t g = 0; g < s1 - s0; g++)
                        C3_PICK(c3_round_counts, ct, c[g].data(), (ptrdiff_t)c[g].size(), B, b, b_end,
                                lo_rank[pattern[g]].data(),
                                (hi_rank[pattern[g]].empty() ? lo_rank : hi_rank)[pattern[g]].data(),
                                n_lo.data() + g * B, n_hi.data() + g * B);
                }
                for (ptrdiff_t g = 0; g < s1 - s0; g++)
                    /* one middle rank (no hi_rank): the counts short of it are both counts, one array */
                    C3_PICK(c3_round_out, v[g].data(), (ptrdiff_t)v[g].size(),
                            (hi_rank[pattern[g]].empty() ? n_hi : n_lo).data() + g * B,
                            n_hi.data() + g * B, some_empty[pattern[g]] ? totals[pattern[g]].data() : nullptr, B,
                            j->out + (s0 + g) * B);
                s0 = s1;
            }
        } catch (...) {  /* std::bad_alloc: reported by the caller */
            j->failed = 1;
        }
    }
    static void c3_round_chunk8(void *ctx, ptrdiff_t first, ptrdiff_t last) {
        c3_round_chunk_of<int8_t>((c3_round_job *)ctx, first, last);
    }
    static void c3_round_chunk16(void *ctx, ptrdiff_t first, ptrdiff_t last) {
        c3_round_chunk_of<int16_t>((c3_round_job *)ctx, first, last);
    }
    static void c3_round_chunk32(void *ctx, ptrdiff_t first, ptrdiff_t last) {
        c3_round_chunk_of<int32_t>((c3_round_job *)ctx, first, last);
    }

    /* The counts of every draw transposed to (R, B) as T (the loop over b contiguous), all the draws'
       tables in one allocation (`ct`), `at` pointing at each; and, in the same pass, each draw's
       largest row sum (`most`). In tiles of C3_ROUND_BLOCK replicates x C3_TRANSPOSE_ROUNDS rounds,
       each tile's rows read in order: a row's stretch is contiguous, and the tile's writes go to
       at most 32 streams (2500 rounds as 2500 streams missed L1 at every write). (Tiles read
       column by column, then a separate pass for the row sums, read every count from memory twice:
       64 scenarios' draws are 25 MB of int64, and the two passes were a fifth of
       round_median_rows on the dev VM.) Returns false where a count is negative. */
    #define C3_TRANSPOSE_ROUNDS 32
    template <typename T>
    static bool c3_transpose_counts(const int64_t *const *counts, const ptrdiff_t *R, ptrdiff_t draws, ptrdiff_t B,
                                    std::vector<T> &ct, std::vector<const void *> &at, int64_t *most) {
        ptrdiff_t size = 0;
        for (ptrdiff_t k = 0; k < draws; k++) size += R[k] * B;
        ct.resize(size);
        at.clear();
        T *next = ct.data();
        int64_t signs = 0;
        for (ptrdiff_t k = 0; k < draws; k++) {
            const ptrdiff_t rounds = R[k];
            const int64_t *__restrict from = counts[k];
            T *__restrict to = next;
            next += rounds * B;
            int64_t largest = 0;
            for (ptrdiff_t b0 = 0; b0 < B; b0 += C3_ROUND_BLOCK) {
                const ptrdiff_t b1 = std::min<ptrdiff_t>(B, b0 + C3_ROUND_BLOCK);
                int64_t sums[C3_ROUND_BLOCK] = {0};
                for (ptrdiff_t r0 = 0; r0 < rounds; r0 += C3_TRANSPOSE_ROUNDS) {
                    const ptrdiff_t r1 = std::min<ptrdiff_t>(rounds, r0 + C3_TRANSPOSE_ROUNDS);
                    for (ptrdiff_t b = b0; b < b1; b++) {
                        const int64_t *__restrict row = from + b * rounds;
                        int64_t sum = 0;
                        for (ptrdiff_t r = r0; r < r1; r++) {
                            signs |= row[r];
                            sum += row[r];
                            to[r * B + b] = (T)row[r];
                        }
                        sums[b - b0] += sum;
                    }
                }
                for (ptrdiff_t b = b0; b < b1; b++) largest = std::max(largest, sums[b - b0]);
            }
            most[k] = largest;
            at.push_back(to);
        }
        return signs >= 0;
    }

    /* A bound on the running weights and on the counts of values short of a rank: a series' running
       weight is at most its total, the sum over rounds of the round's draws times the series' values
       in that round, so at most the draw's largest row sum (`most`) times `repeats`, the most values
       any of its series has in one round (1 for a capture: one repetition of each phase per round);
       and a count is at most `longest`, its longest series. Series of 2500 rounds then sum in int16. */
    static int64_t c3_round_weight_bound(const int64_t *most, const ptrdiff_t *longest, const ptrdiff_t *repeats,
                                         ptrdiff_t draws) {
        int64_t bound = 0;
        for (ptrdiff_t k = 0; k < draws; k++) {
            if (repeats[k] && most[k] > ((int64_t)1 << 31) / repeats[k])   /* past int32: said without the product */
                return (int64_t)1 << 31;
            bound = std::max<int64_t>(bound, std::max<int64_t>(most[k] * repeats[k], longest[k]));
        }
        return bound;
    }

    /* round_median_rows' work: 0; C3_ROUND_NEGATIVE (a negative count) or C3_ROUND_WIDE (a running
       weight could reach 2^31) with nothing written; -1 where memory ran out. The integers are int8
       where no running weight and no count can reach 2^7 (a report's every series of 25 rounds),
       int16 below 2^15, else int32: tables transposed in int8 first, as the bound is known only once
       the counts are read, and again wider where it is too wide. (With the single gather of one
       middle rank and the insertion sort of c3_round_chunk_of, series of 25 rounds went from 12.5-13.1
       to 9.6-10.6 us each: 64 scenarios x 28 series x 2000 replicates, one thread, the two builds
       alternating in one process, dev VM.) */
    #define C3_ROUND_NEGATIVE 1
    #define C3_ROUND_WIDE 2
    static int c3_round_medians(const double *values, const ptrdiff_t *cols, const ptrdiff_t *starts,
                                const ptrdiff_t *which, ptrdiff_t S, const int64_t *const *counts, const ptrdiff_t *R,
                                const ptrdiff_t *longest, const ptrdiff_t *repeats, ptrdiff_t draws, ptrdiff_t B,
                                double *out, double *medians, int threads) {
        c3_round_job job;
        std::vector<int8_t> ct8;
        std::vector<int16_t> ct16;
        std::vector<int32_t> ct32;
        std::vector<const void *> at;
        c3_chunk_fn chunk = c3_round_chunk8;
        try {
            std::vector<int64_t> most(draws);
            if (!c3_transpose_counts<int8_t>(counts, R, draws, B, ct8, at, most.data()))
                return C3_ROUND_NEGATIVE;
            const int64_t bound = c3_round_weight_bound(most.data(), longest, repeats, draws);
            if (bound >= ((int64_t)1 << 31))
                return C3_ROUND_WIDE;
            if (bound >= ((int64_t)1 << 15)) {
                chunk = c3_round_chunk32;
                std::vector<int8_t>().swap(ct8);
                c3_transpose_counts<int32_t>(counts, R, draws, B, ct32, at, most.data());
            } else if (bound >= ((int64_t)1 << 7)) {
                chunk = c3_round_chunk16;
                std::vector<int8_t>().swap(ct8);
                c3_transpose_counts<int16_t>(counts, R, draws, B, ct16, at, most.data());
            }
        } catch (...) {
            return -1;
        }
        job.values = values; job.cols = cols; job.starts = starts; job.which = which; job.ct = at.data();
        job.R = R; job.B = B; job.out = out; job.medians = medians; job.failed = 0;
        c3_run_chunks(chunk, &job, S, threads);
        return job.failed ? -1 : 0;
    }

    /* c3_round_medians over draws that come transposed already, as int8 (R, B) tables of one-visit
       draws (keyed_round_tables): every replicate drew R rounds, so each table's largest row sum
       is R, and the bound is known without reading the counts. C3_ROUND_WIDE where it reaches 2^7
       (a series with several values per round, or of 128 values or more): the caller passes
       int64 counts instead. */
    static int c3_round_medians_int8(const double *values, const ptrdiff_t *cols, const ptrdiff_t *starts,
                                     const ptrdiff_t *which, ptrdiff_t S, const int8_t *const *tables,
                                     const ptrdiff_t *R, const ptrdiff_t *longest, const ptrdiff_t *repeats,
                                     ptrdiff_t draws, ptrdiff_t B, double *out, double *medians, int threads) {
        std::vector<int64_t> most(R, R + draws);
        if (c3_round_weight_bound(most.data(), longest, repeats, draws) >= ((int64_t)1 << 7))
            return C3_ROUND_WIDE;
        c3_round_job job;
        job.values = values; job.cols = cols; job.starts = starts; job.which = which;
        job.ct = (const void *const *)tables;
        job.R = R; job.B = B; job.out = out; job.medians = medians; job.failed = 0;
        c3_run_chunks(c3_round_chunk8, &job, S, threads);
        return job.failed ? -1 : 0;
    }

    /* Use the AVX2 bodies (if the CPU has them) or not; returns whether they are in use. */
    static int c3_simd_use(int on) {
        c3_simd_avx2 = on && c3_simd_supported;
        return c3_simd_avx2;
    }
    """
    ctypedef struct c3_pcg64:
        pass
    ctypedef struct c3_bitgen:
        pass
    void c3_pcg64_seed(c3_pcg64 *rng, uint32_t seed, uint32_t digest) nogil
    double c3_pcg64_double(c3_pcg64 *rng) nogil
    void c3_seed_sequence(uint32_t w0, uint32_t w1, uint64_t out[4]) nogil
    uint32_t c3_bounded(c3_bitgen *r, uint32_t rng) nogil
    void c3_bitgen_seed(c3_bitgen *r, uint32_t seed, uint32_t digest) nogil
    void c3_bitgen_set(c3_bitgen *r, uint64_t state_hi, uint64_t state_lo, uint64_t inc_hi, uint64_t inc_lo,
                       int has_uint32, uint32_t uinteger) nogil
    void c3_bitgen_get(const c3_bitgen *r, uint64_t words[4], int *has_uint32, uint32_t *uinteger) nogil
    double c3_pairwise_sum(const double *a, Py_ssize_t n) nogil
    void c3_hierarchical_sums(const float *reps, const uint8_t *included, Py_ssize_t S, Py_ssize_t B,
                              c3_bitgen *units, c3_bitgen *draws, double *sums, int64_t *counts,
                              double *row) nogil
    void c3_tabled_draws(const double *xs, Py_ssize_t n, Py_ssize_t rows, Py_ssize_t reps, uint32_t seed,
                         const uint32_t *digests, const double *keep, const Py_ssize_t *alias,
                         double *values, Py_ssize_t *ranks, Py_ssize_t extra, double *more) nogil
    Py_ssize_t c3_fill_row(int op, const double *a, const double *b, const double *c, const double *d,
                           Py_ssize_t size, double *row) nogil
    void c3_finite_spread(const double *row, Py_ssize_t size, int *finite, int *spread) nogil
    void c3_split_tails(const double *row, Py_ssize_t size, double t_low, double t_high, double *bottom,
                        Py_ssize_t *n_low, double *top, Py_ssize_t *n_high) nogil
    void c3_simd_init() nogil
    ctypedef void (*c3_chunk_fn)(void *ctx, Py_ssize_t lo, Py_ssize_t hi) noexcept nogil
    void c3_run_chunks(c3_chunk_fn fn, void *ctx, Py_ssize_t n, int threads) nogil
    int c3_hierarchical_sums_threads(const float *reps, const uint8_t *included, Py_ssize_t S, Py_ssize_t B,
                                     c3_bitgen *gen, double *sums, int64_t *counts, int threads) nogil
    void c3_tabled_draws_threads(const double *xs, Py_ssize_t n, Py_ssize_t rows, Py_ssize_t reps, uint32_t seed,
                                 const uint32_t *digests, const double *keep, const Py_ssize_t *alias,
                                 double *values, Py_ssize_t *ranks, Py_ssize_t extra, double *more, int threads) nogil
    void c3_select(double *a, Py_ssize_t n, Py_ssize_t k) nogil
    int c3_even_medians(const double *xs, Py_ssize_t n, Py_ssize_t rows, const Py_ssize_t *j1, const double *u2,
                        const double *same, Py_ssize_t B, double *out, int threads) nogil
    int c3_simd_use(int on) nogil
    int c3_round_medians(const double *values, const Py_ssize_t *cols, const Py_ssize_t *starts,
                         const Py_ssize_t *which, Py_ssize_t S, const int64_t *const *counts, const Py_ssize_t *R,
                         const Py_ssize_t *longest, const Py_ssize_t *repeats, Py_ssize_t draws, Py_ssize_t B,
                         double *out, double *medians, int threads) nogil
    int c3_round_medians_int8(const double *values, const Py_ssize_t *cols, const Py_ssize_t *starts,
                              const Py_ssize_t *which, Py_ssize_t S, const int8_t *const *tables, const Py_ssize_t *R,
                              const Py_ssize_t *longest, const Py_ssize_t *repeats, Py_ssize_t draws, Py_ssize_t B,
                              double *out, double *medians, int threads) nogil
    enum: C3_ROUND_NEGATIVE
    enum: C3_ROUND_WIDE


c3_simd_init()  # once, at import: whether the CPU has AVX2, and the split's permutation table


def select(double[::1] values, Py_ssize_t k):
    """Place the k-th smallest of ``values`` (finite) at ``values[k]``, none larger before it and none
    smaller after it (np.partition's contract), in place: the selection the intervals use (for the tests)."""
    if not 0 <= k < values.shape[0]:
        raise ValueError("select: k outside the array")
    with nogil:
        c3_select(&values[0], values.shape[0], k)


def use_avx2(bint on):
    """Whether the interval rows' passes use their AVX2 bodies (when the CPU has AVX2) or the
    baseline ones: the same numbers either way (for the tests, which compare both). Returns
    whether the AVX2 bodies are in use after the call."""
    return bool(c3_simd_use(on))


def seed_sequence_words(uint32_t seed, uint32_t digest):
    """SeedSequence([seed, digest]).generate_state(4, uint64), as a list (for the tests)."""
    cdef uint64_t out[4]
    c3_seed_sequence(seed, digest, out)
    return [out[0], out[1], out[2], out[3]]


def keyed_uniforms(uint32_t seed, const uint32_t[::1] digests, double[:, ::1] out):
    """Row i of ``out``: the first uniforms of ``np.random.Generator(PCG64([seed, digests[i]]))``
    (what ``stats.rng_for(seed, *key_i).random(out.shape[1])`` gives)."""
    cdef Py_ssize_t i, b
    cdef c3_pcg64 rng
    if out.shape[0] != digests.shape[0]:
        raise ValueError("keyed_uniforms: one digest per row of out")
    with nogil:
        for i in range(out.shape[0]):
            c3_pcg64_seed(&rng, seed, digests[i])
            for b in range(out.shape[1]):
                out[i, b] = c3_pcg64_double(&rng)


# Threads the kernels share their work with (set_threads): their series and rows are independent,
# each written to its own outputs, so any number gives the same numbers.
cdef int _threads = 1
# Less work than this per thread is not worth starting one (a thread costs tens of microseconds):
# rows of estimate_rows, series of the tabled draws (2000 draws each, about 5 us).
cdef Py_ssize_t _ROWS_PER_THREAD = 256
cdef Py_ssize_t _SERIES_PER_THREAD = 16
cdef Py_ssize_t _PAIRED_SERIES_PER_THREAD = 64  # round_median_rows: a series of 25 values takes about 15 us
cdef Py_ssize_t _REPLICATES_PER_THREAD = 64   # hierarchical_sums: replicates of S gathers each
# keyed_round_counts: a thread per 200 rounds drawn (8 scenarios of 25 rounds, 2000 x 25 draws each
# about 0.2 ms; counted in rounds, so that a few scenarios of thousands of rounds get threads too).
cdef Py_ssize_t _ROUNDS_PER_THREAD = 200


def set_threads(int n):
    """How many threads the kernels may use (at least 1): the same numbers for any."""
    global _threads
    _threads = max(1, n)


cdef int _threads_for(Py_ssize_t items, Py_ssize_t per_thread) noexcept:
    return <int>max(1, min(<Py_ssize_t>_threads, items // per_thread))


def odd_tabled_medians(const double[:, ::1] xs, uint32_t seed, const uint32_t[::1] digests,
                       const double[::1] keep, const Py_ssize_t[::1] alias, double[:, ::1] out):
    """stats.tabled_medians_from_uniforms for odd n, each row's uniforms from its keyed generator:
    out[i, b] = xs[i, J1 - 1] (the resample median is one order statistic)."""
    cdef Py_ssize_t rows = xs.shape[0], n = xs.shape[1]
    _check_shapes(rows, n, digests.shape[0], keep.shape[0], alias.shape[0], out.shape[0])
    if rows == 0 or out.shape[1] == 0:
        return
    cdef int threads = _threads_for(rows, _SERIES_PER_THREAD)
    with nogil:
        c3_tabled_draws_threads(&xs[0, 0], n, rows, out.shape[1], seed, &digests[0], &keep[0], &alias[0],
                                &out[0, 0], NULL, 0, NULL, threads)


def tabled_ranks(Py_ssize_t n, uint32_t seed, const uint32_t[::1] digests, const double[::1] keep,
                 const Py_ssize_t[::1] alias, Py_ssize_t[:, ::1] j1, double[:, :, ::1] u2):
    """For even n: J1 - 1 of each replicate (``j1``, (S, B)) and the two further uniforms per
    replicate (``u2``, (S, 2, B)) that stats.medians_from_ranks turns into J2, in the generator's
    order (stats._rank_uniforms)."""
    cdef Py_ssize_t rows = j1.shape[0], reps = j1.shape[1]
    _check_shapes(rows, n, digests.shape[0], keep.shape[0], alias.shape[0], u2.shape[0])
    if u2.shape[1] != 2 or u2.shape[2] != reps:
        raise ValueError("tabled_ranks: u2 must be (S, 2, B)")
    if rows == 0 or reps == 0:
        return
    cdef int threads = _threads_for(rows, _SERIES_PER_THREAD)
    with nogil:
        c3_tabled_draws_threads(NULL, n, rows, reps, seed, &digests[0], &keep[0], &alias[0], NULL, &j1[0, 0],
                                2 * reps, &u2[0, 0, 0], threads)


def even_medians(const double[:, ::1] xs, const Py_ssize_t[:, ::1] j1, const double[:, :, ::1] u2,
                 const double[::1] same, double[:, ::1] out):
    """stats.medians_from_ranks for even n (the same values): ``out[i, b]``, the median replicate of
    the sorted row ``xs[i]`` from J1 - 1 (``j1``, (S, B)), the two further uniforms (``u2``,
    (S, 2, B), from tabled_ranks) and P(J2 = J1 | J1) (``same``, n). numpy's version makes a dozen
    (S, B) temporaries: for 64 scenarios' series of an even length that was 0.13-0.24 s a call."""
    cdef Py_ssize_t rows = xs.shape[0], n = xs.shape[1], reps = j1.shape[1]
    if n < 2 or n % 2 or same.shape[0] != n:
        raise ValueError("even_medians: rows of an even length of 2 or more, and P(J2 = J1) for each rank")
    if j1.shape[0] != rows or out.shape[0] != rows or out.shape[1] != reps or u2.shape[0] != rows \
            or u2.shape[1] != 2 or u2.shape[2] != reps:
        raise ValueError("even_medians: j1 and out (S, B), u2 (S, 2, B) for S rows")
    if rows == 0 or reps == 0:
        return
    cdef int threads = _threads_for(rows, _SERIES_PER_THREAD), status
    with nogil:
        status = c3_even_medians(&xs[0, 0], n, rows, &j1[0, 0], &u2[0, 0, 0], &same[0], reps, &out[0, 0], threads)
    if status:   # the ranks index the rows: the loop stops at one out of range instead of reading elsewhere
        raise ValueError(f"even_medians: a rank outside 0..{n - 1}")


cdef _check_shapes(Py_ssize_t rows, Py_ssize_t n, Py_ssize_t n_digests, Py_ssize_t n_keep,
                   Py_ssize_t n_alias, Py_ssize_t out_rows):
    if n_digests != rows or out_rows != rows:
        raise ValueError("one digest and one output row per series")
    if n < 1 or n_keep != n or n_alias != n:
        raise ValueError("the alias table must have one entry per repetition")


# ------------------------------------------------------------------------------------------------
# Percentile intervals
# ------------------------------------------------------------------------------------------------

# Row status codes of percentile_pairs (the Python names below are the same values).
cdef enum:
    ROW_OK = 0
    ROW_NOT_FINITE = 1
    ROW_NO_SPREAD = 2

OK, NOT_FINITE, NO_SPREAD = ROW_OK, ROW_NOT_FINITE, ROW_NO_SPREAD


def percentile_pairs(list rows, double p_lo, double p_hi, double[::1] low, double[::1] high,
                     int8_t[::1] status, int64_t[::1] bad):
    """The interval of every replicate row (1-D float64 arrays of one length B): the linearly
    interpolated quantiles at positions ``p_lo`` < ``p_hi`` (q * (B - 1), as np.quantile), with
    floor(p_lo) + 1 < floor(p_hi) < B - 1. ``status[i]``: OK, NOT_FINITE (``bad[i]`` values are NaN
    or infinite) or NO_SPREAD (all values equal)."""
    cdef Py_ssize_t i, n_rows = len(rows)
    cdef const double[::1] row
    cdef Py_ssize_t lo = <Py_ssize_t>p_lo, hi = <Py_ssize_t>p_hi, size = -1
    cdef vector[double] work
    if not (low.shape[0] == high.shape[0] == status.shape[0] == bad.shape[0] == n_rows):
        raise ValueError("percentile_pairs: one output per row")
    for i in range(n_rows):
        row = rows[i]
        if size < 0:
            size = row.shape[0]
            if not (0 <= lo and lo + 1 < hi and hi + 1 < size):
                raise ValueError("percentile_pairs: positions outside the fast case")
            work.resize(2 * size + 2)
        elif row.shape[0] != size:
            raise ValueError("percentile_pairs: rows of different lengths")
        with nogil:
            status[i] = _row_interval(&row[0], size, p_lo, p_hi, lo, hi, work.data(), &low[i], &high[i], &bad[i])


cdef int8_t _row_interval(const double *row, Py_ssize_t size, double p_lo, double p_hi, Py_ssize_t lo,
                          Py_ssize_t hi, double *work, double *low, double *high, int64_t *bad) noexcept nogil:
    """The interval of one row (the docstring of percentile_pairs), in two passes over it.

    The interval's ranks sit in the tails (50 and 1950 of 2000), so rather than partition the whole
    row, every value at or below a low threshold goes to one buffer and every value at or above a
    high one to another, and each buffer is partitioned alone. With T values <= t, the k + 1
    smallest of the row are all among them when T > k: the buffer's order statistic k is the row's
    (and likewise from the top). The thresholds are order statistics of a strided sample, chosen so
    the buffers hold a few times the tails; if one falls short (an unlucky sample), the whole row
    is partitioned instead. ``work`` holds 2 * size + 2 values: the two buffers cannot overflow,
    so they are filled without branches (c3_split_tails). A first, vectorized pass
    (c3_finite_spread) finds the rows without an interval: a NaN or infinity, or no spread."""
    cdef Py_ssize_t n_low = 0, n_high = 0
    cdef double t_low, t_high
    cdef double *bottom = work
    cdef double *top = work + size + 1
    cdef int finite, spread
    c3_finite_spread(row, size, &finite, &spread)
    if not finite:
        return _not_finite(row, size, bad)
    bad[0] = 0
    if not spread:
        return ROW_NO_SPREAD
    _sample_thresholds(row, size, lo + 2, size - hi, &t_low, &t_high)
    c3_split_tails(row, size, t_low, t_high, bottom, &n_low, top, &n_high)
    cdef Py_ssize_t j
    cdef double r_lo, r_lo1, r_hi, r_hi1
    if n_low < lo + 2 or n_high < size - hi:
        _whole_row_ranks(row, size, lo, hi, work, &r_lo, &r_lo1, &r_hi, &r_hi1)
    else:
        c3_select(bottom, n_low, lo)
        r_lo = bottom[lo]
        r_lo1 = _smallest(bottom + lo + 1, n_low - lo - 1)  # what c3_select left above rank lo
        # The top buffer holds the row's n_high largest: the row's rank hi is its rank hi - (size - n_high).
        j = hi - (size - n_high)
        c3_select(top, n_high, j)
        r_hi = top[j]
        r_hi1 = _smallest(top + j + 1, n_high - j - 1)
    # stats._linear_quantiles_rows: ranks[lo] + (p - lo) * (ranks[lo + 1] - ranks[lo])
    low[0] = r_lo + (p_lo - <double>lo) * (r_lo1 - r_lo)
    high[0] = r_hi + (p_hi - <double>hi) * (r_hi1 - r_hi)
    return ROW_OK


cdef int8_t _not_finite(const double *row, Py_ssize_t size, int64_t *bad) noexcept nogil:
    cdef Py_ssize_t j
    bad[0] = 0
    for j in range(size):
        bad[0] += not isfinite(row[j])
    return ROW_NOT_FINITE


cdef bint _sample_thresholds(const double *row, Py_ssize_t size, Py_ssize_t need_low, Py_ssize_t need_high,
                             double *t_low, double *t_high) noexcept nogil:
    """Thresholds with, in expectation, about twice ``need_low`` values of the row at or below
    ``t_low`` (``need_high`` at or above ``t_high``), from a strided sample of up to 128 values;
    False if the sample holds a NaN or an infinity (the row has no interval then)."""
    cdef Py_ssize_t j = 0, n_sample = 0, step = size // 64 if size >= 128 else 1
    cdef double sample[128]
    while j < size and n_sample < 128:
        if not isfinite(row[j]):
            return False
        sample[n_sample] = row[j]
        n_sample += 1
        j += step
    cdef Py_ssize_t k_low = min(n_sample - 1, (2 * need_low * n_sample) // size + 2)
    cdef Py_ssize_t k_high = max(<Py_ssize_t>0, n_sample - 1 - ((2 * need_high * n_sample) // size + 2))
    c3_select(sample, n_sample, k_low)
    t_low[0] = sample[k_low]
    c3_select(sample, n_sample, k_high)
    t_high[0] = sample[k_high]
    return True


cdef void _whole_row_ranks(const double *row, Py_ssize_t size, Py_ssize_t lo, Py_ssize_t hi, double *work,
                           double *r_lo, double *r_lo1, double *r_hi, double *r_hi1) noexcept nogil:
    cdef Py_ssize_t j
    for j in range(size):
        work[j] = row[j]
    c3_select(work, size, lo)
    r_lo[0] = work[lo]
    c3_select(work + lo + 1, size - lo - 1, hi - lo - 1)
    r_hi[0] = work[hi]
    r_lo1[0] = _smallest(work + lo + 1, hi - lo)    # ranks lo + 1 .. hi - 1 lie there, hi above
    r_hi1[0] = _smallest(work + hi + 1, size - hi - 1)


cdef inline double _smallest(const double *values, Py_ssize_t count) noexcept nogil:
    cdef Py_ssize_t j
    cdef double best = values[0]
    for j in range(1, count):
        if values[j] < best:
            best = values[j]
    return best


# ------------------------------------------------------------------------------------------------
# Round-paired medians
# ------------------------------------------------------------------------------------------------

def round_counts(const int64_t[:, ::1] picks, int64_t[:, ::1] counts):
    """counts[b, r] = how many times row b of ``picks`` (B, n) holds r: stats.draw_round_counts'
    multiplicities (numpy's np.add.at formulation), ``counts`` (B, R) zeroed here."""
    cdef Py_ssize_t B = picks.shape[0], n = picks.shape[1], R = counts.shape[1], b, j
    cdef int64_t r
    if counts.shape[0] != B:
        raise ValueError("round_counts: one row of counts per row of picks")
    for b in range(B):
        for j in range(n):
            if not 0 <= picks[b, j] < R:
                raise ValueError("round_counts: a pick outside the columns")
    with nogil:
        for b in range(B):
            for j in range(R):
                counts[b, j] = 0
            for j in range(n):
                counts[b, picks[b, j]] += 1


cdef struct RoundCountsJob:
    uint32_t seed
    const uint32_t *digests
    int64_t **counts          # per scenario: its (B, R) counts, C order
    const Py_ssize_t *rounds  # per scenario: R
    Py_ssize_t B


cdef void _round_counts_chunk(void *ctx, Py_ssize_t first, Py_ssize_t last) noexcept nogil:
    """Scenarios first..last-1 of a RoundCountsJob: each from its own freshly seeded generator."""
    cdef RoundCountsJob *job = <RoundCountsJob *>ctx
    cdef c3_bitgen r
    cdef Py_ssize_t i, b, j, R
    cdef int64_t *row
    for i in range(first, last):
        R = job.rounds[i]
        c3_bitgen_seed(&r, job.seed, job.digests[i])
        for b in range(job.B):
            row = job.counts[i] + b * R
            for j in range(R):
                row[j] = 0
            for j in range(R):   # numpy's integers(0, R, (B, R)), drawn in C order
                row[c3_bounded(&r, <uint32_t>(R - 1))] += 1


def keyed_round_counts(uint32_t seed, const uint32_t[::1] digests, list counts):
    """stats.draw_round_counts of several scenarios at once: ``counts[i]`` ((B, R_i) int64, B shared)
    gets the multiplicities of ``integers(0, R_i, size=(B, R_i))`` drawn from
    ``np.random.Generator(PCG64([seed, digests[i]]))`` (stats.rng_for). Scenarios are shared by
    set_threads() threads; each has its own generator, so the counts are the same for any number."""
    cdef Py_ssize_t i, n = len(counts), B = -1
    cdef int64_t[:, ::1] view
    cdef vector[int64_t *] at
    cdef vector[Py_ssize_t] rounds
    cdef Py_ssize_t total = 0
    if digests.shape[0] != n:
        raise ValueError("keyed_round_counts: one digest per scenario")
    views = []  # keeps every buffer acquired while the pointers are used
    for i in range(n):
        view = counts[i]
        if B < 0:
            B = view.shape[0]
        if view.shape[0] != B or not 1 <= view.shape[1] <= <Py_ssize_t>0xFFFFFFFF:
            raise ValueError("keyed_round_counts: counts of (B, R) with one B and 1 <= R < 2^32")
        views.append(view)
        at.push_back(&view[0, 0] if B > 0 else NULL)
        rounds.push_back(view.shape[1])
        total += view.shape[1]
    if n == 0 or B == 0:
        return
    cdef RoundCountsJob job = RoundCountsJob(seed=seed, digests=&digests[0], counts=at.data(), rounds=rounds.data(),
                                             B=B)
    cdef int threads = <int>min(<Py_ssize_t>_threads_for(total, _ROUNDS_PER_THREAD), n)
    with nogil:
        c3_run_chunks(_round_counts_chunk, &job, n, threads)



cdef struct RoundTablesJob:
    uint32_t seed
    const uint32_t *digests
    int8_t **tables           # per scenario: its (R, B) counts, C order (the counts transposed)
    const Py_ssize_t *rounds  # per scenario: R (at most MAX_TABLE_ROUNDS)
    Py_ssize_t B


cdef void _round_tables_chunk(void *ctx, Py_ssize_t first, Py_ssize_t last) noexcept nogil:
    """Scenarios first..last-1 of a RoundTablesJob: _round_counts_chunk's draws, counted into the
    transposed int8 table (a count is at most R < 2^7)."""
    cdef RoundTablesJob *job = <RoundTablesJob *>ctx
    cdef c3_bitgen r
    cdef Py_ssize_t i, b, j, R, B = job.B
    cdef int8_t *table
    for i in range(first, last):
        R = job.rounds[i]
        table = job.tables[i]
        memset(table, 0, R * B)
        c3_bitgen_seed(&r, job.seed, job.digests[i])
        for b in range(B):
            for j in range(R):   # the same draws, in the same order, as _round_counts_chunk
                table[<Py_ssize_t>c3_bounded(&r, <uint32_t>(R - 1)) * B + b] += 1


# The most rounds a table of keyed_round_tables may have: every count of it fits int8.
MAX_TABLE_ROUNDS = 127


def keyed_round_tables(uint32_t seed, const uint32_t[::1] digests, list tables):
    """keyed_round_counts transposed: ``tables[i]`` ((R_i, B) int8, B shared, R_i <= MAX_TABLE_ROUNDS)
    gets the counts keyed_round_counts gives ``counts[i]``, as ``counts[i].T``. What
    round_median_tables reads: a draw made in this layout is not transposed again, nor held in
    int64 (2000 x 25 x 8 bytes per scenario, in a large report about 1 GB written and read back)."""
    cdef Py_ssize_t i, n = len(tables), B = -1
    cdef int8_t[:, ::1] view
    cdef vector[int8_t *] at
    cdef vector[Py_ssize_t] rounds
    cdef Py_ssize_t total = 0
    if digests.shape[0] != n:
        raise ValueError("keyed_round_tables: one digest per scenario")
    views = []  # keeps every buffer acquired while the pointers are used
    for i in range(n):
        view = tables[i]
        if B < 0:
            B = view.shape[1]
        if view.shape[1] != B or not 1 <= view.shape[0] <= MAX_TABLE_ROUNDS:
            raise ValueError(f"keyed_round_tables: tables of (R, B) with one B and 1 <= R <= {MAX_TABLE_ROUNDS}")
        views.append(view)
        at.push_back(&view[0, 0] if B > 0 else NULL)
        rounds.push_back(view.shape[0])
        total += view.shape[0]
    if n == 0 or B == 0:
        return
    cdef RoundTablesJob job = RoundTablesJob(seed=seed, digests=&digests[0], tables=at.data(), rounds=rounds.data(),
                                             B=B)
    cdef int threads = <int>min(<Py_ssize_t>_threads_for(total, _ROUNDS_PER_THREAD), n)
    with nogil:
        c3_run_chunks(_round_tables_chunk, &job, n, threads)

def round_median_rows(const double[::1] values, const Py_ssize_t[::1] cols, const Py_ssize_t[::1] starts,
                      const Py_ssize_t[::1] which, list counts, double[:, ::1] out, double[::1] medians):
    """stats.round_resampled_medians of S series at once: series s is ``values[starts[s]:starts[s+1]]``
    (finite, in any order), weighted by the draw ``counts[which[s]]`` (int64, (B, R_k): one per
    scenario), ``cols`` the column that weights each value. Row s of ``out`` (S, B) gets its
    replicates, ``medians[s]`` its median (stats.sorted_median). Returns True; False, with nothing
    written, where a running weight could reach 2^31 (the kernel's int32 sums): the caller's numpy
    code computes those. (The bound is taken from the draws' row sums while they are transposed:
    c3_transpose_counts reads each count once.)"""
    cdef _RoundSeries series = _RoundSeries(values, cols, starts, which, out, medians)
    cdef vector[const int64_t *] tables
    cdef const int64_t[:, ::1] table
    views = []   # keeps every buffer acquired while the pointers are used
    for table in counts:
        if table.shape[0] != series.B:
            raise ValueError("round_median_rows: every draw needs B rows")
        views.append(table)
        tables.push_back(&table[0, 0] if table.shape[1] else NULL)
        series.widths.push_back(table.shape[1])
    if series.S == 0:
        return True
    series.check(values, cols, starts, which)
    cdef int threads = _threads_for(series.S, _PAIRED_SERIES_PER_THREAD)
    cdef int status
    with nogil:
        status = c3_round_medians(&values[0], &cols[0], &starts[0], &which[0], series.S, tables.data(),
                                  series.widths.data(), series.longest.data(), series.repeats.data(),
                                  series.widths.size(), series.B, &out[0, 0], &medians[0], threads)
    return _round_status(status)


def round_median_tables(const double[::1] values, const Py_ssize_t[::1] cols, const Py_ssize_t[::1] starts,
                        const Py_ssize_t[::1] which, list tables, double[:, ::1] out, double[::1] medians):
    """round_median_rows over draws from keyed_round_tables (int8, (R_k, B): the counts transposed):
    the same replicates and medians, without transposing or reading the draws first (every
    replicate drew R_k rounds, which bounds the running weights). False, with nothing written, where
    int8 could not hold a running weight (a series with several values in a round, or of 128 or
    more): the caller passes the counts in int64 to round_median_rows then."""
    cdef _RoundSeries series = _RoundSeries(values, cols, starts, which, out, medians)
    cdef vector[const int8_t *] at
    cdef const int8_t[:, ::1] table
    views = []
    for table in tables:
        if table.shape[1] != series.B:
            raise ValueError("round_median_tables: every draw needs B columns")
        views.append(table)
        at.push_back(&table[0, 0] if table.shape[0] else NULL)
        series.widths.push_back(table.shape[0])
    if series.S == 0:
        return True
    series.check(values, cols, starts, which)
    cdef int threads = _threads_for(series.S, _PAIRED_SERIES_PER_THREAD)
    cdef int status
    with nogil:
        status = c3_round_medians_int8(&values[0], &cols[0], &starts[0], &which[0], series.S, at.data(),
                                       series.widths.data(), series.longest.data(), series.repeats.data(),
                                       series.widths.size(), series.B, &out[0, 0], &medians[0], threads)
    return _round_status(status)


cdef class _RoundSeries:
    """The series of a round_median_rows / round_median_tables call, checked against their draws:
    each draw's width (its rounds), and per draw its longest series and the most values any of its
    series has in one round (the bound on the running weights)."""

    cdef Py_ssize_t S, B
    cdef vector[Py_ssize_t] widths, longest, repeats

    def __cinit__(self, const double[::1] values, const Py_ssize_t[::1] cols, const Py_ssize_t[::1] starts,
                  const Py_ssize_t[::1] which, double[:, ::1] out, double[::1] medians):
        self.S, self.B = starts.shape[0] - 1, out.shape[1]
        if self.S < 0 or out.shape[0] != self.S or medians.shape[0] != self.S \
                or which.shape[0] != max(self.S, 0) or cols.shape[0] != values.shape[0]:
            raise ValueError("round_median_rows: one start per series and a last one, a draw per series, an (S, B) "
                             "out, one column per value")
        if self.S > 0 and (starts[0] != 0 or starts[self.S] != values.shape[0]):
            raise ValueError("round_median_rows: the starts must cover the values")

    cdef check(self, const double[::1] values, const Py_ssize_t[::1] cols, const Py_ssize_t[::1] starts,
               const Py_ssize_t[::1] which):
        cdef Py_ssize_t draws = self.widths.size(), s, i, col, k, widest = 0
        cdef vector[Py_ssize_t] seen_in, times   # per column: the last series with a value in it, and how many
        for k in range(draws):
            widest = max(widest, self.widths[k])
        self.longest.assign(draws, 0)
        self.repeats.assign(draws, 0)
        seen_in.assign(widest, -1)
        times.assign(widest, 0)
        for s in range(self.S):
            if starts[s + 1] <= starts[s]:
                raise ValueError("round_median_rows: every series needs a value")
            k = which[s]
            if not 0 <= k < draws:
                raise ValueError("round_median_rows: a series names no draw")
            self.longest[k] = max(self.longest[k], starts[s + 1] - starts[s])
            for i in range(starts[s], starts[s + 1]):
                col = cols[i]
                if not 0 <= col < self.widths[k]:
                    raise ValueError("round_median_rows: a column outside its draw")
                if not isfinite(values[i]):
                    raise ValueError("round_median_rows: values must be finite")
                if seen_in[col] != s:
                    seen_in[col], times[col] = s, 0
                times[col] += 1
                self.repeats[k] = max(self.repeats[k], times[col])


cdef bint _round_status(int status) except -1:
    if status == C3_ROUND_NEGATIVE:
        raise ValueError("round_median_rows: negative counts")
    if status == C3_ROUND_WIDE:
        return False
    if status:
        raise MemoryError("round_median_rows: no memory for a series' scratch")
    return True


# ------------------------------------------------------------------------------------------------
# The strategy summary's hierarchical bootstrap
# ------------------------------------------------------------------------------------------------

_MASK64 = (1 << 64) - 1


cdef c3_bitgen _bitgen_from(dict state):
    """A PCG64 bit generator's ``.state`` dict as the C struct."""
    cdef c3_bitgen r
    pcg = state["state"]
    c3_bitgen_set(&r, (pcg["state"] >> 64) & _MASK64, pcg["state"] & _MASK64, (pcg["inc"] >> 64) & _MASK64,
                  pcg["inc"] & _MASK64, int(state["has_uint32"]), int(state["uinteger"]))
    return r


cdef dict _bitgen_state(const c3_bitgen *r):
    cdef uint64_t words[4]
    cdef int has_uint32
    cdef uint32_t uinteger
    c3_bitgen_get(r, words, &has_uint32, &uinteger)
    return {"bit_generator": "PCG64",
            "state": {"state": (int(words[0]) << 64) | words[1], "inc": (int(words[2]) << 64) | words[3]},
            "has_uint32": has_uint32, "uinteger": uinteger}


def bounded_integers(dict state, uint32_t high, int64_t[::1] out):
    """``Generator.integers(0, high, size=out.size)`` of a PCG64 generator whose bit generator's
    ``.state`` is ``state``, into ``out``; returns the state after (for the tests)."""
    cdef c3_bitgen r = _bitgen_from(state)
    cdef Py_ssize_t i
    if high < 1:
        raise ValueError("bounded_integers: high must be at least 1")
    with nogil:
        for i in range(out.shape[0]):
            out[i] = c3_bounded(&r, high - 1)
    return _bitgen_state(&r)


def pairwise_sum(const double[::1] values):
    """np.sum of a contiguous float64 array, in numpy's pairwise order (for the tests)."""
    return 0.0 + c3_pairwise_sum(&values[0], values.shape[0]) if values.shape[0] else 0.0


def hierarchical_sums(const float[:, ::1] reps, const uint8_t[:, ::1] included, dict state,
                      double[::1] sums, int64_t[::1] counts):
    """The outer replicates of stats.hierarchical_mean_ci before the division: per replicate b, the
    sum of the drawn included values (``sums[b]``) and how many were included (``counts[b]``).

    ``reps`` (S, B) float32, ``included`` (S, B) of 0/1 or None (all included); ``state``: the
    ``.state`` of the PCG64 generator numpy would draw ``integers(0, S, (B, S))`` then
    ``integers(0, B, (B, S))`` from. Returns that generator's state after both draws."""
    cdef Py_ssize_t n_units = reps.shape[0], n_reps = reps.shape[1]
    if sums.shape[0] != n_reps or counts.shape[0] != n_reps:
        raise ValueError("hierarchical_sums: one sum and one count per replicate")
    if included is not None and (included.shape[0] != n_units or included.shape[1] != n_reps):
        raise ValueError("hierarchical_sums: included must have the shape of reps")
    if n_units < 1 or n_reps < 1 or n_units >= 1 << 32 or n_reps >= 1 << 32:
        raise ValueError("hierarchical_sums: between 1 and 2^32 - 1 units and replicates")
    cdef c3_bitgen units = _bitgen_from(state)
    cdef c3_bitgen draws = units
    cdef Py_ssize_t i
    cdef vector[double] row
    cdef const uint8_t *keep = NULL
    cdef int threads = _threads_for(n_reps, _REPLICATES_PER_THREAD), ok
    if included is not None:
        keep = &included[0, 0]
    if threads > 1 and n_units * n_reps < (<Py_ssize_t>1 << 32):   # flat indices fit in 32 bits
        with nogil:
            ok = c3_hierarchical_sums_threads(&reps[0, 0], keep, n_units, n_reps, &units, &sums[0], &counts[0],
                                              threads)
        if not ok:
            raise MemoryError("hierarchical_sums: no memory for the draws' indices or a thread's scratch")
        return _bitgen_state(&units)
    row.resize(2 * n_units)  # S sums' terms, then S indices (c3_hierarchical_sums)
    with nogil:
        for i in range(n_units * n_reps):  # the draws' stream starts where all the units' ends
            c3_bounded(&draws, <uint32_t>(n_units - 1))
        c3_hierarchical_sums(&reps[0, 0], keep, n_units, n_reps, &units, &draws, &sums[0], &counts[0],
                             row.data())
    return _bitgen_state(&draws)


def fixed_sums(const float[:, ::1] reps, const uint8_t[:, ::1] included, double[::1] sums, int64_t[::1] counts):
    """stats.fixed_units_mean_ci's replicates before the division: ``sums[b]`` the sum over units of
    the included ``reps[s, b]`` in numpy's order along axis 0 (one unit after the other, from 0.0,
    an excluded unit adding 0.0), ``counts[b]`` how many units were included."""
    cdef Py_ssize_t n_units = reps.shape[0], n_reps = reps.shape[1], s, b
    if sums.shape[0] != n_reps or counts.shape[0] != n_reps:
        raise ValueError("fixed_sums: one sum and one count per replicate")
    if included is not None and (included.shape[0] != n_units or included.shape[1] != n_reps):
        raise ValueError("fixed_sums: included must have the shape of reps")
    cdef bint all_in = included is None
    with nogil:
        for b in range(n_reps):
            sums[b] = 0.0
            counts[b] = 0
        for s in range(n_units):
            for b in range(n_reps):
                if all_in or included[s, b]:
                    sums[b] += <double>reps[s, b]
                    counts[b] += 1
                else:
                    sums[b] += 0.0


# ------------------------------------------------------------------------------------------------
# Ratios of median replicates and their intervals, in one pass (speedup.PendingCIs)
# ------------------------------------------------------------------------------------------------

# What a row is, from its series' replicates a, b, c, d (the formulas of speedup.py, operation for
# operation): a; a / b; the ideal speedup a / max(b, c); the fraction of ideal
# (a / d - 1) / (a / max(b, c) - 1). The Python names below are the same values.
cdef enum:
    ROW_SAME = 0
    ROW_RATIO = 1
    ROW_IDEAL = 2
    ROW_FRACTION = 3

SAME, RATIO, IDEAL, FRACTION = ROW_SAME, ROW_RATIO, ROW_IDEAL, ROW_FRACTION
_ARITY = (1, 2, 3, 4)


cdef struct RowsJob:
    const int8_t *ops
    const double **parts      # 4 per row: the row's series (NULL where its kind takes fewer)
    float **kept              # per row: where its values go as float32, or NULL
    Py_ssize_t size
    double p_lo
    double p_hi
    double *low
    double *high
    int8_t *status
    int64_t *bad
    int64_t *below
    bint failed               # a chunk could not get its scratch memory


cdef void _rows_chunk(void *ctx, Py_ssize_t first, Py_ssize_t last) noexcept nogil:
    """Rows first..last-1 of a RowsJob, with this chunk's own scratch (one row, the tail buffers)."""
    cdef RowsJob *job = <RowsJob *>ctx
    cdef Py_ssize_t i, k, size = job.size
    cdef Py_ssize_t lo = <Py_ssize_t>job.p_lo, hi = <Py_ssize_t>job.p_hi
    cdef double *row = <double *>malloc((3 * size + 2) * sizeof(double))
    cdef const double **p
    if row == NULL:
        job.failed = True
        return
    for i in range(first, last):
        p = job.parts + 4 * i
        job.below[i] = c3_fill_row(job.ops[i], p[0], p[1], p[2], p[3], size, row)
        if job.kept[i] != NULL:
            for k in range(size):
                job.kept[i][k] = <float>row[k]
        job.status[i] = _row_interval(row, size, job.p_lo, job.p_hi, lo, hi, row + size, &job.low[i],
                                      &job.high[i], &job.bad[i])
    free(row)


def estimate_rows(list series, const int8_t[::1] ops, const Py_ssize_t[:, ::1] args, double p_lo, double p_hi,
                  double[::1] low, double[::1] high, int8_t[::1] status, int64_t[::1] bad, int64_t[::1] below,
                  list kept):
    """The interval of each estimate's replicate row, computed from its series without storing it.

    ``series``: replicate arrays (1-D float64, one length B); estimate i is row ``ops[i]`` of
    ``series[args[i, 0..3]]`` (unused columns ignored). Intervals as percentile_pairs (its
    positions and outputs); ``below[i]``: ideal replicates at most 1 (fractions). ``kept[i]``: a
    float32 array of B to receive the row (``reps.astype(np.float32)``), or None. Everything is
    checked before any row is computed; the rows are then shared by up to set_threads() threads."""
    cdef Py_ssize_t i, k, n = ops.shape[0], size = -1
    cdef Py_ssize_t lo = <Py_ssize_t>p_lo, hi = <Py_ssize_t>p_hi
    cdef vector[const double *] data
    cdef vector[const double *] parts
    cdef vector[float *] kept_at
    cdef const double[::1] view
    cdef float[::1] out
    cdef RowsJob job
    if not (args.shape[0] == low.shape[0] == high.shape[0] == status.shape[0] == bad.shape[0] == below.shape[0]
            == len(kept) == n) or args.shape[1] != 4:
        raise ValueError("estimate_rows: one row of args and one output per estimate")
    views = []  # keeps every buffer acquired while the pointers are used
    for obj in series:
        view = obj
        if size < 0:
            size = view.shape[0]
        elif view.shape[0] != size:
            raise ValueError("estimate_rows: series of different lengths")
        views.append(view)
        data.push_back(&view[0])
    if n == 0:
        return
    if not (0 <= lo and lo + 1 < hi and hi + 1 < size):
        raise ValueError("estimate_rows: positions outside the fast case")
    parts.resize(4 * n)
    kept_at.resize(n)
    for i in range(n):
        if not 0 <= ops[i] <= ROW_FRACTION:
            raise ValueError(f"estimate_rows: unknown row kind {ops[i]}")
        for k in range(4):
            if k < _ARITY[ops[i]]:
                if not 0 <= args[i, k] < <Py_ssize_t>data.size():
                    raise ValueError("estimate_rows: series index out of range")
                parts[4 * i + k] = data[args[i, k]]
            else:
                parts[4 * i + k] = NULL
        kept_at[i] = NULL
        if kept[i] is not None:
            out = kept[i]
            if out.shape[0] != size:
                raise ValueError("estimate_rows: a kept array must hold B values")
            views.append(out)
            kept_at[i] = &out[0]
    job = RowsJob(ops=&ops[0], parts=parts.data(), kept=kept_at.data(), size=size, p_lo=p_lo, p_hi=p_hi,
                  low=&low[0], high=&high[0], status=&status[0], bad=&bad[0], below=&below[0], failed=False)
    cdef int threads = _threads_for(n, _ROWS_PER_THREAD)
    with nogil:
        c3_run_chunks(_rows_chunk, &job, n, threads)
    if job.failed:
        raise MemoryError("estimate_rows: no memory for a row's scratch")
