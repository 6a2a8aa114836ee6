#!/usr/bin/env python3
"""Which AVX-512 instructions share the FMA pipes: for each instruction, its throughput alone and
mixed 1:2 with FMAs (18 independent chains, so latency does not bound the mix below ~4 per
cycle). A mix at ~3 instructions a cycle means the instruction runs beside the two FMAs a cycle;
~2 means it takes an FMA pipe's slot. Generates the C, compiles it with gcc -O2 -march=native,
runs it; cycles from the clock given (peak_fma.c's rate / 64 FLOPs a cycle). Some single-op
lines are bound by the instruction's latency (16 chains), not its throughput: read the mixes.

    python3 bench/roofline/port_mix.py 4.06 > OUT.txt
"""
import os
import subprocess
import sys
import tempfile

OPS = {
    "fma": "@=_mm512_fmadd_ps(@,c,c2)",
    "add": "@=_mm512_add_ps(@,c2)",
    "sub": "@=_mm512_sub_ps(@,c2)",
    "scalef": "@=_mm512_scalef_ps(@,c2)",
    "roundscale": "@=_mm512_roundscale_ps(@,0x09)",
    "reduceps": "@=_mm512_reduce_ps(@,0x09)",
    "getexp": "@=_mm512_getexp_ps(@)",
    "cvt-floor": "@=_mm512_castsi512_ps(_mm512_cvt_roundps_epi32(@,_MM_FROUND_TO_NEG_INF|_MM_FROUND_NO_EXC))",
    "cvtt": "@=_mm512_castsi512_ps(_mm512_cvttps_epi32(@))",
    "permps": "@=_mm512_permutexvar_ps(_mm512_castps_si512(@),c)",
    "permilps": "@=_mm512_permutevar_ps(c,_mm512_castps_si512(@))",
    "permt2ps": "@=_mm512_permutex2var_ps(c,_mm512_castps_si512(@),c2)",
    "pslld+paddd": "@=_mm512_castsi512_ps(_mm512_add_epi32(_mm512_slli_epi32(_mm512_castps_si512(@),23),ci))",
    "paddd": "@=_mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(@),ci))",
    "max+min": "@=_mm512_min_ps(_mm512_max_ps(c2,@),c)",
    "fixupimm": "@=_mm512_fixupimm_ps(@,c,ci,0)",
    "cmp+blend": "@=_mm512_mask_mov_ps(@,_mm512_cmp_ps_mask(@,c,_CMP_UNORD_Q),c2)",
}


def bench(out, name, ops, chains):
    names = [f"v{i}" for i in range(chains)]
    body = " ".join(ops[i % len(ops)].replace("@", v) + ";" for i, v in enumerate(names))
    out.append("{ " + " ".join(f"__m512 {v}=_mm512_set1_ps(1.0f+{i}e-3f);" for i, v in enumerate(names)))
    out.append(f" double t0=now(); for(long k=0;k<n;k++){{ {body} }}")
    out.append(" double dt=now()-t0; s+=" + "+".join(f"_mm512_reduce_add_ps({v})" for v in names) + ";")
    out.append(f' printf("%-18s %.2f instructions a cycle\\n","{name}", n*{chains}/dt/ghz/1e9); }}')


def main():
    ghz = float(sys.argv[1])
    out = ["#include <immintrin.h>", "#include <stdio.h>", "#include <time.h>",
           "static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);"
           "return t.tv_sec+t.tv_nsec*1e-9;}",
           f"int main(){{ double ghz={ghz}; __m512 c=_mm512_set1_ps(0.999f), c2=_mm512_set1_ps(1e-7f);"
           " __m512i ci=_mm512_set1_epi32(1); long n=20000000; float s=0;"]
    for name, op in OPS.items():
        bench(out, name, [op], 16)
    for name, op in OPS.items():
        if name != "fma":
            bench(out, "2 fma + " + name, [OPS["fma"], OPS["fma"], op], 18)
    out.append('printf("(checksum %g)\\n",s); return 0;}')
    with tempfile.TemporaryDirectory() as tmp:
        src, exe = os.path.join(tmp, "port_mix.c"), os.path.join(tmp, "port_mix")
        open(src, "w").write("\n".join(out))
        subprocess.run(["gcc", "-O2", "-march=native", "-o", exe, src], check=True)
        sys.stdout.flush()
        subprocess.run([exe], check=True)


main()
