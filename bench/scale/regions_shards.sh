#!/usr/bin/env bash
# Scatter-gather of region matrices, measured (docs/scale-out.md): the chr22 run of
# docs/benchmarks.md's "Whole pipeline" row (peaks called on the K562 and GM12878 DNase bigWigs,
# Vierstra v1.0: 2,174 motifs -> 282 clusters, p < 1e-4, all chr22 protein-coding genes x 2 cell
# types with expression, N = 200, 2 Mbp windows) as one luminome-regions job (1 and 2 threads)
# and as 2 and 4 parts (--shard I/N side by side on this machine, one thread each, then
# --gather on one thread); dataset, samples and regions tables compared byte for byte with the
# one-thread job's (the commands are the same but for --shard/--gather, so even the recorded
# command matches).
#
#   bench/scale/regions_shards.sh OUT_DIR
#
# Needs release binaries (cargo build --release) and ../shared/data (hg38_chr22, motifs).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="$(mkdir -p "$1" && cd "$1" && pwd)"
bin="${BIN:-$repo/target/release}"
data="$repo/../shared/data"
[ -d "$data" ] || data=/work/shared/data
h="$data/hg38_chr22"
v="$data/motifs/vierstra_v1.0"
genes="$h/abc_hg38_gene_tss/RefSeqCurated.170308.bed.CollapsedGeneBounds.chr22.hg38.TSS500bp.bed"
# shellcheck source=bench/scale/lib.sh
. "$repo/bench/scale/lib.sh"
cd "$out"
start_record

python3 "$repo/bench/regions/rampage_gene_table.py" "$genes" \
    "$h/rampage_hg38_tss_expression/hg38-rPeaks.bed.gz" \
    "$h/rampage_hg38_tss_expression/ENCSR000AEI.txt.gz" "$out/gm12878_rampage_genes.tsv"
regions=("$bin/luminome-regions" --reference "$h/chr22.fa.gz"
    --accessibility "K562=$h/acc.K562.chr22.bw" --accessibility "GM12878=$h/acc.GM12878.chr22.bw"
    --genes "$genes" --bed-tss center --gene-type protein_coding
    --expression "K562=$h/k562_tpm_encode/K562.ENCFF934YBO.TPM.txt" --expression-duplicates sum
    --expression "GM12878=$out/gm12878_rampage_genes.tsv"
    --motifs "$v/vierstra_v1.0_motifs_2174_from_GET_NrMotifV1.meme"
    --motif-clusters "$v/vierstra_v1.0_motif_annotations.csv"
    --window 2000000 --n-regions 200 --quiet)
mkdir -p one one_threads_2
(cd one && timed one_job_threads_1 "${regions[@]}" --threads 1 -o chr22.safetensors)
(cd one_threads_2 && timed one_job_threads_2 "${regions[@]}" --threads 2 -o chr22.safetensors)
for n in 2 4; do
    mkdir -p "shards_$n"
    (
        cd "shards_$n"
        parts_side_by_side "" "$n" "${regions[@]}"
        du -cb p*.part.safetensors | tail -1 | sed "s/^/part files of $n: bytes /;s/\ttotal//" >> "$out/conditions.txt"
        timed "gather_$n" "${regions[@]}" --threads 1 -o chr22.safetensors --gather p*.part.safetensors
        rm -f p*.part.safetensors
    )
    for f in chr22.safetensors chr22.samples.tsv chr22.regions.tsv; do
        cmp "one/$f" "shards_$n/$f"
    done
    echo "shards_$n: dataset, samples and regions tables the same bytes as one job" >> conditions.txt
done
du -cb one/chr22.* | tail -1 | sed "s/^/one job's outputs: bytes /;s/\ttotal//" >> conditions.txt
cat conditions.txt times.tsv
