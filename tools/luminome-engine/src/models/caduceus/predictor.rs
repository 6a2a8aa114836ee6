//! A published Caduceus model under `luminome-predict`: zero-shot variant effects on a dataset
//! of variant windows (luminome-mask-pairs --variants --like CHECKPOINT, the site masked).
//!
//! PlantCaduceus' score: at the masked site, a softmax over the A, C, G, T logits only, and
//! LLR = ln P(ALT) − ln P(REF) (negative: the model finds ALT less likely). Here on both strands
//! (post-hoc conjoining, Caduceus' `conjoin_test`): the window as given (strand A of the pair)
//! and its reverse complement (strand B read backwards, the site at the mirrored position, the
//! alleles complemented), LLR = (LLR_fwd + LLR_rc) / 2. `--strands forward` gives PlantCaduceus'
//! published script's single-strand score. For an RC-equivariant (rcps) model the two agree up to
//! rounding whenever the window is symmetric around the site; averaging costs one more pass.
//!
//! Outputs as for bi-strand models: the TSV (`llr`, `llr_fwd`, `llr_rc`), the VCF (LLR, LLR_A =
//! forward, LLR_B = reverse complement) and the track of the lowest LLR per position.

use anyhow::{bail, Context, Result};
use candle_core::{DType, Device, Tensor, D};
use luminome_io::atomic::Commit;
use luminome_io::masking::base_ids;
use luminome_io::pair_dataset::{MaskMode, PairDataset, PairIndexRow, Pairing};
use luminome_io::variant_scores::AlleleScore;

use super::Caduceus;
use crate::predict::variants::{windows_of, VariantOutputs};
use crate::predict::{ExtraOutputs, PredictionRow, Predictor};

/// Which windows a score averages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Strands {
    /// The window and its reverse complement (the default).
    #[default]
    Both,
    /// The window as given (PlantCaduceus' zero-shot script).
    Forward,
}

/// What LLR, LLR_A and LLR_B mean in the scored VCF.
const VCF_DESCRIPTIONS: [&str; 3] = [
    "ln P(ALT) - ln P(REF) at the masked site (softmax over A/C/G/T), mean of the window and its reverse complement (--strands both) or the window's (--strands forward); negative: the model finds ALT less likely",
    "ln P(ALT) - ln P(REF) from the window as given",
    "ln P(comp ALT) - ln P(comp REF) from the window's reverse complement (. with --strands forward)",
];

pub struct CaduceusPredictor {
    model: Caduceus,
    dataset: PairDataset,
    index: Vec<PairIndexRow>,
    /// Model ids of A, C, G, T.
    bases: [u32; 4],
    strands: Strands,
    outputs: VariantOutputs,
    device: Device,
}

impl CaduceusPredictor {
    /// Opens the checkpoint `arg` (folder or `hf:`) and `dataset`, with every check made before
    /// any output.
    pub fn open(arg: &str, dataset: &std::path::Path, device: Device) -> Result<Self> {
        let ds = PairDataset::open(dataset)?;
        let model = Caduceus::open(arg, &device)?;
        let theirs = &ds.meta().tokenizer;
        if !theirs.same_tokenization(&model.tokenizer) {
            bail!(
                "{}: its ids are in another vocabulary ({}) than the model's ({}; {arg}); build the dataset with luminome-mask-pairs --like {arg}",
                dataset.display(),
                theirs.describe(),
                model.tokenizer.describe()
            );
        }
        let index = ds.read_index()?;
        let variants = ds.meta().masking.mode == MaskMode::VariantSite
            && index
                .iter()
                .all(|r| r.variant.is_some() && r.site.is_some());
        if !variants {
            bail!(
                "{}: a published model scores variant windows (luminome-mask-pairs --variants --like {arg})",
                dataset.display()
            );
        }
        if ds.meta().pairing != Pairing::Complement {
            bail!(
                "{}: its pairs are {} pairs; the reverse-complement window is read from complement pairs (luminome-mask-pairs --pairing complement)",
                dataset.display(),
                ds.meta().pairing.name()
            );
        }
        let bases = base_ids(&model.tokenizer).context("the model's vocabulary has no A/C/G/T")?;
        Ok(Self {
            model,
            dataset: ds,
            index,
            bases,
            strands: Strands::default(),
            outputs: VariantOutputs::described(VCF_DESCRIPTIONS),
            device,
        })
    }

    pub fn with_strands(mut self, strands: Strands) -> Self {
        self.strands = strands;
        self
    }

    /// Log-probabilities over A, C, G, T at the site of each window row: forward, and (both
    /// strands) reverse complement.
    fn site_log_probs(&self, windows: &[usize]) -> Result<(Vec<BaseLogProbs>, Vec<BaseLogProbs>)> {
        let batch = self.dataset.batch(windows)?;
        let l = batch.length;
        let sep = self
            .model
            .tokenizer
            .add_sep
            .then_some(self.model.tokenizer.sep_id)
            .flatten();
        let width = l + usize::from(sep.is_some());
        let both = self.strands == Strands::Both;
        let rows = windows.len() * if both { 2 } else { 1 };
        let mut ids = Vec::with_capacity(rows * width);
        let mut sites = Vec::with_capacity(rows);
        for (k, &w) in windows.iter().enumerate() {
            let site = self.index[w]
                .site
                .context("internal: variant row without site")?;
            if site >= l {
                bail!(
                    "{}: record {}: site {site} outside its window of {l}",
                    self.dataset.path().display(),
                    w + 1
                );
            }
            ids.extend_from_slice(&batch.ids_a[k * l..(k + 1) * l]);
            ids.extend(sep);
            sites.push(site);
        }
        if both {
            for (k, &w) in windows.iter().enumerate() {
                let site = self.index[w].site.unwrap_or(0);
                ids.extend(batch.ids_b[k * l..(k + 1) * l].iter().rev());
                ids.extend(sep);
                sites.push(l - 1 - site);
            }
        }
        let ids = Tensor::from_vec(ids, (rows, width), &self.device)?;
        let logits = self.model.model.forward(&ids)?.logits;
        let idx = Tensor::from_slice(&self.bases, 4, &self.device)?;
        let mut out = Vec::with_capacity(rows);
        for (r, &site) in sites.iter().enumerate() {
            let at = logits.get(r)?.get(site)?.index_select(&idx, 0)?;
            let lp: Vec<f32> =
                candle_nn::ops::log_softmax(&at.to_dtype(DType::F32)?, D::Minus1)?.to_vec1()?;
            out.push([lp[0], lp[1], lp[2], lp[3]]);
        }
        let rc = if both {
            out.split_off(windows.len())
        } else {
            Vec::new()
        };
        Ok((out, rc))
    }
}

/// ln P over A, C, G, T at one site.
type BaseLogProbs = [f32; 4];

/// A, C, G, T → 0..3.
fn class_of(base: &str) -> Option<usize> {
    ["A", "C", "G", "T"]
        .iter()
        .position(|b| b.eq_ignore_ascii_case(base))
}

impl Predictor for CaduceusPredictor {
    fn len(&self) -> usize {
        self.dataset.len()
    }

    fn has_truth(&self) -> bool {
        false
    }

    fn columns(&self) -> Vec<String> {
        let mut c: Vec<String> = [
            "chrom",
            "pos",
            "id",
            "ref",
            "alt",
            "ref_match",
            "llr",
            "llr_fwd",
            "llr_rc",
        ]
        .map(String::from)
        .to_vec();
        c.extend(
            self.dataset
                .meta()
                .info_keys
                .iter()
                .map(|k| format!("info_{k}")),
        );
        c
    }

    fn predict(&mut self, records: &[usize]) -> Result<Vec<PredictionRow>> {
        let index = &self.index;
        let (windows, window_of) =
            windows_of(records, |r| index[r].variant.as_ref().map(|v| v.line));
        let (fwd, rc) = self.site_log_probs(&windows)?;
        let mut out = Vec::with_capacity(records.len());
        for (k, &r) in records.iter().enumerate() {
            let row = &self.index[r];
            let v = row
                .variant
                .as_ref()
                .context("internal: variant row without variant")?;
            let (Some(rc_class), Some(ac)) = (class_of(&v.reference), class_of(&v.alternate))
            else {
                bail!(
                    "{}: record {}: {}>{} is not a single-base substitution",
                    self.dataset.path().display(),
                    r + 1,
                    v.reference,
                    v.alternate
                );
            };
            let w = window_of[k];
            let llr_fwd = fwd[w][ac] - fwd[w][rc_class];
            // On the reverse complement the alleles are complemented (class 3 − c).
            let llr_rc = rc.get(w).map(|p| p[3 - ac] - p[3 - rc_class]);
            let llr = match llr_rc {
                Some(x) => 0.5 * (llr_fwd + x),
                None => llr_fwd,
            };
            self.outputs.record(
                v,
                AlleleScore {
                    llr,
                    llr_a: llr_fwd,
                    llr_b: llr_rc.unwrap_or(f32::NAN),
                },
            );
            let mut values = vec![
                v.chrom.clone(),
                v.pos.to_string(),
                v.id.clone(),
                v.reference.clone(),
                v.alternate.clone(),
                u8::from(v.ref_match).to_string(),
                format!("{llr:.6}"),
                format!("{llr_fwd:.6}"),
                llr_rc.map_or("NA".to_string(), |x| format!("{x:.6}")),
            ];
            values.extend(row.info.iter().cloned());
            out.push(PredictionRow {
                record: row.record,
                name: row.name.clone(),
                values,
            });
        }
        Ok(out)
    }

    fn metrics(&self) -> Result<Option<Vec<(String, String)>>> {
        Ok(None)
    }

    fn check_extra(&self, extra: &ExtraOutputs) -> Result<()> {
        VariantOutputs::check_extra(&self.dataset, true, extra)
    }

    fn write_extra(&mut self, extra: &ExtraOutputs) -> Result<Vec<Box<dyn Commit>>> {
        self.outputs.write_extra(&self.dataset, extra)
    }
}
