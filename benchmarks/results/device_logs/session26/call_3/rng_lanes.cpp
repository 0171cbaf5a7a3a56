// Session 26, call 3: whether PCG64 bounded draws (numpy integers, Lemire) run faster as several
// interleaved lanes of one stream (jump-ahead by K steps) or four independent streams, than one
// after the other. Build: g++ -O2 rng_lanes.cpp. Prints ns per draw.
#include <stdint.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <chrono>
#include <vector>
typedef unsigned __int128 c3_u128;
typedef struct { c3_u128 state; c3_u128 inc; } c3_pcg64;
#define C3_PCG_MULT ((((c3_u128)2549297995355413924ULL) << 64) + 4865540595714422341ULL)
static inline uint64_t c3_out(c3_u128 s) {
    uint64_t x = ((uint64_t)(s >> 64u)) ^ (uint64_t)s;
    unsigned rot = (unsigned)(s >> 122u);
    return (x >> rot) | (x << ((-rot) & 63u));
}
static inline uint64_t c3_pcg64_next64(c3_pcg64 *rng) {
    rng->state = rng->state * C3_PCG_MULT + rng->inc;
    return c3_out(rng->state);
}
typedef struct { c3_pcg64 g; int has_uint32; uint32_t uinteger; } c3_bitgen;
static inline uint32_t c3_next32(c3_bitgen *r) {
    if (r->has_uint32) { r->has_uint32 = 0; return r->uinteger; }
    uint64_t next = c3_pcg64_next64(&r->g);
    r->has_uint32 = 1;
    r->uinteger = (uint32_t)(next >> 32);
    return (uint32_t)(next & 0xffffffffu);
}
static inline uint32_t c3_bounded(c3_bitgen *r, uint32_t rng) {
    if (rng == 0) return 0;
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
/* state after `delta` more steps (pcg's jump-ahead: Brown, "Random number generation with arbitrary strides") */
static c3_u128 c3_lcg_advance(c3_u128 state, c3_u128 delta, c3_u128 mult, c3_u128 plus) {
    c3_u128 acc_mult = 1, acc_plus = 0;
    while (delta > 0) {
        if (delta & 1) { acc_mult *= mult; acc_plus = acc_plus * mult + plus; }
        plus = (mult + 1) * plus; mult *= mult; delta >>= 1;
    }
    return acc_mult * state + acc_plus;
}
#define BLOCK 1024   /* outputs per block: 2048 words */
/* n calls of c3_bounded(r, rng), each value handed to f in order; r left as they leave it. */
template <int LANES, class F>
static void c3_bounded_fill(c3_bitgen *r, uint32_t rng, ptrdiff_t n, F &&f) {
    if (n <= 0) return;
    if (rng == 0) { for (ptrdiff_t i = 0; i < n; i++) f(0u); return; }
    ptrdiff_t done = 0;
    while (done < n && r->has_uint32) { f(c3_bounded(r, rng)); done++; }   /* the buffered half word first */
    if (n - done < 4 * LANES) { for (; done < n; done++) f(c3_bounded(r, rng)); return; }
    const uint32_t rng_excl = rng + 1, threshold = (UINT32_MAX - rng) % rng_excl;
    const c3_u128 start = r->g.state, inc = r->g.inc;
    c3_u128 mult_k = 1, plus_k = 0;   /* K steps at once */
    for (int k = 0; k < LANES; k++) { plus_k = plus_k * C3_PCG_MULT + inc; mult_k *= C3_PCG_MULT; }
    c3_u128 s[LANES];
    c3_u128 cur = start;
    for (int k = 0; k < LANES; k++) { cur = cur * C3_PCG_MULT + inc; s[k] = cur; }   /* states of outputs 0..K-1 */
    uint32_t buf[2 * BLOCK];
    ptrdiff_t words = 0;   /* consumed */
    for (;;) {
        for (ptrdiff_t t = 0; t < BLOCK; t += LANES) {
            for (int k = 0; k < LANES; k++) {
                uint64_t x = c3_out(s[k]);
                s[k] = s[k] * mult_k + plus_k;
                uint64_t lo = (uint64_t)(uint32_t)x * rng_excl, hi = (x >> 32) * rng_excl;
                buf[2 * (t + k)] = (uint32_t)lo < threshold ? UINT32_MAX : (uint32_t)(lo >> 32);
                buf[2 * (t + k) + 1] = (uint32_t)hi < threshold ? UINT32_MAX : (uint32_t)(hi >> 32);
            }
        }
        for (ptrdiff_t i = 0; i < 2 * BLOCK; i++) {
            uint32_t v = buf[i];
            if (v != UINT32_MAX) {
                f(v);
                if (++done == n) { words += i + 1; goto finished; }
            }
        }
        words += 2 * BLOCK;
    }
finished:
    {
        c3_u128 outputs = (c3_u128)((words + 1) / 2);
        r->g.state = c3_lcg_advance(start, outputs, C3_PCG_MULT, inc);
        if (words & 1) { r->has_uint32 = 1; r->uinteger = (uint32_t)(c3_out(r->g.state) >> 32); }
        else r->has_uint32 = 0;
    }
}

/* four independent generators interleaved: each draws n bounded values (as keyed_round_counts' scenarios) */
static void four_streams(c3_bitgen *g, uint32_t rng, ptrdiff_t n, uint32_t *out) {
    for (ptrdiff_t j = 0; j < n; j++)
        for (int l = 0; l < 4; l++) out[l * n + j] = c3_bounded(&g[l], rng);
}
static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
int main() {
    c3_bitgen a;
    a.g.state = ((c3_u128)0x1234567890abcdefULL << 64) | 0xfedcba0987654321ULL; a.g.inc = ((c3_u128)0x1111 << 64) | 0x3333333333333335ULL;
    a.has_uint32 = 0; a.uinteger = 0;
    const ptrdiff_t N = 5000000;
    std::vector<uint32_t> x(N), y(N);
    for (ptrdiff_t j = 0; j < N; j++) { x[j] = 1; y[j] = 1; }
    for (int it = 0; it < 5; it++) {
        c3_bitgen b = a, c = a, d = a, e = a;
        double t0 = now();
        for (ptrdiff_t j = 0; j < N; j++) x[j] = c3_bounded(&b, 2499);
        double t1 = now();
        ptrdiff_t i = 0; c3_bounded_fill<4>(&c, 2499, N, [&](uint32_t v) { y[i++] = v; });
        double t2 = now();
        i = 0; c3_bounded_fill<8>(&d, 2499, N, [&](uint32_t v) { y[i++] = v; });
        double t3 = now();
        c3_bitgen g4[4] = {a, a, a, a};
        for (int l = 0; l < 4; l++) g4[l].g.inc += 2 * l;
        four_streams(g4, 2499, N / 4, y.data());
        double t4 = now();
        uint64_t sum = 0; for (ptrdiff_t j = 0; j < N; j++) sum += c3_bounded(&e, 2499);
        double t5 = now();
        printf("ns/draw: serial %.2f  lanes4 %.2f  lanes8 %.2f  4 streams %.2f  serial-sum-only %.2f  same %d (%llu)\n",
               (t1 - t0) / N * 1e9, (t2 - t1) / N * 1e9, (t3 - t2) / N * 1e9, (t4 - t3) / N * 1e9, (t5 - t4) / N * 1e9,
               b.g.state == d.g.state, (unsigned long long)(sum & 1));
    }
}
