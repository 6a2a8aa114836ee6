//! GET's region models (Fu et al., "A foundation model of transcription across human cell
//! types", Nature 2025; GET-Foundation/get_model): `GETRegionFinetune` (expression of both strands
//! per region from motif-cluster × accessibility features) and `GETRegionPretrain` (masked-region
//! reconstruction), loaded from the authors' checkpoints with their parameter names and run on
//! any device (docs/pretrained-models.md, "GET (region expression model)").
//!
//! - [`config`]: the sizes (`config.json` of ours mirroring `model.cfg`, or read off the
//!   tensors); [`weights`]: the checkpoint files (Lightning `.ckpt`, `.pth`, safetensors), every
//!   tensor accounted for; [`model`]: the architecture; [`tss`]: a gene's expression from the
//!   outputs.
//!
//! Not trained here and not in the family registry (models/mod.rs): published checkpoints,
//! opened by file or folder. The weights are CC BY-NC 4.0; Luminome does not ship them.

pub mod config;
pub mod model;
pub mod predictor;
pub mod tss;
pub mod weights;

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use candle_core::{Device, Tensor};

pub use config::{GetRegionConfig, GetRegionKind, DEFAULT_HEADS};
pub use model::{GetEncoder, GetRegionFinetune, GetRegionPretrain};
pub use predictor::GetPredictor;
pub use tss::{tss_expression, Strand, TssSite};
pub use weights::GetWeights;

use crate::models::caduceus::model::Params;

impl Params for GetWeights {
    fn get(&self, name: &str, shape: &[usize]) -> Result<Tensor> {
        GetWeights::get(self, name, shape)
    }
    fn optional(&self, _name: &str) -> Option<Tensor> {
        // GET has no buffers or tied copies: every tensor is a parameter.
        None
    }
    fn has(&self, name: &str) -> bool {
        self.contains(name)
    }
}

/// Either of the authors' region classes.
#[derive(Debug, Clone)]
pub enum GetRegionModel {
    Finetune(GetRegionFinetune),
    Pretrain(GetRegionPretrain),
}

/// A published GET region checkpoint, loaded.
#[derive(Debug, Clone)]
pub struct GetRegion {
    pub config: GetRegionConfig,
    /// The file the weights came from.
    pub weights_path: PathBuf,
    pub model: GetRegionModel,
}

/// A GET checkpoint's tensors and sizes, before a model is built from them: what
/// [`GetRegion::open`] runs, and what `luminome-train expression --init` copies into its
/// parameters.
pub struct GetCheckpoint {
    /// The sizes, the class resolved.
    pub config: GetRegionConfig,
    pub kind: GetRegionKind,
    /// The file the weights came from.
    pub weights_path: PathBuf,
    pub weights: GetWeights,
}

impl GetCheckpoint {
    /// Reads `path`: a checkpoint file (`.ckpt`, `.pth`, `.pt`, `.safetensors`; sizes read off
    /// the tensors) or a folder (`model.safetensors` or its one `.ckpt`/`.pth`/`.pt`, and
    /// `config.json` when there is one). `heads` overrides the attention heads, which the tensors
    /// do not record ([`DEFAULT_HEADS`] otherwise); it must agree with a config.json.
    pub fn read(path: &Path, heads: Option<usize>, device: &Device) -> Result<Self> {
        let (weights_path, config_path) = locate(path)?;
        let weights = GetWeights::open(&weights_path, device)?;
        let config = match &config_path {
            Some(c) => {
                let what = c.display().to_string();
                let text = std::fs::read_to_string(c).with_context(|| format!("reading {what}"))?;
                let cfg = GetRegionConfig::from_json(&text, &what)?;
                if let Some(h) = heads.filter(|&h| h != cfg.num_heads) {
                    bail!(
                        "{what} says num_heads {}, {h} were asked for",
                        cfg.num_heads
                    );
                }
                cfg
            }
            None => weights.infer_config(heads)?,
        };
        let kind = match (config.model, weights.kind()) {
            (Some(c), Some(t)) if c != t => bail!(
                "{}: config.json says {}, the tensors are a {}'s",
                path.display(),
                c.class_name(),
                t.class_name()
            ),
            (Some(k), _) | (None, Some(k)) => k,
            (None, None) => bail!(
                "{}: neither head_exp.head.weight nor head_mask.weight: not a GET region checkpoint",
                weights_path.display()
            ),
        };
        Ok(Self {
            config: config.resolved(kind),
            kind,
            weights_path,
            weights,
        })
    }
}

impl GetRegion {
    /// Opens `path` ([`GetCheckpoint::read`]) and builds its model.
    pub fn open(path: &Path, heads: Option<usize>, device: &Device) -> Result<Self> {
        let GetCheckpoint {
            config,
            kind,
            weights_path,
            weights: w,
        } = GetCheckpoint::read(path, heads, device)?;
        let model = match kind {
            GetRegionKind::Finetune => {
                GetRegionModel::Finetune(GetRegionFinetune::new(&config, &w)?)
            }
            GetRegionKind::Pretrain => {
                GetRegionModel::Pretrain(GetRegionPretrain::new(&config, &w)?)
            }
        };
        w.finish()?;
        Ok(Self {
            config,
            weights_path,
            model,
        })
    }

    /// The expression model, or an error naming the checkpoint when it is a pretrain one.
    pub fn finetune(&self) -> Result<&GetRegionFinetune> {
        match &self.model {
            GetRegionModel::Finetune(m) => Ok(m),
            GetRegionModel::Pretrain(_) => bail!(
                "{}: a GETRegionPretrain checkpoint (masked-motif reconstruction) has no expression head; use a GETRegionFinetune checkpoint",
                self.weights_path.display()
            ),
        }
    }
}

/// Whether `path` looks like a GET region checkpoint (what `luminome-predict` dispatches on,
/// before anything is loaded): a `.ckpt`/`.pth`/`.pt` file; a safetensors file with GET's tensor
/// names (`region_embed.embed.weight` and `head_exp.*` or `head_mask.*`); or a folder with a GET
/// `config.json` (its `model` a GET class, or `num_motif` given), or without config.json but with
/// such a model.safetensors or a single `.ckpt`/`.pth`/`.pt`.
pub fn is_get_checkpoint(path: &Path) -> bool {
    let is_pickle = |p: &Path| {
        p.extension()
            .is_some_and(|e| e == "ckpt" || e == "pth" || e == "pt")
    };
    if path.is_file() {
        return is_pickle(path)
            || (path.extension().is_some_and(|e| e == "safetensors") && has_get_tensors(path));
    }
    if !path.is_dir() {
        return false;
    }
    let config = path.join("config.json");
    if config.is_file() {
        return std::fs::read_to_string(&config)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .is_some_and(|v| {
                v.get("model")
                    .and_then(|m| m.as_str())
                    .is_some_and(|m| m == "GETRegionFinetune" || m == "GETRegionPretrain")
                    || v.get("num_motif").is_some()
            });
    }
    let st = path.join("model.safetensors");
    if st.is_file() {
        return has_get_tensors(&st);
    }
    std::fs::read_dir(path).is_ok_and(|d| {
        d.filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_file() && is_pickle(p))
            .count()
            == 1
    })
}

/// Whether the safetensors file at `path` names GET's region embedding and one of its heads (read
/// from the header only).
fn has_get_tensors(path: &Path) -> bool {
    use std::io::Read;
    let read = || -> Option<serde_json::Map<String, serde_json::Value>> {
        let mut f = std::fs::File::open(path).ok()?;
        let mut len = [0u8; 8];
        f.read_exact(&mut len).ok()?;
        let len = u64::from_le_bytes(len);
        if len > 100 << 20 {
            return None;
        }
        let mut header = vec![0u8; len as usize];
        f.read_exact(&mut header).ok()?;
        serde_json::from_slice(&header).ok()
    };
    read().is_some_and(|names| {
        names.contains_key("region_embed.embed.weight")
            && names
                .keys()
                .any(|k| k.starts_with("head_exp.") || k.starts_with("head_mask."))
    })
}

/// The weights file and the config.json of `path`.
fn locate(path: &Path) -> Result<(PathBuf, Option<PathBuf>)> {
    if !path.is_dir() {
        if !path.is_file() {
            bail!("{}: no such checkpoint file or folder", path.display());
        }
        return Ok((path.to_path_buf(), None));
    }
    let config = Some(path.join("config.json")).filter(|c| c.is_file());
    let st = path.join("model.safetensors");
    if st.is_file() {
        return Ok((st, config));
    }
    let mut pickles: Vec<PathBuf> = std::fs::read_dir(path)
        .with_context(|| format!("listing {}", path.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.is_file()
                && p.extension()
                    .is_some_and(|e| e == "ckpt" || e == "pth" || e == "pt")
        })
        .collect();
    pickles.sort();
    match pickles.len() {
        1 => Ok((pickles.remove(0), config)),
        0 => bail!(
            "{}: no model.safetensors, .ckpt, .pth or .pt file in the folder",
            path.display()
        ),
        _ => bail!(
            "{}: several checkpoints ({}); name the file",
            path.display(),
            pickles
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Refuses a checkpoint whose feature count (`num_motif`: motif clusters + the accessibility
/// column) differs from a dataset's: the region embedding would read other columns than it was
/// trained on.
pub fn check_motif_count(
    ckpt_path: &Path,
    model_count: usize,
    dataset_path: &Path,
    dataset_count: usize,
) -> Result<()> {
    if model_count != dataset_count {
        bail!(
            "{} takes {model_count} features per region (num_motif: motif clusters + accessibility), but {} has {dataset_count}; the published GET models take 283 = 282 motif clusters + accessibility",
            ckpt_path.display(),
            dataset_path.display()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests;
