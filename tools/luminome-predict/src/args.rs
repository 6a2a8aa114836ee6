//! The `luminome-predict` command line.

use std::path::PathBuf;

use clap::Parser;

const EXAMPLES: &str = "\
Example (GUE core promoters from test-data; train first with luminome-train classify -o work/prom):
  luminome-tokenize test-data/gue_prom_core_all/test.csv --max-length 72 -o work/prom_test.safetensors
  luminome-predict --checkpoint work/prom/best.safetensors --dataset work/prom_test.safetensors \\
      -o work/prom_test.predictions.tsv --metrics work/prom_test.metrics.tsv
  # an ensemble: three seeds of the same recipe, their class probabilities averaged
  luminome-predict --checkpoint work/s1/best.safetensors work/s2/best.safetensors work/s3/best.safetensors \\
      --dataset work/prom_test.safetensors -o work/prom_test.ensemble.tsv \\
      --metrics work/prom_test.ensemble.metrics.tsv

Output (TSV with a header, one line per record, in dataset order):
  record  name  [label]  prob_<label value> (one column per class)  predicted
record is the 0-based row of the dataset, name comes from its .index.tsv, label is the true
label value (only when the dataset has labels), predicted is the label value with the highest
probability. With labels, metrics (accuracy, AUROC, AUPRC, F1, MCC, sensitivity, specificity,
confusion matrix) go to stderr and, with --metrics, to a TSV (metric, value).
In Python: pandas.read_csv('work/prom_test.predictions.tsv', sep='\\t')

Variant effects (a bi-strand model; a luminome-mask-pairs --variants dataset):
  luminome-predict --checkpoint bistrand/best.safetensors --dataset snv_pairs.safetensors \\
      -o snv.scores.tsv --vcf snv.scores.vcf.gz --bedgraph snv.llr.bedgraph
  TSV: record name chrom pos id ref alt ref_match llr llr_a llr_b [info_KEY...];
  llr = ln P(ALT) - ln P(REF) at the masked site (A/C/G/T softmax), mean of the two strands' heads;
  negative: the model finds ALT less likely. The VCF is the input's records with LLR, LLR_A,
  LLR_B (Number=A) and REF_MATCH in INFO (BGZF when it ends in .gz); the bedGraph has the lowest
  LLR per position.

Sharded across jobs (every model but dual encoders; an array job, one part each, then one
gather):
  luminome-predict --checkpoint bistrand/best.safetensors --dataset snv_pairs.safetensors \\
      --shard 3/8 -o part3.part.safetensors
  luminome-predict --checkpoint bistrand/best.safetensors --dataset snv_pairs.safetensors \\
      --gather part*.part.safetensors -o snv.scores.tsv --vcf snv.scores.vcf.gz
  A part is whole batches of --batch-size records; the gathered outputs are the bytes one job
  writes with the same arguments and --batch-size. Variant scorers, classifiers, ensembles,
  expression, tabular and GET models gather every output, --metrics included.
  docs/scale-out.md.

Zero-shot variant effects from a published model (Caduceus/PlantCaduceus: a checkpoint folder
in the Hugging Face layout, or hf:ORG/NAME fetched once into the Hugging Face cache):
  luminome-mask-pairs --reference genome.fa --variants snvs.vcf.gz --window 512 \\
      --like hf:kuleshov-group/PlantCaduceus_l20 -o snvs.plantcad.safetensors
  luminome-predict --checkpoint hf:kuleshov-group/PlantCaduceus_l20 \\
      --dataset snvs.plantcad.safetensors -o snvs.plantcad.tsv --vcf snvs.plantcad.vcf.gz
  TSV: record name chrom pos id ref alt ref_match llr llr_fwd llr_rc [info_KEY...]; llr is the
  mean of the window's and its reverse complement's ln P(ALT) - ln P(REF) (--strands forward:
  the window's only, as PlantCaduceus' script). VCF INFO: LLR, LLR_A (window), LLR_B (reverse
  complement), REF_MATCH. docs/pretrained-models.md.

Expression (an expression model; a luminome-regions dataset):
  luminome-predict --checkpoint expr/best.safetensors --dataset genes.safetensors --subset test \
      -o test.predictions.tsv --metrics test.metrics.tsv
  TSV: record name(gene) gene_id cell_type [split] predicted [observed]; metrics (n, pearson,
  spearman, r2, poisson_deviance, mse) over all samples with a value, then per cell type
  (K562.pearson, ...). --subset train|dev|test: only that part of the split the model was
  trained with (--holdout).

Expression from a published GET region model (GETRegionFinetune: a Lightning .ckpt, .pth, a
safetensors file, or a folder with config.json; docs/pretrained-models.md, \"GET\"):
  luminome-predict --checkpoint get_finetune.ckpt --dataset genes.safetensors \\
      -o genes.get.tsv --metrics genes.get.metrics.tsv
  TSV: record name(gene) gene_id cell_type predicted [observed]; predicted is GET's output at the
  gene's TSS region in its strand's column. The dataset's features must be GET's (num_motif
  columns, scaled as GET expects).

Retrieval (a dual encoder; a luminome-tokenize --format pairs dataset):
  luminome-predict --checkpoint dual/best.safetensors --dataset test.pairs.safetensors \\
      --corpus test.corpus.safetensors -o test.ranks.tsv --metrics test.metrics.tsv \\
      --embeddings test.emb.safetensors
  TSV, one line per distinct query: record name relevant first_rank rr top top_scores
  positive_similarity (top: the 10 best passages, best first). Metrics: full.* (every query
  against the whole corpus: MRR, MRR@10, MAP, NDCG@5/@10, P@1/@5, R@1/@5, Hit@1/@5), in_batch.*
  (batches of --in-batch-size pairs), positive_similarity, query/passage variance and norm.
  A token dataset instead of pairs is embedded (--embeddings, --side query|passage).

Tabular (a tabular model; a CSV/TSV table with the columns it was trained on):
  luminome-predict --checkpoint cv/fold-1/best.safetensors --dataset new_samples.tsv \\
      -o new_samples.predictions.tsv
  TSV: record name(sample id) [label] prob_<class>... predicted (with the model's decision
  threshold when it was trained with --threshold youden); metrics when the label column is
  there; category values not seen in training are read as unknown and counted.";

/// Which encoder of a dual encoder embeds a token dataset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EmbedSide {
    Query,
    Passage,
}

/// Runs a trained Luminome model on a dataset and writes its predictions.
#[derive(Debug, Clone, Parser)]
#[command(name = "luminome-predict", version, about, after_help = EXAMPLES)]
pub struct PredictArgs {
    /// Model checkpoint (.safetensors written by luminome-train), or a published model's folder
    /// (config.json + model.safetensors) or hf:ORG/NAME[@REVISION]. Classifiers: several
    /// (`--checkpoint a b c`, or the flag repeated) are run as one ensemble — the mean of their
    /// class probabilities; metrics then also list each member's (`member_<i>.`).
    #[arg(
        help_heading = "Inputs",
        long = "checkpoint",
        value_name = "CHECKPOINT",
        num_args = 1..,
        required = true
    )]
    pub checkpoints: Vec<PathBuf>,

    /// Dataset to predict on: a token dataset (luminome-tokenize) for sequence models, tokenized
    /// like the model's training data; a pair dataset (luminome-mask-pairs) for bi-strand
    /// models; a region dataset (luminome-regions) for expression models; a feature table
    /// (CSV/TSV with the training columns) for tabular models.
    #[arg(help_heading = "Inputs", long)]
    pub dataset: PathBuf,

    /// Predictions TSV.
    #[arg(help_heading = "Outputs", short, long)]
    pub output: PathBuf,

    /// Also write the metrics as a TSV (metric, value); needs a dataset with labels.
    #[arg(help_heading = "Outputs", long)]
    pub metrics: Option<PathBuf>,

    /// Variant datasets: the scores as a VCF (the input's records with INFO added; BGZF when
    /// the name ends in .gz).
    #[arg(help_heading = "Outputs", long)]
    pub vcf: Option<PathBuf>,

    /// Variant datasets: a track of the lowest LLR per position — bedGraph, or bigWig when the
    /// name ends in .bw/.bigwig (also --bigwig).
    #[arg(help_heading = "Outputs", long, alias = "bigwig")]
    pub bedgraph: Option<PathBuf>,

    /// Saturated datasets (luminome-mask-pairs --saturate): every interval's substitutions as
    /// an .npz — ism (N, 4, L) the LLR of each base, contrib = one-hot × −mean LLR, onehot,
    /// chrom, start, end (0-based half-open); a row per distinct interval in BED order (none
    /// for one without an A/C/G/T base), L the longest interval.
    #[arg(help_heading = "Outputs", long)]
    pub npz: Option<PathBuf>,

    /// Chromosome sizes for a bigWig track: the reference's .fai or a chrom.sizes file
    /// [default: the reference the dataset was built from, when it is still there].
    #[arg(help_heading = "Outputs", long)]
    pub chrom_sizes: Option<PathBuf>,

    /// Expression models trained with --holdout: predict only this part of their split
    /// (all, train, dev, test).
    #[arg(help_heading = "Model options", long, value_enum)]
    pub subset: Option<luminome_engine::models::region::Subset>,

    /// The variants file --vcf copies records from [default: the one the dataset was built from].
    #[arg(help_heading = "Inputs", long)]
    pub variants: Option<PathBuf>,

    /// Dual encoders: the passage corpus to rank (a token dataset tokenized like the model's
    /// pairs, e.g. every window of a genome region); it must hold every query's positive
    /// passage [default: the distinct passages of --dataset].
    #[arg(help_heading = "Inputs", long)]
    pub corpus: Option<PathBuf>,

    /// Dual encoders: write the embeddings (safetensors: query and passage, or embedding for a
    /// token dataset; f32 [n, dim], L2-normalised) with an index TSV beside it.
    #[arg(help_heading = "Outputs", long)]
    pub embeddings: Option<PathBuf>,

    /// Dual encoders: pairs per batch of the in-batch metrics.
    #[arg(help_heading = "Model options", long, default_value_t = 64)]
    pub in_batch_size: usize,

    /// Dual encoders on a token dataset: which encoder embeds it [default: passage].
    #[arg(help_heading = "Model options", long, value_enum)]
    pub side: Option<EmbedSide>,

    /// Published models (Caduceus, PlantCaduceus): score each variant window and its reverse
    /// complement and average the two LLRs (both), or the window as given, as PlantCaduceus'
    /// zero-shot script does (forward) [default: both].
    #[arg(help_heading = "Model options", long, value_enum)]
    pub strands: Option<luminome_engine::models::caduceus::predictor::Strands>,

    /// GET checkpoints without a config.json (a .ckpt/.pth/.pt, or a bare safetensors file):
    /// the attention heads, which the tensors do not record [default: 12, the published
    /// models']. With a config.json it must agree with its num_heads.
    #[arg(help_heading = "Model options", long, value_name = "N")]
    pub get_heads: Option<usize>,

    /// Records per forward pass.
    #[arg(help_heading = "Model options", long, default_value_t = 64)]
    pub batch_size: usize,

    /// Predict only part I of N (1-based) of the dataset's records — contiguous, whole
    /// batches of --batch-size — and write a part file (-o X.part.safetensors: the rows and the
    /// exact scores behind the other outputs) for --gather. One job per part on a cluster.
    #[arg(
        help_heading = "Sharding",
        long,
        value_name = "I/N",
        conflicts_with_all = ["gather", "metrics", "vcf", "bedgraph", "npz", "embeddings"]
    )]
    pub shard: Option<crate::shard::ShardSpec>,

    /// Join the part files of a --shard run (every part 1..N once, any order) into the outputs
    /// of one run: -o, --metrics, --vcf, --bedgraph and --npz byte-identical to an unsharded
    /// run with the same arguments and --batch-size. Give --checkpoint and --dataset as for
    /// the parts.
    #[arg(
        help_heading = "Sharding",
        long,
        value_name = "PART",
        num_args = 1..,
        conflicts_with = "embeddings"
    )]
    pub gather: Vec<PathBuf>,

    #[command(flatten)]
    pub runtime: luminome_cli::RuntimeArgs,
}

impl PredictArgs {
    /// The (first) checkpoint: the model, unless several make an ensemble.
    pub fn checkpoint(&self) -> &std::path::Path {
        &self.checkpoints[0]
    }
}
