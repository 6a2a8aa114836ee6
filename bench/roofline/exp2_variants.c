// Throughput of 16-lane exp2 variants on one AVX-512 core: eight independent streams of
// 2^t over 64 vectors held in L1, summed so nothing is optimised away. Prints cycles per
// 16 values at the clock given (default 2.46 GHz: the Intel VM's FMA peak, peak_fma.c, over two
// 512-bit FMA ports). Variants: A floor by vrndscaleps + subtraction + degree-5 Horner +
// vscalefps (the scan's kernel); B round by adding and removing 1.5·2^23; B2 B with the clamp to
// [-151, 128]; E vreduceps (one instruction for t - floor t); D the exponent written by integer
// shift (no vscalefps); F Estrin's scheme; Z eight dependent FMAs (the latency reference).
// The polynomial coefficients are rounded: the values are for timing, not accuracy.
//
//   gcc -O2 -march=native -o exp2_variants exp2_variants.c && ./exp2_variants 2000000 [GHz]
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
#define POLY5(f) p=_mm512_fmadd_ps(_mm512_set1_ps(0.0018671f),f,_mm512_set1_ps(0.009017f)); p=_mm512_fmadd_ps(p,f,_mm512_set1_ps(0.0558f)); p=_mm512_fmadd_ps(p,f,_mm512_set1_ps(0.2401f)); p=_mm512_fmadd_ps(p,f,_mm512_set1_ps(0.6931f)); p=_mm512_fmadd_ps(p,f,_mm512_set1_ps(1.0f));
static inline __m512 expA(__m512 t){ __m512 p; __m512 f=_mm512_sub_ps(t,_mm512_roundscale_ps(t,0x09)); POLY5(f) return _mm512_scalef_ps(p,t);}
static inline __m512 expB(__m512 t){ __m512 p; __m512 R=_mm512_set1_ps(12582912.0f); __m512 k=_mm512_sub_ps(_mm512_add_ps(t,R),R); __m512 f=_mm512_sub_ps(t,k); POLY5(f) return _mm512_scalef_ps(p,k);}
static inline __m512 expB2(__m512 t){ __m512 p; t=_mm512_max_ps(t,_mm512_set1_ps(-151.f)); t=_mm512_min_ps(t,_mm512_set1_ps(128.f)); __m512 R=_mm512_set1_ps(12582912.0f); __m512 k=_mm512_sub_ps(_mm512_add_ps(t,R),R); __m512 f=_mm512_sub_ps(t,k); POLY5(f) return _mm512_scalef_ps(p,k);}
static inline __m512 expE(__m512 t){ __m512 p; __m512 f=_mm512_reduce_ps(t,0x09); POLY5(f) return _mm512_scalef_ps(p,t);}
static inline __m512 expD(__m512 t){ __m512 p; t=_mm512_max_ps(t,_mm512_set1_ps(-126.f)); __m512 R=_mm512_set1_ps(12582912.0f); __m512 k=_mm512_sub_ps(_mm512_add_ps(t,R),R); __m512 f=_mm512_sub_ps(t,k); POLY5(f) __m512i e=_mm512_slli_epi32(_mm512_castps_si512(_mm512_add_ps(k,_mm512_set1_ps(8388735.0f))),23); return _mm512_mul_ps(p,_mm512_castsi512_ps(e));}

#define RUN(NAME,FN) static double NAME(const float*a,long reps,float*out){ __m512 acc[8]; for(int i=0;i<8;i++)acc[i]=_mm512_setzero_ps(); double t0=now(); \
  for(long r=0;r<reps;r++){ for(int j=0;j<64;j+=8){ \
   for(int u=0;u<8;u++){ acc[u]=_mm512_add_ps(acc[u],FN(_mm512_load_ps(a+(j+u)*16))); } } } \
  double el=now()-t0; __m512 s=acc[0]; for(int i=1;i<8;i++) s=_mm512_add_ps(s,acc[i]); *out=_mm512_reduce_add_ps(s); return el/(reps*64.0);}
static inline __m512 expF(__m512 t){ __m512 f=_mm512_sub_ps(t,_mm512_roundscale_ps(t,0x09));
  __m512 f2=_mm512_mul_ps(f,f);
  __m512 p01=_mm512_fmadd_ps(f,_mm512_set1_ps(0.6931f),_mm512_set1_ps(1.0f));
  __m512 p23=_mm512_fmadd_ps(f,_mm512_set1_ps(0.0558f),_mm512_set1_ps(0.2401f));
  __m512 p45=_mm512_fmadd_ps(f,_mm512_set1_ps(0.0018671f),_mm512_set1_ps(0.009017f));
  __m512 q=_mm512_fmadd_ps(f2,p45,p23);
  __m512 p=_mm512_fmadd_ps(f2,q,p01);
  return _mm512_scalef_ps(p,t);}
static inline __m512 fmaonly(__m512 t){ __m512 p=t; for(int i=0;i<8;i++) p=_mm512_fmadd_ps(p,_mm512_set1_ps(0.9f),_mm512_set1_ps(0.01f)); return p;}
RUN(rA,expA) RUN(rB,expB) RUN(rB2,expB2) RUN(rE,expE) RUN(rD,expD) RUN(rF,expF) RUN(rZ,fmaonly)
int main(int argc,char**argv){
  long reps=atol(argv[1]);
  float *a=aligned_alloc(64,64*16*4); for(int i=0;i<64*16;i++)a[i]=-0.01f*(i%97);
  float o; const char*names[]={"A rndscale","B roundtrick","B2 clamp+round","E reduce","D bias","F estrin","Z 8fma"};
  double (*fs[])(const float*,long,float*)={rA,rB,rB2,rE,rD,rF,rZ};
  double ghz=argc>2?atof(argv[2]):2.46;
  for(int k=0;k<2;k++) for(int m=0;m<7;m++){ double t=fs[m](a,reps,&o); printf("%-16s %.2f cycles per 16 at %.2f GHz (sum %g)\n",names[m],t*ghz*1e9,ghz,o);}
}
