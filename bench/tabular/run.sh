#!/usr/bin/env bash
# The tabular classifiers on a real table (docs/results.md, "Tabular classifier"): 5-fold CV x
# 3 seeds for the FT-Transformer and the MLP (default settings), then logistic regression and
# gradient-boosted trees on exactly the same folds (bench/tabular/baselines.py), then the summary.
#
#   bash bench/tabular/run.sh breast-cancer|k562-genes OUT_DIR [BIN_DIR] [PYTHON]
#
# breast-cancer: the Wisconsin diagnostic table from scikit-learn's wheel (569 x 30, benign /
#   malignant; make_breast_cancer.py).
# k562-genes: every chr22 protein-coding gene, expressed in K562 or not, from its regulatory
#   neighbourhood as luminome-regions sees it (K562 accessibility, Vierstra motif clusters; ENCODE
#   RAMPAGE for the label; gene_table.py). Needs ../shared/data.
# PYTHON needs numpy, safetensors and scikit-learn. One thread per run, one run at a time.
set -euo pipefail
task=${1:?breast-cancer or k562-genes}
out=$(mkdir -p "${2:?OUT_DIR}" && cd "$2" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
bin=${3:-$repo/target/release}
py=${4:-python3}
data=${DATA:-$repo/../shared/data}
case $task in
  breast-cancer)
    table=$out/breast_cancer.tsv
    "$py" "$here/make_breast_cancer.py" "$table"
    flags=(--label diagnosis --id sample --classes benign,malignant)
    baseline=(diagnosis malignant sample) ;;
  k562-genes)
    H=$data/hg38_chr22 V=$data/motifs/vierstra_v1.0
    GENES=$H/abc_hg38_gene_tss/RefSeqCurated.170308.bed.CollapsedGeneBounds.chr22.hg38.TSS500bp.bed
    R=$H/rampage_hg38_tss_expression
    [ -f "$out/K562.rampage.tsv" ] || "$py" "$repo/bench/regions/rampage_gene_table.py" "$GENES" \
      "$R/hg38-rPeaks.bed.gz" "$R/ENCSR000AER.txt.gz" "$out/K562.rampage.tsv"
    [ -f "$out/genes.safetensors" ] || "$bin/luminome-regions" --reference "$H/chr22.fa.gz" \
      --accessibility "K562=$H/acc.K562.chr22.bw" \
      --motifs "$V/vierstra_v1.0_motifs_2174_from_GET_NrMotifV1.meme" \
      --motif-clusters "$V/vierstra_v1.0_motif_annotations.csv" \
      --genes "$GENES" --bed-tss center --gene-type protein_coding \
      --expression "K562=$out/K562.rampage.tsv" --threads 1 -o "$out/genes.safetensors" \
      2> "$out/genes.log"
    table=$out/genes.tsv
    "$py" "$here/gene_table.py" "$out/genes.safetensors" "$table"
    flags=(--label expressed --id gene --classes no,yes)
    baseline=(expressed yes gene) ;;
  *) echo "unknown task $task" >&2; exit 2 ;;
esac
for seed in 1 2 3; do
  for model in ft-transformer mlp; do
    dir="$out/$model.seed$seed"
    [ -f "$dir/cv_metrics.tsv" ] && continue
    /usr/bin/time -v "$bin/luminome-train" tabular --train "$table" "${flags[@]}" --folds 5 \
      --model "$model" --seed "$seed" --threads 1 -o "$dir" 2> "$dir.log" \
      || { tail "$dir.log"; exit 1; }
  done
  "$py" "$here/baselines.py" "$table" "$out/mlp.seed$seed" "${baseline[@]}" \
    > "$out/baselines.seed$seed.tsv"
done
"$py" "$here/summarize.py" "$out"
