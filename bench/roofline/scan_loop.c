// The forward scan kernel's inner loop in C, as a ceiling for the Rust kernel
// (tools/luminome-engine/src/nn/scan/kernels/avx512.rs, forward_chunk): the same instructions per
// state element (Δ·A·log2e, floor by vrndscaleps, t - floor t, a degree-5 Horner polynomial,
// vscalefps, Δx·B, the state's FMA, C·h added into the output), the same layout (x, Δ, y
// [B, L, E] row-major, B‖C [B, L, 2N], 16-channel chunks, 16 states), the benchmark's shapes
// (B 8, L 256, E 128, N 16), and no framework around it. The coefficients are rounded: the values
// are for timing, not accuracy. Mode 0 keeps the 16 states in registers, mode 1 in memory (as
// the Rust kernel's forward does); PREFETCH 1 adds the kernel's prefetches 8 positions ahead.
// Prints the median and best time of one forward over all rows and chunks, cycles per 16 state
// elements at the clock given (peak_fma.c's rate / 64 FLOPs a cycle), and the rate by the
// roofline's count (7 FLOPs per state element).
//
//   gcc -O2 -march=native -o scan_loop scan_loop.c -lm && ./scan_loop 300 1 1 4.06
//
// Other ways to compute the same loop, each chosen at compile time (-D...), to time them
// against the kernel's (results: bench/roofline/results/2026-11-29-scan-backward-in-place/):
//   EXP_TABLE         2^t as 2^(j/16) from a 16-entry table (vpermps) times a degree-3
//                     polynomial on [-1/32, 1/32], the exponent added as an integer;
//   EXP_INTEGER       the kernel's polynomial, the exponent added as an integer (vpslld +
//                     vpaddd) instead of vscalefps; t clamped to [-126, 127] (needed for the
//                     integer add to stay exact) unless EXP_NOCLAMP; the integer from vcvtps2dq,
//                     or from a magic-number add with EXP_MAGIC;
//   EXP_NOSCALE       no scaling at all (wrong values: the time of the rest, a bound);
//   TWO_ACCUMULATORS  (mode 1) y summed over even and odd states separately, then added.
// The values of EXP_TABLE and EXP_INTEGER are for timing (rounded coefficients), like the rest.
#include <immintrin.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define N 16
static const int B = 8, L = 256, E = 128;
static float *x, *dl, *bc, *y, *al;
static int mode, prefetch;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

#ifdef EXP_TABLE
// 2^(j/16), j = 0..15 (set in main).
static __m512 exp2_sixteenths;
// 2^t: t rounded to the nearest 1/16 by a magic-number add (1.5 * 2^23 / 16), the table's
// 2^(j/16) by vpermps (the index is in the sum's low bits), a degree-3 polynomial on
// r = t - t rounded, and the integer part added to the exponent field.
static inline __m512 exp2_table(__m512 t) {
    t = _mm512_max_ps(_mm512_set1_ps(-125.0f), t);
    const __m512 magic = _mm512_set1_ps(12582912.0f / 16.0f); // 1.5*2^23 / 16: ulp = 1/16
    __m512 s = _mm512_add_ps(t, magic);
    __m512 r = _mm512_sub_ps(t, _mm512_sub_ps(s, magic)); // in [-1/32, 1/32]
    __m512i si = _mm512_castps_si512(s);
    __m512 tv = _mm512_permutexvar_ps(si, exp2_sixteenths);
    __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(5.5e-2f), r, _mm512_set1_ps(2.4e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(6.9e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    __m512 q = _mm512_mul_ps(p, tv);
    __m512i k = _mm512_and_si512(_mm512_slli_epi32(si, 19), _mm512_set1_epi32(0xff800000));
    return _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(q), k));
}
#endif

static inline __m512 exp2v(__m512 t) {
#if defined(EXP_TABLE)
    return exp2_table(t);
#elif defined(EXP_INTEGER)
#ifndef EXP_NOCLAMP
    t = _mm512_min_ps(_mm512_set1_ps(127.0f), _mm512_max_ps(_mm512_set1_ps(-126.0f), t));
#endif
    __m512 fl = _mm512_roundscale_ps(t, 0x09);
#ifdef EXP_MAGIC
    __m512i k = _mm512_castps_si512(_mm512_add_ps(fl, _mm512_set1_ps(12582912.0f)));
#else
    __m512i k = _mm512_cvt_roundps_epi32(fl, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
#endif
    __m512 f = _mm512_sub_ps(t, fl);
    __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(1.3e-3f), f, _mm512_set1_ps(9.6e-3f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.5e-2f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.4e-1f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.9e-1f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
    return _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(p), _mm512_slli_epi32(k, 23)));
#else
    __m512 f = _mm512_sub_ps(t, _mm512_roundscale_ps(t, 0x09));
    __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(1.3e-3f), f, _mm512_set1_ps(9.6e-3f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.5e-2f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.4e-1f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.9e-1f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
#ifdef EXP_NOSCALE
    return p;
#endif
    return _mm512_scalef_ps(p, t);
#endif
}

__attribute__((noinline)) static void chunk(int row, int c0) {
    float hm[N * 16] __attribute__((aligned(64))) = {0};
    __m512 h[N];
    for (int j = 0; j < N; j++) h[j] = _mm512_setzero_ps();
    const __m512 d = _mm512_set1_ps(0.5f);
    const float *a = al + (c0 / 16) * N * 16;
    for (int t = 0; t < L; t++) {
        size_t at = ((size_t)row * L + t) * E + c0;
        if (prefetch && t + 8 < L) {
            _mm_prefetch((const char *)(x + at + 8 * E), _MM_HINT_T0);
            _mm_prefetch((const char *)(dl + at + 8 * E), _MM_HINT_T0);
            _mm_prefetch((const char *)(y + at + 8 * E), _MM_HINT_ET0);
        }
        __m512 xr = _mm512_loadu_ps(x + at), dr = _mm512_loadu_ps(dl + at);
        __m512 dvx = _mm512_mul_ps(dr, xr);
        const float *bt = bc + ((size_t)row * L + t) * 2 * N, *ct = bt + N;
        __m512 yt = _mm512_mul_ps(d, xr);
        if (mode == 0) {
#pragma GCC unroll 16
            for (int j = 0; j < N; j++) {
                __m512 decay = exp2v(_mm512_mul_ps(dr, _mm512_loadu_ps(a + j * 16)));
                __m512 u = _mm512_mul_ps(dvx, _mm512_set1_ps(bt[j]));
                h[j] = _mm512_fmadd_ps(decay, h[j], u);
                yt = _mm512_fmadd_ps(_mm512_set1_ps(ct[j]), h[j], yt);
            }
        } else {
#ifdef TWO_ACCUMULATORS
            __m512 y2 = _mm512_setzero_ps();
            for (int j = 0; j < N; j += 2) {
                __m512 decay = exp2v(_mm512_mul_ps(dr, _mm512_loadu_ps(a + j * 16)));
                __m512 u = _mm512_mul_ps(dvx, _mm512_set1_ps(bt[j]));
                __m512 hj = _mm512_fmadd_ps(decay, _mm512_load_ps(hm + 16 * j), u);
                _mm512_store_ps(hm + 16 * j, hj);
                yt = _mm512_fmadd_ps(_mm512_set1_ps(ct[j]), hj, yt);
                decay = exp2v(_mm512_mul_ps(dr, _mm512_loadu_ps(a + j * 16 + 16)));
                u = _mm512_mul_ps(dvx, _mm512_set1_ps(bt[j + 1]));
                hj = _mm512_fmadd_ps(decay, _mm512_load_ps(hm + 16 * j + 16), u);
                _mm512_store_ps(hm + 16 * j + 16, hj);
                y2 = _mm512_fmadd_ps(_mm512_set1_ps(ct[j + 1]), hj, y2);
            }
            yt = _mm512_add_ps(yt, y2);
#else
            for (int j = 0; j < N; j++) {
                __m512 decay = exp2v(_mm512_mul_ps(dr, _mm512_loadu_ps(a + j * 16)));
                __m512 u = _mm512_mul_ps(dvx, _mm512_set1_ps(bt[j]));
                __m512 hj = _mm512_fmadd_ps(decay, _mm512_load_ps(hm + 16 * j), u);
                _mm512_store_ps(hm + 16 * j, hj);
                yt = _mm512_fmadd_ps(_mm512_set1_ps(ct[j]), hj, yt);
            }
#endif
        }
        _mm512_storeu_ps(y + at, yt);
    }
}

static int by_value(const void *a, const void *b) {
    double d = *(const double *)a - *(const double *)b;
    return (d > 0) - (d < 0);
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: scan_loop REPS MODE PREFETCH GHZ\n");
        return 2;
    }
    int reps = atoi(argv[1]);
    mode = atoi(argv[2]);
    prefetch = atoi(argv[3]);
    double ghz = atof(argv[4]);
#ifdef EXP_TABLE
    float sixteenths[16];
    for (int i = 0; i < 16; i++) sixteenths[i] = exp2f(i / 16.0f);
    exp2_sixteenths = _mm512_loadu_ps(sixteenths);
#endif
    size_t size = (size_t)B * L * E;
    x = aligned_alloc(64, size * 4);
    dl = aligned_alloc(64, size * 4);
    y = aligned_alloc(64, size * 4);
    bc = aligned_alloc(64, (size_t)B * L * 2 * N * 4);
    al = aligned_alloc(64, (size_t)E * N * 4);
    for (size_t i = 0; i < size; i++) {
        x[i] = (i % 7) * 0.1f - 0.3f;
        dl[i] = 0.001f + (i % 13) * 0.007f;
    }
    for (size_t i = 0; i < (size_t)B * L * 2 * N; i++) bc[i] = (i % 5) * 0.2f - 0.4f;
    for (int i = 0; i < E * N; i++) al[i] = -((i / 16) % 16 + 1) * 1.4427f;
    double *times = malloc(sizeof(double) * reps);
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        for (int row = 0; row < B; row++)
            for (int c0 = 0; c0 < E; c0 += 16) chunk(row, c0);
        times[r] = now() - t0;
    }
    qsort(times, reps, sizeof(double), by_value);
    double median = times[reps / 2], elements = (double)B * L * E * N;
    float sum = 0;
    for (size_t i = 0; i < size; i++) sum += y[i];
    printf("mode %d prefetch %d: median %.3f ms (best %.3f), %.2f cycles per 16 state elements at "
           "%.2f GHz, %.1f GFLOP/s (sum %g)\n",
           mode, prefetch, median * 1e3, times[0] * 1e3, median * ghz * 1e9 / (elements / 16), ghz,
           7.0 * elements / median / 1e9, sum);
    return 0;
}
