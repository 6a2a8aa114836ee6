//! `--split`: records shared out into train/dev/test datasets in one run, stratified by label.
//!
//! Whole records are assigned, never rows: the windows and reverse complements of one record
//! land in one split, so no sequence is in two of them. Within each label the records are
//! shuffled with `--seed` and the first ⌊n·f + ½⌋ go to test, the next to dev, the rest to
//! train — exact proportions per class, as scikit-learn's stratified split gives them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use rand::seq::SliceRandom;
use rand::SeedableRng;

/// The split names, in the order `--split` takes their fractions.
pub const SPLIT_NAMES: [&str; 3] = ["train", "dev", "test"];

/// Parsed `--split TRAIN,DEV[,TEST]` and its seed.
#[derive(Debug, Clone, PartialEq)]
pub struct SplitPlan {
    /// One fraction per split, in [`SPLIT_NAMES`] order; they sum to 1.
    pub fractions: Vec<f64>,
    pub seed: u64,
}

impl SplitPlan {
    /// Parses `0.8,0.1,0.1` (train, dev, test) or `0.9,0.1` (train, dev).
    pub fn parse(text: &str, seed: u64) -> Result<SplitPlan> {
        let fractions = text
            .split(',')
            .map(|f| {
                let v: f64 = f.trim().parse().map_err(|_| {
                    anyhow::anyhow!("--split {text}: {f:?} is not a number (e.g. 0.8,0.1,0.1)")
                })?;
                if !(0.0..=1.0).contains(&v) {
                    bail!("--split {text}: each fraction is from 0 to 1, got {v}");
                }
                Ok(v)
            })
            .collect::<Result<Vec<f64>>>()?;
        if !(2..=3).contains(&fractions.len()) {
            bail!("--split {text}: give TRAIN,DEV or TRAIN,DEV,TEST fractions (e.g. 0.8,0.1,0.1)");
        }
        let sum: f64 = fractions.iter().sum();
        if (sum - 1.0).abs() > 1e-6 {
            bail!("--split {text}: the fractions add up to {sum}, not 1");
        }
        Ok(SplitPlan { fractions, seed })
    }

    pub fn names(&self) -> &'static [&'static str] {
        &SPLIT_NAMES[..self.fractions.len()]
    }

    /// Assigns each record (by its label) a split index into [`SplitPlan::names`].
    pub fn assign(&self, labels: &[Option<i64>]) -> Vec<u8> {
        let mut by_label: BTreeMap<Option<i64>, Vec<usize>> = BTreeMap::new();
        for (i, l) in labels.iter().enumerate() {
            by_label.entry(*l).or_default().push(i);
        }
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(self.seed);
        let mut out = vec![0u8; labels.len()];
        for records in by_label.values_mut() {
            records.shuffle(&mut rng);
            let n = records.len() as f64;
            let mut at = 0usize;
            // Test first, then dev: each gets its rounded share; train keeps the remainder.
            for split in (1..self.fractions.len()).rev() {
                let take = ((n * self.fractions[split]).round() as usize).min(records.len() - at);
                for &r in &records[at..at + take] {
                    out[r] = split as u8;
                }
                at += take;
            }
        }
        out
    }
}

/// `data/prom.safetensors` → `data/prom.train.safetensors` (the split's dataset path).
pub fn split_output(output: &Path, split: &str) -> PathBuf {
    let name = output
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = name.strip_suffix(".safetensors").unwrap_or(&name);
    output.with_file_name(format!("{stem}.{split}.safetensors"))
}

/// Whether an input can be read twice (`--split` reads it once to count records and labels).
pub fn check_rereadable(path: &Path) -> Result<()> {
    let regular = path != Path::new("-") && std::fs::metadata(path).is_ok_and(|m| m.is_file());
    if !regular {
        bail!(
            "--split reads {} twice (once to count records and labels); give a file, not a pipe or standard input",
            path.display()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stratified_counts_are_exact_per_label() {
        let plan = SplitPlan::parse("0.8,0.1,0.1", 7).unwrap();
        let labels: Vec<Option<i64>> = (0..1000).map(|i| Some(i64::from(i % 4 == 0))).collect();
        let a = plan.assign(&labels);
        for label in [0, 1] {
            let count = |s: u8| {
                (0..1000)
                    .filter(|&i| labels[i] == Some(label) && a[i] == s)
                    .count()
            };
            let n = labels.iter().filter(|&&l| l == Some(label)).count() as f64;
            assert_eq!(count(2), (n * 0.1).round() as usize);
            assert_eq!(count(1), (n * 0.1).round() as usize);
            assert_eq!(count(0) + count(1) + count(2), n as usize);
        }
        assert_eq!(plan.assign(&labels), a, "same seed, same assignment");
        let other = SplitPlan::parse("0.8,0.1,0.1", 8).unwrap().assign(&labels);
        assert_ne!(other, a, "another seed shuffles differently");
    }

    #[test]
    fn fractions_are_checked() {
        assert!(SplitPlan::parse("0.8,0.1", 1).is_err());
        assert!(SplitPlan::parse("0.8,0.2,x", 1).is_err());
        assert!(SplitPlan::parse("1", 1).is_err());
        assert!(SplitPlan::parse("1.5,-0.5", 1).is_err());
        assert_eq!(
            SplitPlan::parse("0.9, 0.1", 1).unwrap().names(),
            ["train", "dev"]
        );
    }

    #[test]
    fn split_paths_sit_beside_the_output() {
        assert_eq!(
            split_output(Path::new("d/prom.safetensors"), "dev"),
            Path::new("d/prom.dev.safetensors")
        );
    }
}
