#!/usr/bin/env bash
# Seed ensembles of the CNN runs of bench/cnn/gue_cnn.sh (docs/results.md, "Seed ensembles"):
# `luminome-predict --checkpoint` with the best checkpoints of a group of seeds (and, with EXTRA,
# more members: e.g. the task's k-mer floor), scored on dev and test, one ensemble per group.
# Disjoint groups give independent ensembles, so a mean ± sd.
#
#   bench/cnn/ensemble.sh WORK TASK RUN GROUP...          # from the repository root
#   e.g. bench/cnn/ensemble.sh work/kmer mouse_0 cnn_max "1 2 3" "4 5 6" "7 8 9"
#        EXTRA=kmer bench/cnn/ensemble.sh work/kmer mouse_0 cnn_max "1 2 3" "4 5 6" "7 8 9"
#
# RUN is the run folder's name without _s<seed> (cnn_max, cnn_gated_fwd_scaled, ...).
# Environment: EXTRA (run folders under WORK/TASK whose best.safetensors joins every group; the
# k-mer floor of bench/kmer/run.sh is `kmer`), SPLITS (default "dev test"), BIN (the
# luminome-predict to run; default target/release/luminome-predict).
# Writes WORK/TASK/ensemble_RUN[+EXTRA]_s<seeds>.<split>.{tsv,metrics.tsv} and prints, per split
# and group, the ensemble's MCC, its CNN members' and the gain (ensemble minus the mean of its
# own CNN members: the paired comparison); then per split the mean ± sd over groups of the
# ensembles, of the gains and of the CNN members (the groups should be disjoint: a seed in two
# groups is counted twice among the single models). Dev numbers are optimistic for every model:
# each CNN's checkpoint (and the k-mer floor's k and penalty) was chosen on dev.
set -euo pipefail
work=$1 task=$2 run=$3
shift 3
[[ $# -gt 0 ]] || { echo "ensemble.sh: give at least one group of seeds" >&2; exit 2; }
bin=${BIN:-target/release/luminome-predict}
extra=${EXTRA:-}
d=$work/$task
lines=$(mktemp)
trap 'rm -f "$lines"' EXIT
for split in ${SPLITS:-dev test}; do
    : > "$lines"
    for group in "$@"; do
        ckpts=() tag=""
        for s in $group; do
            ckpts+=("$d/${run}_s$s/best.safetensors")
            tag+="${tag:+-}$s"
        done
        for e in $extra; do ckpts+=("$d/$e/best.safetensors"); done
        out=$d/ensemble_${run}${extra:++${extra// /+}}_s$tag.$split
        "$bin" --checkpoint "${ckpts[@]}" --dataset "$d/$split.safetensors" -o "$out.tsv" \
            --metrics "$out.metrics.tsv" --threads 1 -q
        # members: the CNN seeds only (EXTRA members come last and are the same in every group)
        awk -F'\t' -v g="$tag" -v n="$(wc -w <<< "$group")" '$1 == "mcc" { e = $2 }
            match($1, /^member_[0-9]+\.mcc$/) { i = substr($1, 8) + 0; if (i <= n) m = m " " $2;
                else x = x " " $2 }
            END { printf "%s\tensemble %s\tmembers%s\textra%s\n", g, e, m, x }' \
            "$out.metrics.tsv" >> "$lines"
    done
    echo "== $task $run${extra:+ + $extra} ($split)"
    cat "$lines"
    awk -F'\t' '
        { split($2, e, " "); E[NR] = e[2]; n = split($3, m, " "); s = 0;
          for (i = 2; i <= n; i++) { M[++k] = m[i]; s += m[i] }
          G[NR] = e[2] - s / (n - 1) }
        function stats(a, c,   s, ss, i, mu) { s = 0; for (i = 1; i <= c; i++) s += a[i]; mu = s / c;
          ss = 0; for (i = 1; i <= c; i++) ss += (a[i] - mu) ^ 2;
          return sprintf("%.3f ± %.3f (n %d)", mu, c > 1 ? sqrt(ss / (c - 1)) : 0, c) }
        END { print "ensembles: " stats(E, NR); print "gain over own members: " stats(G, NR);
              print "single models: " stats(M, k) }' "$lines"
done
