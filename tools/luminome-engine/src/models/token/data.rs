//! The labelled token datasets of a classification run and their flags, and the classes of a
//! model.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use clap::Args;
use luminome_io::token_dataset::TokenDataset;

use crate::input::tokens::{check_same_vocab, open_dataset};

/// Flags of every token-classification command.
#[derive(Args, Debug, Clone)]
pub struct ClassificationArgs {
    /// Label values that are the classes, comma-separated [default: those in the training set].
    #[arg(long, value_delimiter = ',')]
    pub classes: Option<Vec<i64>>,
    /// Test token dataset: after training, the best checkpoint is scored on it and the metrics
    /// written to <output>/test_metrics.tsv (metric, value).
    #[arg(help_heading = "Inputs", long)]
    pub test: Option<PathBuf>,
    /// Dev metric that selects the best checkpoint and drives early stopping: dev_mcc,
    /// dev_accuracy, dev_auroc, dev_f1 (higher is better) or dev_loss (lower is better).
    #[arg(long, default_value = "dev_mcc")]
    pub metric: String,
}

impl ClassificationArgs {
    /// Whether higher is better for `--metric`.
    pub fn maximize(&self) -> Result<bool> {
        match self.metric.as_str() {
            "dev_mcc" | "dev_accuracy" | "dev_auroc" | "dev_f1" => Ok(true),
            "dev_loss" => Ok(false),
            m => {
                bail!("--metric {m}: expected dev_mcc, dev_accuracy, dev_auroc, dev_f1 or dev_loss")
            }
        }
    }
}

/// The labelled token datasets of a classification run, opened and checked against each other.
pub struct ClassificationData {
    pub train: TokenDataset,
    pub dev: Option<TokenDataset>,
    pub test: Option<TokenDataset>,
}

impl ClassificationData {
    /// Opens the training, dev and test sets; each must have labels and share the training
    /// set's vocabulary. `command` names the subcommand in messages.
    pub fn open(
        train: &Path,
        dev: Option<&Path>,
        test: Option<&Path>,
        command: &str,
    ) -> Result<Self> {
        let train_ds = open_dataset(train, "training")?;
        if !train_ds.has_labels() {
            bail!(
                "{}: the training dataset has no labels; `{command}` needs a labelled dataset (tokenize a sequence,label table)",
                train.display()
            );
        }
        let other = |p: Option<&Path>, what: &str| -> Result<Option<TokenDataset>> {
            let Some(p) = p else { return Ok(None) };
            let d = open_dataset(p, what)?;
            check_same_vocab(&train_ds, &d)?;
            if !d.has_labels() {
                bail!("{}: the {what} dataset has no labels", d.path().display());
            }
            Ok(Some(d))
        };
        let dev = other(dev, "dev")?;
        let test = other(test, "test")?;
        Ok(Self {
            train: train_ds,
            dev,
            test,
        })
    }

    /// The classes of a new model: `declared` (sorted, duplicates removed) or the label values
    /// of the training set; at least two.
    pub fn label_values(&self, declared: Option<&[i64]>) -> Result<Vec<i64>> {
        let values = match declared {
            Some(c) => {
                let mut c = c.to_vec();
                c.sort();
                c.dedup();
                c
            }
            None => {
                let mut v = self.train.meta().label_values.clone();
                if v.is_empty() {
                    let all: Vec<usize> = (0..self.train.len()).collect();
                    v = self.train.batch(&all)?.labels.unwrap_or_default();
                    v.sort();
                    v.dedup();
                }
                v
            }
        };
        if values.len() < 2 {
            bail!(
                "{}: classification needs at least two classes, the labels are {:?}",
                self.train.path().display(),
                values
            );
        }
        Ok(values)
    }
}

/// Every classifier's classes: at least two, one label value each.
pub fn check_classes(num_classes: usize, label_values: &[i64]) -> Result<()> {
    if num_classes < 2 || label_values.len() != num_classes {
        bail!(
            "a classifier needs at least two classes and one label value per class ({num_classes} classes, label values {label_values:?})"
        );
    }
    Ok(())
}

/// Class index of each label (position in `label_values`); an error names the first label
/// that is not a declared class.
pub fn class_indices(
    labels: &[i64],
    label_values: &[i64],
) -> std::result::Result<Vec<u32>, (usize, i64)> {
    labels
        .iter()
        .enumerate()
        .map(|(i, l)| {
            label_values
                .iter()
                .position(|v| v == l)
                .map(|p| p as u32)
                .ok_or((i, *l))
        })
        .collect()
}

/// Checks a labelled dataset against the classifier's classes; returns class indices.
pub fn dataset_classes(ds: &TokenDataset, label_values: &[i64]) -> Result<Vec<u32>> {
    if !ds.has_labels() {
        bail!(
            "{}: the dataset has no labels; tokenize the table with its label column",
            ds.path().display()
        );
    }
    let all: Vec<usize> = (0..ds.len()).collect();
    let labels = ds.batch(&all)?.labels.unwrap_or_default();
    class_indices(&labels, label_values).map_err(|(i, l)| {
        anyhow::anyhow!(
            "{}: record {}: label {l} is not one of the declared classes {:?}",
            ds.path().display(),
            i + 1,
            label_values
        )
    })
}
