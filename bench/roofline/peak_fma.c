// One core's FP32 peak: independent chains of 8-wide fused multiply-adds (AVX2 + FMA), or
// 16-wide ones when compiled for AVX-512, enough of them to cover the FMA units' latency, nothing
// loaded or stored in the loop. Prints GFLOP/s (an FMA = 2 FLOPs), the best of five runs of
// ~0.5 s, and the vector width.
//
//   gcc -O2 -mavx2 -mfma -o peak_fma peak_fma.c && ./peak_fma
//   gcc -O2 -mavx2 -mfma -mavx512f -o peak_fma512 peak_fma.c && ./peak_fma512
#include <immintrin.h>

#ifdef __AVX512F__
#define WIDTH 16
#define VEC __m512
#define SET1 _mm512_set1_ps
#define FMADD _mm512_fmadd_ps
#define STOREU _mm512_storeu_ps
#else
#define WIDTH 8
#define VEC __m256
#define SET1 _mm256_set1_ps
#define FMADD _mm256_fmadd_ps
#define STOREU _mm256_storeu_ps
#endif
#include <stdio.h>
#include <time.h>

#define CHAINS 12

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(void) {
    const long iters = 40000000;
    double best = 0;
    float sink = 0;
    for (int run = 0; run < 5; run++) {
        VEC acc[CHAINS];
        for (int c = 0; c < CHAINS; c++) acc[c] = SET1(1.0f + c * 1e-3f);
        const VEC a = SET1(0.999999f), b = SET1(1e-7f);
        VEC a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3], a4 = acc[4], a5 = acc[5];
        VEC a6 = acc[6], a7 = acc[7], a8 = acc[8], a9 = acc[9], a10 = acc[10], a11 = acc[11];
        double t0 = now();
        // Written out (not a loop over an array): at -O2 GCC kept the array in memory and the
        // loop ran at 40 % of the rate of the unrolled registers.
        for (long i = 0; i < iters; i++) {
            a0 = FMADD(a0, a, b); a1 = FMADD(a1, a, b);
            a2 = FMADD(a2, a, b); a3 = FMADD(a3, a, b);
            a4 = FMADD(a4, a, b); a5 = FMADD(a5, a, b);
            a6 = FMADD(a6, a, b); a7 = FMADD(a7, a, b);
            a8 = FMADD(a8, a, b); a9 = FMADD(a9, a, b);
            a10 = FMADD(a10, a, b); a11 = FMADD(a11, a, b);
        }
        double secs = now() - t0;
        acc[0] = a0; acc[1] = a1; acc[2] = a2; acc[3] = a3; acc[4] = a4; acc[5] = a5;
        acc[6] = a6; acc[7] = a7; acc[8] = a8; acc[9] = a9; acc[10] = a10; acc[11] = a11;
        for (int c = 0; c < CHAINS; c++) {
            float out[WIDTH];
            STOREU(out, acc[c]);
            sink += out[0];
        }
        double gflops = (double)iters * CHAINS * WIDTH * 2 / secs / 1e9;
        if (gflops > best) best = gflops;
    }
    printf("peak_fma_gflops %.1f (%d-wide; sink %g)\n", best, WIDTH, sink);
    return 0;
}
