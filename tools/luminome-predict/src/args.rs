//! The `luminome-predict` command line.

use std::path::PathBuf;

use clap::Parser;

const EXAMPLES: &str = "\
Example (GUE core promoters from test-data; train first with luminome-train classify):
  luminome-tokenize test-data/gue_prom_core_all/test.csv --max-length 72 -o prom_test.safetensors
  luminome-predict --checkpoint prom_model/best.safetensors --dataset prom_test.safetensors \\
      -o prom_test.predictions.tsv --metrics prom_test.metrics.tsv

Output (TSV with a header, one line per record, in dataset order):
  record  name  [label]  prob_<label value> (one column per class)  predicted
record is the 0-based row of the dataset, name comes from its .index.tsv, label is the true
label value (only when the dataset has labels), predicted is the label value with the highest
probability. With labels, metrics (accuracy, AUROC, AUPRC, F1, MCC, sensitivity, specificity,
confusion matrix) go to stderr and, with --metrics, to a TSV (metric, value).
In Python: pandas.read_csv('prom_test.predictions.tsv', sep='\\t')";

/// Runs a trained Luminome model on a dataset and writes its predictions.
#[derive(Debug, Clone, Parser)]
#[command(name = "luminome-predict", version, about, after_help = EXAMPLES)]
pub struct PredictArgs {
    /// Model checkpoint (.safetensors written by luminome-train).
    #[arg(long)]
    pub checkpoint: PathBuf,

    /// Dataset to predict on (a token dataset from luminome-tokenize for sequence models),
    /// tokenized like the model's training data.
    #[arg(long)]
    pub dataset: PathBuf,

    /// Predictions TSV.
    #[arg(short, long)]
    pub output: PathBuf,

    /// Also write the metrics as a TSV (metric, value); needs a dataset with labels.
    #[arg(long)]
    pub metrics: Option<PathBuf>,

    /// Records per forward pass.
    #[arg(long, default_value_t = 64)]
    pub batch_size: usize,

    #[command(flatten)]
    pub runtime: luminome_cli::RuntimeArgs,
}
