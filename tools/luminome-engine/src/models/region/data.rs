//! The samples a region model trains and selects on: the datasets, the split, the checks every
//! used sample passes, and the feature statistics the encoder standardises with.

use std::path::Path;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use candle_core::Tensor;
use candle_nn::VarMap;
use luminome_io::region_dataset::{RegionDataset, SampleRow};

use super::encoder::STANDARDISATION;
use super::holdout::{Holdout, HoldoutArgs, Subset};

/// Training and dev samples (indices into their datasets).
pub struct RegionData {
    pub train: Arc<RegionDataset>,
    pub train_records: Vec<usize>,
    /// The dev set: the training dataset's dev split, or a --dev file.
    pub dev: Option<(Arc<RegionDataset>, Vec<usize>)>,
    pub holdout: Option<Holdout>,
    /// Samples left out for having no region (with --skip-empty-samples).
    pub skipped_empty: usize,
}

/// Opens a region dataset with its samples table.
pub fn open_regions(path: &Path, what: &str) -> Result<(RegionDataset, Vec<SampleRow>)> {
    let ds =
        RegionDataset::open(path).with_context(|| format!("cannot open the {what} dataset"))?;
    if ds.is_empty() {
        bail!("{}: the {what} dataset has no samples", path.display());
    }
    let samples = ds.read_samples()?;
    Ok((ds, samples))
}

/// Refuses (or, with `skip`, drops and counts) samples whose window holds no region: a model
/// has nothing to read for them, and a silent prediction from padding would look like one.
fn drop_empty(
    ds: &RegionDataset,
    samples: &[SampleRow],
    records: Vec<usize>,
    skip: bool,
    skipped: &mut usize,
) -> Result<Vec<usize>> {
    let empty: Vec<usize> = records
        .iter()
        .copied()
        .filter(|&r| samples[r].regions_used == 0)
        .collect();
    if empty.is_empty() {
        return Ok(records);
    }
    if !skip {
        let s = &samples[empty[0]];
        bail!(
            "{}: sample {} ({} in {}) has no region in its window{}; leave such samples out with --skip-empty-samples",
            ds.path().display(),
            s.sample,
            s.gene,
            s.cell_type,
            if empty.len() > 1 {
                format!(", and so do {} more", empty.len() - 1)
            } else {
                String::new()
            }
        );
    }
    *skipped += empty.len();
    Ok(records
        .into_iter()
        .filter(|&r| samples[r].regions_used > 0)
        .collect())
}

impl RegionData {
    /// The training set (`train`, split by `holdout`) and the dev set (the split's, or `dev`).
    pub fn open(
        train: &Path,
        dev: Option<&Path>,
        holdout: &HoldoutArgs,
        skip_empty: bool,
    ) -> Result<Self> {
        let (ds, samples) = open_regions(train, "training")?;
        let split = holdout.holdout(&samples, ds.cell_types(), &train.display().to_string())?;
        if split.is_some() && dev.is_some() {
            bail!("--dev and --holdout both choose a dev set: give one of them");
        }
        let mut skipped = 0;
        let subset = |want: Subset| -> Vec<usize> {
            (0..ds.len())
                .filter(|&r| {
                    split
                        .as_ref()
                        .map_or(Subset::Train, |h| h.assign(&samples[r]))
                        == want
                })
                .collect()
        };
        let train_records = drop_empty(
            &ds,
            &samples,
            subset(Subset::Train),
            skip_empty,
            &mut skipped,
        )?;
        let dev_records = split
            .is_some()
            .then(|| drop_empty(&ds, &samples, subset(Subset::Dev), skip_empty, &mut skipped))
            .transpose()?;
        if train_records.is_empty() {
            match skipped {
                0 => bail!(
                    "{}: no training samples left after the holdout",
                    train.display()
                ),
                n => bail!(
                    "{}: no training samples left: --skip-empty-samples left out {n} sample(s) with no region in their window, and no other sample is in the training split (do the genes and the regions name their chromosomes alike? luminome-regions counts the genes without a region on stderr)",
                    train.display()
                ),
            }
        }
        let ds = Arc::new(ds);
        let dev = match (dev, dev_records) {
            (Some(path), _) => {
                let (d, dev_samples) = open_regions(path, "dev")?;
                if d.feature_names() != ds.feature_names() {
                    bail!(
                        "{}: its {} features differ from the training set's {} ({}); build both with the same motifs and clusters",
                        path.display(),
                        d.feature_names().len(),
                        ds.feature_names().len(),
                        train.display()
                    );
                }
                let records = drop_empty(
                    &d,
                    &dev_samples,
                    (0..d.len()).collect(),
                    skip_empty,
                    &mut skipped,
                )?;
                Some((Arc::new(d), records))
            }
            (None, Some(records)) if !records.is_empty() => Some((ds.clone(), records)),
            (None, Some(_)) => bail!(
                "{}: the dev block holds no samples; choose another --dev-block",
                train.display()
            ),
            (None, None) => None,
        };
        Ok(Self {
            train: ds,
            train_records,
            dev,
            holdout: split,
            skipped_empty: skipped,
        })
    }

    /// A line for the run's log.
    pub fn describe(&self) -> String {
        let mut s = format!("{} training samples", self.train_records.len());
        if let Some((_, d)) = &self.dev {
            s.push_str(&format!(", {} dev samples", d.len()));
        }
        if let Some(h) = &self.holdout {
            s.push_str(&format!(" ({})", h.describe()));
        }
        if self.skipped_empty > 0 {
            s.push_str(&format!(
                ", {} samples without regions left out",
                self.skipped_empty
            ));
        }
        s
    }
}

/// Per-feature mean and 1 / standard deviation over the real regions of `records` (a constant
/// feature gets scale 1), accumulated in f64.
pub fn feature_statistics(ds: &RegionDataset, records: &[usize]) -> Result<(Vec<f32>, Vec<f32>)> {
    let f = ds.n_features();
    let (mut sum, mut sq, mut count) = (vec![0f64; f], vec![0f64; f], 0u64);
    for chunk in records.chunks(256) {
        let b = ds.batch(chunk)?;
        for (slot, &m) in b.region_mask.iter().enumerate() {
            if m == 0 {
                continue;
            }
            count += 1;
            for (k, &v) in b.features[slot * f..(slot + 1) * f].iter().enumerate() {
                if !v.is_finite() {
                    bail!(
                        "{}: a non-finite feature value ({} of a region of sample {})",
                        ds.path().display(),
                        ds.feature_names()[k],
                        chunk[slot / b.n_regions]
                    );
                }
                sum[k] += v as f64;
                sq[k] += (v as f64) * (v as f64);
            }
        }
    }
    let n = count.max(1) as f64;
    let mean: Vec<f32> = sum.iter().map(|s| (s / n) as f32).collect();
    let scale = (0..f)
        .map(|k| {
            let var = (sq[k] / n - (sum[k] / n).powi(2)).max(0.0);
            if var > 1e-12 {
                (1.0 / var.sqrt()) as f32
            } else {
                1.0
            }
        })
        .collect();
    Ok((mean, scale))
}

/// Writes the standardisation into an encoder's buffers (`prefix`: the encoder's, e.g.
/// `encoder.`).
pub fn set_standardisation(
    varmap: &VarMap,
    prefix: &str,
    mean: &[f32],
    scale: &[f32],
) -> Result<()> {
    let data = varmap.data().lock().expect("var map lock");
    for (name, values) in STANDARDISATION.iter().zip([mean, scale]) {
        let key = format!("{prefix}{name}");
        let var = data
            .get(&key)
            .with_context(|| format!("internal: no parameter {key}"))?;
        var.set(&Tensor::from_slice(values, values.len(), var.device())?)?;
    }
    Ok(())
}

/// Parameter names the optimizer updates: all but the standardisation buffers.
pub fn trainable(names: Vec<String>) -> Vec<String> {
    names
        .into_iter()
        .filter(|n| !STANDARDISATION.iter().any(|s| n.ends_with(s)))
        .collect()
}

/// The usual seeded initialisation (`nn::init`), then the standardisation buffers at the
/// identity (mean 0, scale 1) until the training set's statistics are written.
pub fn init_region_parameters(varmap: &VarMap, seed: u64) -> Result<()> {
    crate::nn::init::init_parameters(varmap, seed, None)?;
    let data = varmap.data().lock().expect("var map lock");
    for (name, var) in data.iter() {
        if name.ends_with(STANDARDISATION[1]) {
            var.set(&var.as_tensor().ones_like()?)?;
        }
    }
    Ok(())
}
