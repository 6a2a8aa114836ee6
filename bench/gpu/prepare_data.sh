#!/usr/bin/env bash
# The data of a GPU session (bench/gpu/run_gpu.sh), made with the CPU build on any machine, so
# the GPU host needs nothing but the binaries and this folder (a few MB).
#
#   bench/gpu/prepare_data.sh DATA_DIR          # from the repository root; needs ../shared/data
#
# DATA_DIR receives
#   train/dev/test.safetensors   GUE prom_core_all in non-overlapping 3-mers (the classifier and
#                                masked-LM recipes of bench/train/gue_prom_core_all.sh);
#   bistrand_train.safetensors   C. elegans (1 % slice) windows of 512 with their complementary
#                                strands, for the bi-strand model;
#   snvs_small.*, snvs_large.*   every SNV at 40 / 2,000 sampled coding positions of C. elegans
#                                chromosomes V and X (bench/bistrand/coding_snvs.py, seed 1), as
#                                windows of 512 (luminome-mask-pairs --variants).
#   plantcad_l20_shrunk/,        when CAD_CKPT (default /work/bench-data/plantcad_l20_random,
#   snvs_cad_small.*,            bench/caduceus/make_random_checkpoint.py --size l20) exists: that
#   snvs_cad_large.*             checkpoint shrunk by bench/gpu/regrow_checkpoint.py, and the SNVs
#                                of the first 12 / all 2,000 positions in its vocabulary (--like);
#   saturate_{small,large}.*     with it, in-silico saturation mutagenesis windows (--saturate) of
#                                12 bases and of four 500-bp intervals of chromosome V;
#   attrib/                      test.safetensors (the 5,920 GUE prom_core_all test rows, single
#                                nucleotides, --max-length 72) and two CNN classifiers trained
#                                here on the bundled 2,000 training rows (300 steps, seed 1):
#                                cnn/ (mean adapter) and gated/ (DynamicGated), for stage attrib;
#   dnabert2_shrunk/, dnabert2/  when DNABERT2_CKPT (default /work/bench-data/dnabert2_117m_random,
#                                bench/dnabert2/make_random_checkpoint.py) exists: that checkpoint
#                                shrunk, and GUE prom_core_all (bundled train/dev, full test) in
#                                its tokenizer, for stage dnabert2.
#   nt_v2_shrunk/, nt_v2/        the same for the Nucleotide Transformer v2 50m when NT_V2_CKPT
#                                (default /work/bench-data/nt_v2_50m_random,
#                                bench/nt_v2/make_random_checkpoint.py) exists (its vocab.txt),
#                                for bench/gpu/published_peer.sh;
#   dnabert2_1kb/, nt_v2_1kb/    with them, 2,000 train and 1,000 test windows of 1,000 bp drawn
#                                from the C. elegans slice (seed 1, N-free, labels alternating: a
#                                speed set, rows of 220 / 171 tokens), published_peer.sh
#                                DATA_SUFFIX=_1kb.
# BIN (default target/release) holds luminome-tokenize, -mask-pairs and -train (built if missing).
set -euo pipefail
out=$(mkdir -p "$1" && cd "$1" && pwd)
data=${DATA:-../shared/data}
bin=${BIN:-target/release}
[[ -x $bin/luminome-tokenize && -x $bin/luminome-mask-pairs && -x $bin/luminome-train ]] ||
    cargo build --release --locked -q -p luminome-tokenize -p luminome-mask-pairs -p luminome-train
for s in train dev test; do
    "$bin/luminome-tokenize" "$data/gue/prom/prom_core_all/$s.csv" -q --scheme kmer -k 3 \
        --kmer-mode non-overlapping -o "$out/$s.safetensors"
done
ce=$data/genomes/celegans_1pct
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
zcat "$ce/C.elegans.fa.gz" > "$tmp/celegans.fa"
"$bin/luminome-mask-pairs" --quiet --fasta "$tmp/celegans.fa" --window 512 --seed 1 \
    -o "$out/bistrand_train.safetensors"
for set in small:40 large:2000; do
    python3 bench/bistrand/coding_snvs.py "$tmp/celegans.fa" "$ce/C.elegans.gff.gz" \
        "$out/snvs_${set%%:*}" --chroms V,X --positions "${set##*:}" --seed 1
    "$bin/luminome-mask-pairs" --quiet --reference "$tmp/celegans.fa" \
        --variants "$out/snvs_${set%%:*}.tsv" --window 512 -o "$out/snvs_${set%%:*}.pairs.safetensors"
done
cad=${CAD_CKPT:-/work/bench-data/plantcad_l20_random}
if [[ -f $cad/model.safetensors ]]; then
    python3 bench/gpu/regrow_checkpoint.py shrink "$cad" "$out/plantcad_l20_shrunk"
    head -n 12 "$out/snvs_small.tsv" > "$out/snvs_cad_small.tsv"
    cp "$out/snvs_large.tsv" "$out/snvs_cad_large.tsv"
    for set in small large; do
        "$bin/luminome-mask-pairs" --quiet --reference "$tmp/celegans.fa" --like "$cad" \
            --variants "$out/snvs_cad_$set.tsv" --window 512 -o "$out/snvs_cad_$set.pairs.safetensors"
    done
    printf 'V\t100000\t100012\n' > "$out/saturate_small.bed"
    for i in 0 1 2 3; do
        printf 'V\t%d\t%d\n' $((120000 + i * 10000)) $((120500 + i * 10000))
    done > "$out/saturate_large.bed"
    for set in small large; do
        "$bin/luminome-mask-pairs" --quiet --reference "$tmp/celegans.fa" --like "$cad" \
            --saturate "$out/saturate_$set.bed" --window 512 -o "$out/saturate_$set.safetensors"
    done
fi
bundled=test-data/gue_prom_core_all
# published NAME CHECKPOINT TOKENIZER: the checkpoint shrunk to NAME_shrunk/ and GUE
# prom_core_all (bundled train/dev, full test) in its tokenizer in NAME/, when it exists.
published() {
    [[ -f $2/model.safetensors ]] || return 0
    python3 bench/gpu/regrow_checkpoint.py shrink "$2" "$out/$1_shrunk"
    mkdir -p "$out/$1"
    for s in train dev; do
        "$bin/luminome-tokenize" "$bundled/$s.csv" -q --scheme hf --tokenizer "$3" \
            -o "$out/$1/$s.safetensors"
    done
    "$bin/luminome-tokenize" "$data/gue/prom/prom_core_all/test.csv" -q --scheme hf \
        --tokenizer "$3" -o "$out/$1/test.safetensors"
}
db2=${DNABERT2_CKPT:-/work/bench-data/dnabert2_117m_random}
published dnabert2 "$db2" "$db2/tokenizer.json"
ntv2=${NT_V2_CKPT:-/work/bench-data/nt_v2_50m_random}
published nt_v2 "$ntv2" "$ntv2"
if [[ -d $out/dnabert2 && -d $out/nt_v2 ]]; then
    python3 - "$ce/C.elegans.fa.gz" "$tmp" << 'PY'
import gzip, random, sys
genome = "".join(l.strip().upper() for l in gzip.open(sys.argv[1], "rt") if not l.startswith(">"))
rng, rows = random.Random(1), []
while len(rows) < 3000:
    i = rng.randrange(0, len(genome) - 1000)
    if set(genome[i:i + 1000]) <= set("ACGT"):
        rows.append(f"{genome[i:i + 1000]},{len(rows) % 2}\n")
for name, part in (("train", rows[:2000]), ("test", rows[2000:])):
    open(f"{sys.argv[2]}/kb_{name}.csv", "w").writelines(["sequence,label\n"] + part)
PY
    for fam in dnabert2:$db2/tokenizer.json nt_v2:$ntv2; do
        mkdir -p "$out/${fam%%:*}_1kb"
        for s in train test; do
            "$bin/luminome-tokenize" "$tmp/kb_$s.csv" -q --scheme hf --tokenizer "${fam#*:}" \
                -o "$out/${fam%%:*}_1kb/$s.safetensors"
        done
    done
fi
mkdir -p "$out/attrib"
for s in train dev; do
    "$bin/luminome-tokenize" "$bundled/$s.csv" -q --max-length 72 -o "$tmp/attrib_$s.safetensors"
done
"$bin/luminome-tokenize" "$data/gue/prom/prom_core_all/test.csv" -q --max-length 72 \
    -o "$out/attrib/test.safetensors"
for m in cnn:mean gated:gated; do
    [[ -f $out/attrib/${m%%:*}/best.safetensors ]] ||
        "$bin/luminome-train" classify --train "$tmp/attrib_train.safetensors" \
            --dev "$tmp/attrib_dev.safetensors" --backbone cnn --adapter "${m##*:}" --steps 300 \
            --eval-every 100 --seed 1 --no-kmer-floor -q -o "$out/attrib/${m%%:*}"
    rm -f "$out/attrib/${m%%:*}"/last*.safetensors
done
ls -la "$out" "$out/attrib"
