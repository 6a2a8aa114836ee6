//! The `luminome-importance` command line.

use std::path::PathBuf;

use clap::{Parser, ValueEnum};

/// How token importance is computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Method {
    /// DynamicGated adapters only (gated, gated-max): the gate g_i^final of each token, reduced
    /// over channels (--reduce). With gated-max the gates explain its gated half only; saliency,
    /// ig, ism and deepliftshap explain the whole model.
    Gates,
    /// Gradient × input on the token embeddings, summed over channels; expression models: on
    /// the region features.
    Saliency,
    /// Integrated gradients on the token embeddings (zero-embedding baseline, --ig-steps);
    /// expression models: on the region features from the all-zero input.
    Ig,
    /// Expression models with the attention-pooling head: each region's pooling weight α_i.
    Pooling,
    /// Tabular FT-Transformer models: the last block's attention from [CLS] to each column,
    /// mean over heads.
    Attention,
    /// In-silico saturation mutagenesis (sequence classifiers): each base changed to each other
    /// base, the change in the explained output per position and base (--ism-score).
    Ism,
    /// DeepLIFT/SHAP (CNN and transformer classifiers over nucleotides): each record against --shuffles
    /// dinucleotide shuffles of itself; contributions per base that sum to the change in the
    /// explained output, and the hypothetical contributions TF-MoDISco reads.
    #[value(name = "deepliftshap")]
    DeepLiftShap,
}

impl Method {
    pub fn name(self) -> &'static str {
        match self {
            Self::Gates => "gates",
            Self::Saliency => "saliency",
            Self::Ig => "ig",
            Self::Pooling => "pooling",
            Self::Attention => "attention",
            Self::Ism => "ism",
            Self::DeepLiftShap => "deepliftshap",
        }
    }
}

/// How the per-channel gates g_i^final (d values per token) become one score.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Reduce {
    /// Mean over channels (in [0, 1], like each gate).
    Mean,
    /// Euclidean norm over channels.
    L2,
    /// Largest channel.
    Max,
}

const EXAMPLES: &str = "\
Example (GUE core promoters from test-data; a DynamicGated model from
luminome-train classify --adapter gated -o work/prom_gated):
  luminome-tokenize test-data/gue_prom_core_all/test.csv --max-length 72 -o work/prom_test.safetensors
  luminome-importance --checkpoint work/prom_gated/best.safetensors --dataset work/prom_test.safetensors \\
      --method ig --only-label 1 --records 200 -o work/prom_test.ig.tsv --npz work/prom_test.ig.npz
  # in-silico mutagenesis: every base to every other base (--positions BED to mutate only some)
  luminome-importance --checkpoint work/prom_gated/best.safetensors --dataset work/prom_test.safetensors \\
      --method ism --only-label 1 --records 50 -o work/prom_test.ism.tsv --npz work/prom_test.ism.npz
  # DeepLIFT/SHAP against 20 dinucleotide shuffles per record
  luminome-importance --checkpoint work/prom_gated/best.safetensors --dataset work/prom_test.safetensors \\
      --method deepliftshap --only-label 1 --records 200 -o work/prom_test.dls.tsv \\
      --npz work/prom_test.dls.npz
  # genomic records (BED + reference): also a bedGraph track
  luminome-tokenize test-data/chr22_slice/intervals.bed --reference test-data/chr22_slice/chr22_slice.fa \\
      --max-length 72 --overflow window -o work/tss.safetensors
  luminome-importance --checkpoint work/prom_gated/best.safetensors --dataset work/tss.safetensors \\
      --method gates -o work/tss.gates.tsv --bedgraph work/tss.gates.bedgraph

Outputs:
  TSV: record  name  position  token  start  end  score — one line per sequence token ([CLS],
       [SEP] and padding are left out); position = token index in the row ([CLS] = 0); start/end =
       bases the token covers in the record's window (0-based half-open, row orientation; '.'
       for the hf scheme).
  bedGraph (--bedgraph): per genomic base, the mean score of the tokens covering it (k-mers
       spread back onto bases), averaged over records that cover the same base; records
       without coordinates are skipped (logged).
  --method ism: TSV record name position base A C G T score — per base of the row (0-based,
       row orientation), its reference base, the change in the explained output when it
       becomes A, C, G or T (0 for its own base), and --ism-score; npz adds ism (N, 4, L), the
       same changes; contrib is one-hot x score; bedGraph: the score per genomic base.
  --method deepliftshap: TSV record name position base A C G T score — per base, the
       hypothetical contribution of each base and the contribution of its own (x − reference)·m,
       mean over the shuffles (sums to f(record) − mean f(shuffle)); npz: hypothetical (N, 4, L),
       contrib = one-hot x hypothetical, onehot, references (N, S, 4, L) uint8, output and
       reference_output (N); bedGraph: the contribution per genomic base.
  npz (--npz): contrib (N, 4, L) float32 = one-hot(A, C, G, T) × per-base score, onehot
       (N, 4, L) float32, record (N) int64, length (N) int64 bases; rows as the model saw them
       (reverse complement for '-' rows); L = the longest row in bases. For TF-MoDISco-lite,
       save contrib and onehot to .npy and pass them as -a and -s.
In Python: numpy.load('prom_test.ig.npz')['contrib'].shape

Expression models (luminome-train expression on a luminome-regions dataset):
  luminome-importance --checkpoint expr/best.safetensors --dataset genes.safetensors --subset test \
      --method saliency --top 20 -o test.motifs.tsv --bedgraph test.regions.bedgraph
  TSV (saliency, ig): sample gene gene_id cell_type feature score rank — each feature's
       contribution to the prediction summed over the sample's regions, the --top largest |score|;
  TSV (pooling): sample gene gene_id cell_type slot region chrom start end alpha;
  bedGraph: per region, the mean over samples of alpha or of its summed contribution;
  npz: alpha (S, N) or contrib (S, N, F), region_index (S, N), sample (S).

Tabular models (luminome-train tabular on a CSV/TSV table):
  luminome-importance --checkpoint cv/fold-1/best.safetensors --dataset samples.tsv \\
      --method saliency -o samples.importance.tsv --ranking samples.ranking.tsv
  TSV: sample feature value importance rank — per sample, every column (or the --top), largest
       |importance| first; value is the cell as the table has it. saliency: gradient × input on
       the standardised number (baseline: the training mean; missing scores 0) or on the
       category embedding; ig: integrated gradients from that baseline; attention
       (FT-Transformer): the last block's [CLS] → column attention, mean over heads.
  --ranking: feature, mean_abs_importance, mean_importance, n, rank over the scored samples.";

/// Token and base importance of a trained Luminome sequence classifier; region and motif
/// importance of an expression model.
#[derive(Debug, Clone, Parser)]
#[command(name = "luminome-importance", version, about, after_help = EXAMPLES)]
pub struct ImportanceArgs {
    /// Classifier checkpoint (luminome-train classify) or expression checkpoint (luminome-train
    /// expression).
    #[arg(help_heading = "Inputs", long)]
    pub checkpoint: PathBuf,

    /// Token dataset (luminome-tokenize output) tokenized like the model's training data; a
    /// region dataset (luminome-regions) for expression models.
    #[arg(help_heading = "Inputs", long)]
    pub dataset: PathBuf,

    /// gates (DynamicGated adapters: gated, gated-max), saliency (gradient × input), ig (integrated gradients), ism
    /// (in-silico mutagenesis, sequence classifiers) or pooling (attention-pooling expression
    /// models).
    #[arg(long, value_enum)]
    pub method: Method,

    /// Per-token scores (TSV).
    #[arg(help_heading = "Outputs", short, long)]
    pub output: PathBuf,

    /// Also a per-base track on genomic coordinates (records with coordinates only): bedGraph,
    /// or bigWig when the name ends in .bw/.bigwig (also --bigwig; needs --chrom-sizes).
    #[arg(help_heading = "Outputs", long, alias = "bigwig")]
    pub bedgraph: Option<PathBuf>,

    /// Chromosome sizes for a bigWig track: the reference's .fai or a chrom.sizes file.
    #[arg(help_heading = "Outputs", long)]
    pub chrom_sizes: Option<PathBuf>,

    /// Also an .npz with contrib / onehot arrays (N, 4, L) for TF-MoDISco-style tools.
    #[arg(help_heading = "Outputs", long)]
    pub npz: Option<PathBuf>,

    /// Only the first N selected records.
    #[arg(long)]
    pub records: Option<usize>,

    /// Only records whose true label is this value (needs a labelled dataset).
    #[arg(long)]
    pub only_label: Option<i64>,

    /// Class (label value; tabular models: a class name) whose output is explained by saliency
    /// / ig [default: the larger label value for two classes (tabular: the second class), each
    /// record's predicted class for more]. The explained output is logit[target] − mean over
    /// classes of the logits.
    #[arg(long)]
    pub target: Option<String>,

    /// --method gates: how the d gate channels of a token become one score.
    #[arg(long, value_enum, default_value_t = Reduce::Mean)]
    pub reduce: Reduce,

    /// --method ig: interpolation steps (midpoint Riemann sum).
    #[arg(long, default_value_t = 32)]
    pub ig_steps: usize,

    /// --method ism: a position's one score (TSV `score`, bedGraph, npz `contrib`):
    /// ref-minus-mean (f(reference) − mean f over its 3 substitutions) or max-abs (the
    /// substitution with the largest |Δf|, signed).
    #[arg(long, value_enum, default_value = "ref-minus-mean")]
    pub ism_score: crate::ism::IsmScore,

    /// --method ism: mutate only the bases inside these intervals (BED, 0-based half-open; or
    /// a VCF/BCF, named .vcf, .vcf.gz or .bcf: each record's REF bases) of
    /// records with genomic coordinates; the others are left out of the TSV and 0 in the npz,
    /// and records with no base inside are skipped (counted).
    #[arg(help_heading = "Inputs", long)]
    pub positions: Option<PathBuf>,

    /// --method ism: mutated rows per forward pass (3 per base of a record, plus its reference).
    #[arg(long, default_value_t = 256)]
    pub ism_rows: usize,

    /// --method deepliftshap: dinucleotide-shuffled references per record (tangermeme's
    /// n_shuffles); each costs two rows of the record's forward and backward pass.
    #[arg(long, default_value_t = 20)]
    pub shuffles: usize,

    /// --method deepliftshap: seed of the shuffles (a record's references depend only on the
    /// seed and its record number).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,

    /// Expression and tabular models: features reported per sample (largest |score| first)
    /// [tabular: all columns].
    #[arg(long)]
    pub top: Option<usize>,

    /// Tabular models: also the global ranking of the columns (TSV: feature, mean |score|,
    /// mean score, samples, rank).
    #[arg(help_heading = "Outputs", long)]
    pub ranking: Option<PathBuf>,

    /// Expression models trained with --holdout: explain only this part of their split.
    #[arg(long, value_enum)]
    pub subset: Option<luminome_engine::models::region::Subset>,

    /// Records per forward/backward pass.
    #[arg(long, default_value_t = 16)]
    pub batch_size: usize,

    /// Sequence classifiers: explain part I of N of the selected records (whole passes) into a
    /// part file (-o X.part.safetensors; --npz and --bedgraph say what it keeps, their paths
    /// are not written), one job per part on a cluster; then --gather the parts with the same
    /// arguments (docs/scale-out.md).
    #[arg(
        help_heading = "Scale-out",
        long,
        value_name = "I/N",
        conflicts_with = "gather"
    )]
    pub shard: Option<luminome_cli::shard::ShardSpec>,

    /// Join the part files of --shard 1/N .. N/N into the outputs of one run with these
    /// arguments (the same bytes); nothing is computed again.
    #[arg(help_heading = "Scale-out", long, value_name = "PARTS", num_args = 1..)]
    pub gather: Vec<PathBuf>,

    #[command(flatten)]
    pub runtime: luminome_cli::RuntimeArgs,
}
