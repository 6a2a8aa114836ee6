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
use crate::predict::variants::{
    base_class, variant_columns, variant_values, windows_of, VariantOutputs,
};
use crate::predict::{ExtraOutputs, PredictionRow, Predictor, Tallied, Tally, WritesExtraOutputs};

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
    /// Per-record embeddings, when asked for: at the site and the mean over the window's bases.
    embeddings: Option<Embeddings>,
    device: Device,
}

/// Embeddings of the records predicted so far (rows of `dim` values).
#[derive(Default)]
struct Embeddings {
    site: Vec<f32>,
    mean: Vec<f32>,
    names: Vec<String>,
}

/// What one batch of windows gives.
struct WindowScores {
    fwd: Vec<BaseLogProbs>,
    rc: Vec<BaseLogProbs>,
    /// `[windows, d_model]` each, when embeddings are kept.
    site_embedding: Option<Vec<Vec<f32>>>,
    mean_embedding: Option<Vec<Vec<f32>>>,
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
        let outputs = VariantOutputs::described(VCF_DESCRIPTIONS).of_dataset(&ds);
        Ok(Self {
            model,
            dataset: ds,
            index,
            bases,
            strands: Strands::default(),
            outputs,
            embeddings: None,
            device,
        })
    }

    pub fn with_strands(mut self, strands: Strands) -> Self {
        self.strands = strands;
        self
    }

    /// Keeps each record's embeddings for `--embeddings` (PlantCaduceus' probing input: the last
    /// hidden state, for RC-equivariant models the mean of the forward half and the channel-
    /// reversed RC half; at the site, and averaged over the window's bases).
    pub fn with_embeddings(mut self, keep: bool) -> Self {
        self.embeddings = keep.then(Embeddings::default);
        self
    }

    /// The width of an embedding.
    fn embedding_dim(&self) -> usize {
        self.model.model.config().d_model
    }

    /// Log-probabilities over A, C, G, T at the site of each window row: forward, and (both
    /// strands) reverse complement.
    fn site_log_probs(&self, windows: &[usize]) -> Result<WindowScores> {
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
        let out = self.model.model.forward(&ids)?;
        let logits = out.logits;
        let (site_embedding, mean_embedding) = if self.embeddings.is_some() {
            let rep =
                self.model
                    .model
                    .representation(&out.hidden.narrow(0, 0, windows.len())?)?;
            let mut site_e = Vec::with_capacity(windows.len());
            let mut mean_e = Vec::with_capacity(windows.len());
            for (k, &site) in sites.iter().take(windows.len()).enumerate() {
                let row = rep.get(k)?;
                site_e.push(row.get(site)?.to_vec1::<f32>()?);
                // The mean over the window's bases (not [PAD], not the appended [SEP]).
                let keep: Vec<f32> = batch.attention_mask[k * l..(k + 1) * l]
                    .iter()
                    .map(|&m| f32::from(m))
                    .collect();
                let n = keep.iter().sum::<f32>().max(1.0);
                let keep = Tensor::from_vec(keep, (1, l), &self.device)?;
                let sum = keep.matmul(&row.narrow(0, 0, l)?.contiguous()?)?;
                mean_e.push((sum / f64::from(n))?.squeeze(0)?.to_vec1::<f32>()?);
            }
            (Some(site_e), Some(mean_e))
        } else {
            (None, None)
        };
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
        Ok(WindowScores {
            fwd: out,
            rc,
            site_embedding,
            mean_embedding,
        })
    }
}

/// ln P over A, C, G, T at one site.
type BaseLogProbs = [f32; 4];

impl Predictor for CaduceusPredictor {
    fn len(&self) -> usize {
        self.dataset.len()
    }

    fn has_truth(&self) -> bool {
        false
    }

    fn columns(&self) -> Vec<String> {
        variant_columns(["llr", "llr_fwd", "llr_rc"], &self.dataset.meta().info_keys)
    }

    fn predict(&mut self, records: &[usize]) -> Result<Vec<PredictionRow>> {
        let index = &self.index;
        let (windows, window_of) =
            windows_of(records, |r| index[r].variant.as_ref().map(|v| v.line));
        let WindowScores {
            fwd,
            rc,
            site_embedding,
            mean_embedding,
        } = self.site_log_probs(&windows)?;
        let mut out = Vec::with_capacity(records.len());
        for (k, &r) in records.iter().enumerate() {
            let row = &self.index[r];
            let v = row
                .variant
                .as_ref()
                .context("internal: variant row without variant")?;
            let (Some(rc_class), Some(ac)) = (base_class(&v.reference), base_class(&v.alternate))
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
            if let (Some(e), Some(site), Some(mean)) =
                (self.embeddings.as_mut(), &site_embedding, &mean_embedding)
            {
                e.site.extend_from_slice(&site[w]);
                e.mean.extend_from_slice(&mean[w]);
                e.names.push(row.name.clone());
            }
            let llr_fwd = fwd[w][ac] - fwd[w][rc_class];
            // On the reverse complement the alleles are complemented (class 3 − c).
            let llr_rc = rc.get(w).map(|p| p[3 - ac] - p[3 - rc_class]);
            let llr = match llr_rc {
                Some(x) => 0.5 * (llr_fwd + x),
                None => llr_fwd,
            };
            self.outputs.record(
                r,
                v,
                AlleleScore {
                    llr,
                    llr_a: llr_fwd,
                    llr_b: llr_rc.unwrap_or(f32::NAN),
                },
            )?;
            let values = variant_values(v, [Some(llr), Some(llr_fwd), llr_rc], &row.info);
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

    fn extra_outputs(&mut self) -> Option<&mut dyn WritesExtraOutputs> {
        Some(self)
    }

    fn tallied(&mut self) -> Option<&mut dyn Tallied> {
        Some(self)
    }
}

impl WritesExtraOutputs for CaduceusPredictor {
    fn check_extra(&self, extra: &ExtraOutputs) -> Result<()> {
        VariantOutputs::check_extra(&self.dataset, true, extra)
    }

    fn write_extra(&mut self, extra: &ExtraOutputs) -> Result<Vec<Box<dyn Commit>>> {
        let mut files = self.outputs.write_extra(&self.dataset, extra)?;
        if let (Some(path), Some(e)) = (&extra.embeddings, &self.embeddings) {
            let dim = self.embedding_dim();
            let meta = serde_json::json!({
                "dim": dim,
                "sets": {
                    "site": "the last hidden state at the (masked) variant site",
                    "mean": "the last hidden state averaged over the window's bases",
                },
                "rc_equivariant_average": self.model.model.config().rcps,
                "checkpoint": self.model.checkpoint.name,
                "dataset": self.dataset.path().display().to_string(),
                "tool": "luminome-predict",
                "tool_version": luminome_cli::VERSION,
                "command_line": luminome_cli::command_line(),
            });
            files.extend(crate::predict::embeddings::write_embeddings(
                path,
                &[("site", &e.site, &e.names), ("mean", &e.mean, &e.names)],
                dim,
                meta,
            )?);
        }
        Ok(files)
    }
}

impl Tallied for CaduceusPredictor {
    fn start_tally(&mut self) {
        self.outputs.start_tally();
    }

    fn tally(&self) -> Tally {
        self.outputs.tally()
    }

    fn replay(&mut self, tally: &Tally) -> Result<()> {
        let index = &self.index;
        self.outputs
            .replay(tally, |r| index.get(r).and_then(|row| row.variant.as_ref()))
    }
}
