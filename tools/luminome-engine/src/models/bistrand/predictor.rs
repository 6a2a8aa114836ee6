//! The bi-strand model under `luminome-predict`.
//!
//! On a dataset of variant windows (luminome-mask-pairs --variants, the site masked on both
//! strands): per ALT allele, log-likelihood ratios at the site from each strand's head, softmax
//! over A, C, G, T only: LLR_a = ln P_a(ALT) − ln P_a(REF); LLR_b the same from strand B's head,
//! on B's bases (the complements of REF and ALT for the complement pairing); LLR = (LLR_a +
//! LLR_b) / 2, the mean of the two heads' log-ratios. Negative: the model finds the ALT allele
//! less likely (PlantCaduceus' convention). Also as a VCF (the input's records with the scores in
//! INFO) and a bedGraph (per position, the lowest LLR of its ALT alleles).
//!
//! On any other paired dataset: masked-base accuracy and loss per record and strand, with
//! accuracy and perplexity over the dataset as metrics.

use std::path::Path;

use anyhow::{bail, Context, Result};
use candle_core::{DType, Device, Tensor, D};
use luminome_io::atomic::Commit;
use luminome_io::pair_dataset::{MaskMode, PairDataset, PairIndexRow, Pairing};
use luminome_io::variant_scores::AlleleScore;

use super::config::BiStrandConfig;
use super::model::BiStrandModel;
use super::task::PairTensors;
use crate::checkpoint::{read_checkpoint_meta, Checkpoint};
use crate::predict::variants::{
    base_class, variant_columns, variant_values, windows_of, VariantOutputs,
};
use crate::predict::{ExtraOutputs, PredictionRow, Predictor, Tallied, Tally, WritesExtraOutputs};

/// A paired dataset checked against a bi-strand checkpoint.
pub struct PairInput {
    pub checkpoint: Checkpoint,
    pub dataset: PairDataset,
    pub index: Vec<PairIndexRow>,
    pub device: Device,
}

impl PairInput {
    pub fn open(checkpoint: &Path, dataset: &Path, device: Device) -> Result<Self> {
        let meta = read_checkpoint_meta(checkpoint)?;
        let Some(config) = meta.model.get::<BiStrandConfig>() else {
            bail!(
                "{}: this checkpoint holds a {} (kind {}); paired datasets are scored by a bi-strand masked LM (luminome-train bistrand)",
                checkpoint.display(),
                meta.model.family(),
                meta.model.kind()
            );
        };
        meta.check_dataset_kind(checkpoint, dataset)?;
        let ds = PairDataset::open(dataset)?;
        meta.check_tokenizer(checkpoint, dataset, &ds.meta().tokenizer)?;
        if let Some(p) = meta.pairing {
            if p != ds.meta().pairing {
                bail!(
                    "{}: its pairs are {} pairs, the model in {} was trained on {} pairs; build them with luminome-mask-pairs --pairing {}",
                    dataset.display(),
                    ds.meta().pairing.name(),
                    checkpoint.display(),
                    p.name(),
                    p.name()
                );
            }
        }
        if ds.length() > config.max_length {
            bail!(
                "{}: rows of {} bases are longer than the model's max length {}",
                dataset.display(),
                ds.length(),
                config.max_length
            );
        }
        let index = ds.read_index()?;
        let checkpoint = Checkpoint::load_frozen(checkpoint, &device)?;
        Ok(Self {
            checkpoint,
            dataset: ds,
            index,
            device,
        })
    }

    pub fn model(&self) -> Result<&BiStrandModel> {
        self.checkpoint.get::<BiStrandConfig>()
    }

    /// Whether every record is a variant window masked at its site.
    pub fn is_variant_dataset(&self) -> bool {
        self.dataset.meta().masking.mode == MaskMode::VariantSite
            && self
                .index
                .iter()
                .all(|r| r.variant.is_some() && r.site.is_some())
    }

    /// Log-probabilities `[P, 4]` of both strands at the masked positions of `records`, with the
    /// row of each position.
    pub fn log_probs(&self, records: &[usize]) -> Result<MaskedLogProbs> {
        let batch = self.dataset.batch(records)?;
        let t = PairTensors::new(&batch, &self.dataset.meta().tokenizer, &self.device)
            .with_context(|| format!("{}", self.dataset.path().display()))?;
        let rows: Vec<usize> = batch
            .mask_positions
            .iter()
            .enumerate()
            .filter(|(_, &m)| m != 0)
            .map(|(i, _)| i / batch.length)
            .collect();
        if t.is_empty() {
            return Ok(MaskedLogProbs {
                a: Vec::new(),
                b: Vec::new(),
                rows,
                tensors: t,
            });
        }
        let out = t.logits(self.model()?, None)?;
        let lp = |x: &Tensor| -> Result<Vec<Vec<f32>>> {
            Ok(candle_nn::ops::log_softmax(&x.to_dtype(DType::F32)?, D::Minus1)?.to_vec2()?)
        };
        Ok(MaskedLogProbs {
            a: lp(&out.a)?,
            b: lp(&out.b)?,
            rows,
            tensors: t,
        })
    }
}

/// Log-probabilities over A, C, G, T at the masked positions of a batch.
pub struct MaskedLogProbs {
    /// `[P][4]`, strand A.
    pub a: Vec<Vec<f32>>,
    pub b: Vec<Vec<f32>>,
    /// The batch row of each position.
    pub rows: Vec<usize>,
    pub tensors: PairTensors,
}

pub struct PairPredictor {
    input: PairInput,
    variants: bool,
    outputs: VariantOutputs,
    /// Evaluation mode: Σ loss, correct per strand and positions.
    totals: [f64; 5],
}

impl PairPredictor {
    pub fn open(checkpoint: &Path, dataset: &Path, device: Device) -> Result<Self> {
        let input = PairInput::open(checkpoint, dataset, device)?;
        Ok(Self {
            variants: input.is_variant_dataset(),
            outputs: VariantOutputs::default().of_dataset(&input.dataset),
            input,
            totals: [0.0; 5],
        })
    }

    fn score_variants(&mut self, records: &[usize]) -> Result<Vec<PredictionRow>> {
        let index = &self.input.index;
        let (windows, window_of) =
            windows_of(records, |r| index[r].variant.as_ref().map(|v| v.line));
        let MaskedLogProbs {
            a: lp_a,
            b: lp_b,
            rows,
            ..
        } = self.input.log_probs(&windows)?;
        if rows.len() != windows.len() {
            bail!(
                "{}: a variant window must have exactly its site masked",
                self.input.dataset.path().display()
            );
        }
        let complement = self.input.dataset.meta().pairing == Pairing::Complement;
        let mut out = Vec::with_capacity(records.len());
        for (k, &r) in records.iter().enumerate() {
            let row = &self.input.index[r];
            let v = row
                .variant
                .as_ref()
                .context("internal: variant row without variant")?;
            let (Some(rc), Some(ac)) = (base_class(&v.reference), base_class(&v.alternate)) else {
                bail!(
                    "{}: record {}: {}>{} is not a single-base substitution",
                    self.input.dataset.path().display(),
                    r + 1,
                    v.reference,
                    v.alternate
                );
            };
            let (rb, ab) = if complement {
                (3 - rc, 3 - ac)
            } else {
                (rc, ac)
            };
            let w = window_of[k];
            let llr_a = lp_a[w][ac] - lp_a[w][rc];
            let llr_b = lp_b[w][ab] - lp_b[w][rb];
            let llr = 0.5 * (llr_a + llr_b);
            self.outputs
                .record(r, v, AlleleScore { llr, llr_a, llr_b })?;
            let values = variant_values(v, [Some(llr), Some(llr_a), Some(llr_b)], &row.info);
            out.push(PredictionRow {
                record: row.record,
                name: row.name.clone(),
                values,
            });
        }
        Ok(out)
    }

    fn evaluate(&mut self, records: &[usize]) -> Result<Vec<PredictionRow>> {
        let MaskedLogProbs {
            a: lp_a,
            b: lp_b,
            rows,
            tensors: t,
        } = self.input.log_probs(records)?;
        // Per record: positions, Σ loss and correct per strand.
        let mut per = vec![[0f64; 5]; records.len()];
        for (p, &row) in rows.iter().enumerate() {
            let argmax = |v: &[f32]| (0..4).fold(0, |b, k| if v[k] > v[b] { k } else { b });
            let (ta, tb) = (t.targets_a[p] as usize, t.targets_b[p] as usize);
            let s = &mut per[row];
            s[0] += 1.0;
            s[1] -= f64::from(lp_a[p][ta]);
            s[2] -= f64::from(lp_b[p][tb]);
            s[3] += f64::from(u8::from(argmax(&lp_a[p]) == ta));
            s[4] += f64::from(u8::from(argmax(&lp_b[p]) == tb));
        }
        let mut out = Vec::with_capacity(records.len());
        for (k, &r) in records.iter().enumerate() {
            let s = per[k];
            for (acc, v) in self.totals.iter_mut().zip(s) {
                *acc += v;
            }
            let mean = |x: f64| {
                if s[0] > 0.0 {
                    format!("{:.6}", x / s[0])
                } else {
                    "NA".into()
                }
            };
            let row = &self.input.index[r];
            out.push(PredictionRow {
                record: row.record,
                name: row.name.clone(),
                values: vec![
                    (s[0] as u64).to_string(),
                    (s[3] as u64).to_string(),
                    (s[4] as u64).to_string(),
                    mean(s[1]),
                    mean(s[2]),
                ],
            });
        }
        Ok(out)
    }
}

impl Predictor for PairPredictor {
    fn len(&self) -> usize {
        self.input.dataset.len()
    }

    fn has_truth(&self) -> bool {
        !self.variants
    }

    fn columns(&self) -> Vec<String> {
        if self.variants {
            variant_columns(
                ["llr", "llr_a", "llr_b"],
                &self.input.dataset.meta().info_keys,
            )
        } else {
            ["masked", "correct_a", "correct_b", "loss_a", "loss_b"]
                .map(String::from)
                .to_vec()
        }
    }

    fn predict(&mut self, records: &[usize]) -> Result<Vec<PredictionRow>> {
        if self.variants {
            self.score_variants(records)
        } else {
            self.evaluate(records)
        }
    }

    fn metrics(&self) -> Result<Option<Vec<(String, String)>>> {
        if self.variants {
            return Ok(None);
        }
        let [n, la, lb, ca, cb] = self.totals;
        let n = n.max(1.0);
        Ok(Some(vec![
            (
                "masked_positions".into(),
                (self.totals[0] as u64).to_string(),
            ),
            ("accuracy_a".into(), (ca / n).to_string()),
            ("accuracy_b".into(), (cb / n).to_string()),
            ("perplexity_a".into(), (la / n).exp().to_string()),
            ("perplexity_b".into(), (lb / n).exp().to_string()),
        ]))
    }

    fn extra_outputs(&mut self) -> Option<&mut dyn WritesExtraOutputs> {
        Some(self)
    }

    /// Variant datasets only: evaluation mode's sums are not kept per record.
    fn tallied(&mut self) -> Option<&mut dyn Tallied> {
        if self.variants {
            Some(self)
        } else {
            None
        }
    }
}

impl WritesExtraOutputs for PairPredictor {
    fn check_extra(&self, extra: &ExtraOutputs) -> Result<()> {
        VariantOutputs::check_extra(&self.input.dataset, self.variants, extra)
    }

    fn write_extra(&mut self, extra: &ExtraOutputs) -> Result<Vec<Box<dyn Commit>>> {
        self.outputs.write_extra(&self.input.dataset, extra)
    }
}

impl Tallied for PairPredictor {
    fn start_tally(&mut self) {
        self.outputs.start_tally();
    }

    fn tally(&self) -> Tally {
        self.outputs.tally()
    }

    fn replay(&mut self, tally: &Tally) -> Result<()> {
        let index = &self.input.index;
        self.outputs
            .replay(tally, |r| index.get(r).and_then(|row| row.variant.as_ref()))
    }
}
