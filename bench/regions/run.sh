#!/usr/bin/env bash
# luminome-regions: real-data results (docs/results.md) and benchmarks (docs/benchmarks.md).
# Run from the repository root after `cargo build --release -p luminome-regions --bins --examples`.
# Needs python3 with numpy, safetensors and pymemesuite (pip install numpy safetensors pymemesuite).
# Usage: bench/regions/run.sh [OUT_DIR]   (default /tmp/luminome-regions-bench)
set -euo pipefail
OUT=${1:-/tmp/luminome-regions-bench}
mkdir -p "$OUT"
D=../shared/data
[ -d "$D" ] || D=/work/shared/data
H=$D/hg38_chr22
V=$D/motifs/vierstra_v1.0
J=$D/motifs/jaspar2024/JASPAR2024_CORE_vertebrates_non-redundant_pfms.meme
GENES=$H/abc_hg38_gene_tss/RefSeqCurated.170308.bed.CollapsedGeneBounds.chr22.hg38.TSS500bp.bed
BIN=./target/release/luminome-regions
EX=./target/release/examples/scan_ceiling
TIME="/usr/bin/time -v"

# GM12878 expression per gene from RAMPAGE rPeaks (TSS +- 500 bp, same strand).
python3 bench/regions/rampage_gene_table.py "$GENES" "$H/rampage_hg38_tss_expression/hg38-rPeaks.bed.gz" \
  "$H/rampage_hg38_tss_expression/ENCSR000AEI.txt.gz" "$OUT/gm12878_rampage_genes.tsv"

common=(--reference "$H/chr22.fa.gz"
  --accessibility "K562=$H/acc.K562.chr22.bw" --accessibility "GM12878=$H/acc.GM12878.chr22.bw"
  --genes "$GENES" --bed-tss center --gene-type protein_coding
  --expression "K562=$H/k562_tpm_encode/K562.ENCFF934YBO.TPM.txt" --expression-duplicates sum
  --expression "GM12878=$OUT/gm12878_rampage_genes.tsv" --threads 2)

# 1. Results + whole-pipeline wall time: all chr22 protein-coding genes x 2 cell types, peaks
#    called on both bigWigs, Vierstra v1.0 (2,174 motifs -> 282 clusters), and JASPAR 2024 (879).
$TIME $BIN "${common[@]}" --motifs "$V/vierstra_v1.0_motifs_2174_from_GET_NrMotifV1.meme" \
  --motif-clusters "$V/vierstra_v1.0_motif_annotations.csv" -o "$OUT/chr22.vierstra.safetensors" \
  2> "$OUT/chr22.vierstra.log"
$TIME $BIN "${common[@]}" --motifs "$J" -o "$OUT/chr22.jaspar.safetensors" 2> "$OUT/chr22.jaspar.log"
python3 bench/regions/results.py "$OUT/chr22.vierstra.safetensors" > "$OUT/results.vierstra.txt"
python3 bench/regions/results.py "$OUT/chr22.jaspar.safetensors" > "$OUT/results.jaspar.txt"

# 2. Sanity check of motif scores: CTCF hits in the regions vs the same regions shuffled
#    (mononucleotide shuffle within each region, seed 1), same motifs and threshold.
python3 bench/regions/results.py --shuffle "$H/chr22.fa.gz" "$OUT/chr22.jaspar.regions.tsv" "$OUT/chr22.shuffled.fa" 1
awk 'NR > 1 {print $2"\t"$3"\t"$4}' "$OUT/chr22.jaspar.regions.tsv" > "$OUT/chr22.regions.bed"
for ref in real shuffled; do
  fa=$H/chr22.fa.gz; [ $ref = shuffled ] && fa=$OUT/chr22.shuffled.fa
  $BIN --reference "$fa" --peaks "$OUT/chr22.regions.bed" --accessibility "K562=$H/acc.K562.chr22.bw" \
    --genes "$GENES" --bed-tss center --gene-type protein_coding --motifs "$J" --aggregation count \
    --threads 2 -o "$OUT/ctcf.$ref.safetensors" 2> "$OUT/ctcf.$ref.log"
done
python3 bench/regions/results.py --ctcf "$OUT/ctcf.real.regions.tsv" "$OUT/ctcf.shuffled.regions.tsv" "MA0139.2 CTCF" > "$OUT/ctcf.txt"
python3 bench/regions/results.py --ctcf "$OUT/ctcf.real.regions.tsv" "$OUT/ctcf.shuffled.regions.tsv" "MA1929.2 CTCF" >> "$OUT/ctcf.txt" || true

# 3. Motif scanning: the chr22 K562 MACS2 DNase peak set (artefact peak filtered, merged) x JASPAR 2024.
$BIN --reference "$H/chr22.fa.gz" --peaks "$D/atac_expression/abc_k562_chr22/macs2_peaks.narrowPeak" \
  --accessibility "K562=$H/acc.K562.chr22.bw" --genes "$GENES" --bed-tss center --gene-type protein_coding \
  --motifs "$J" --threads 2 -o "$OUT/peaks.jaspar.safetensors" 2> "$OUT/peaks.jaspar.log"
#    lightmotif ceiling vs MotifScanner (1 and 2 threads), all 879 motifs.
$EX "$H/chr22.fa.gz" "$OUT/peaks.jaspar.regions.tsv" "$J" 1e-4 > "$OUT/ceiling.879.txt"
#    FIMO (pymemesuite) vs MotifScanner on the same first 100 JASPAR motifs (FIMO on all 879 takes ~8 min).
python3 bench/regions/fimo_bench.py --subset "$J" 100 "$OUT/jaspar100.meme"
python3 bench/regions/fimo_bench.py "$H/chr22.fa.gz" "$OUT/peaks.jaspar.regions.tsv" "$OUT/jaspar100.meme" > "$OUT/fimo.100.txt"
$EX "$H/chr22.fa.gz" "$OUT/peaks.jaspar.regions.tsv" "$OUT/jaspar100.meme" 1e-4 > "$OUT/ceiling.100.txt"

# 4. Peak memory vs number of genes: 40 genes vs all 418 (same regions and motifs).
{ head -n 1 "$GENES"; awk 'NR > 1 && $8 == "protein_coding"' "$GENES" | head -n 40; } > "$OUT/genes40.bed"
for g in genes40 all; do
  gf=$GENES; [ $g = genes40 ] && gf=$OUT/genes40.bed
  $TIME $BIN --reference "$H/chr22.fa.gz" --accessibility "K562=$H/acc.K562.chr22.bw" \
    --accessibility "GM12878=$H/acc.GM12878.chr22.bw" --genes "$gf" --bed-tss center --gene-type protein_coding \
    --motifs "$J" --threads 2 -o "$OUT/mem.$g.safetensors" 2> "$OUT/mem.$g.log"
done
grep -H "Maximum resident\|Elapsed" "$OUT"/*.log
cat "$OUT"/results.*.txt "$OUT/ctcf.txt" "$OUT"/ceiling.*.txt "$OUT/fimo.100.txt"
