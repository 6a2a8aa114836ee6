//! The tensors of a published GET checkpoint, under the authors' current parameter names, taken
//! by name with their shapes checked and every tensor accounted for (like the Caduceus loader: a
//! missing, extra or mis-shaped tensor is refused naming it).
//!
//! Files read (the layouts get_model/utils.py `load_checkpoint` / `extract_state_dict` accept):
//! - `*.safetensors` (ours: the authors' `state_dict()` saved as is);
//! - PyTorch pickles (`.ckpt`, `.pth`, `.pt`): a Lightning checkpoint's `state_dict` (names
//!   prefixed `model.`, the LightningModule's attribute), an older checkpoint's `model` entry, or
//!   a bare state dict.
//!
//! Names are brought to the current ones the way the authors' configs do it:
//! `rename_lit_state_dict` drops `model.`; finetune/v1_finetune.yaml and v1_pretrain.yaml rename
//! the v1 names (`blocks.` → `encoder.blocks.`, `fc_norm.` → `encoder.norm.`, `head.` →
//! `head_exp.head.`, ...). Entries of the loss and metrics modules (`loss.`, `metrics.`) are not
//! model weights and are dropped.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context, Result};
use candle_core::{DType, Device, Tensor};

use super::config::{GetRegionConfig, GetRegionKind};
use crate::models::caduceus::weights::Weights;

/// v1 name prefixes and their current names (finetune/v1_{finetune,pretrain}.yaml
/// `rename_config`, applied to prefixes only: no current name starts with any of these, so a
/// current checkpoint is left as it is).
const V1_PREFIXES: [(&str, &str); 7] = [
    ("blocks.", "encoder.blocks."),
    ("fc_norm.", "encoder.norm."),
    ("encoder.head.", "head_mask."),
    ("encoder.region_embed.proj.", "region_embed.embed."),
    ("region_embed.proj.", "region_embed.embed."),
    ("encoder.cls_token", "cls_token"),
    ("head.", "head_exp.head."),
];

/// The file's tensors under their current names, in the shared strict map (missing, extra and
/// mis-shaped tensors named).
pub struct GetWeights {
    inner: Weights,
}

impl GetWeights {
    /// Reads `path` (safetensors, or a PyTorch pickle) onto `device`, floats as f32.
    pub fn open(path: &Path, device: &Device) -> Result<Self> {
        let raw = if path.extension().is_some_and(|e| e == "safetensors") {
            let t = candle_core::safetensors::load(path, &Device::Cpu).map_err(|e| {
                anyhow::anyhow!("{}: not a readable safetensors file ({e})", path.display())
            })?;
            t.into_iter().collect()
        } else {
            read_pickle(path)?
        };
        Self::from_named(path, raw, device)
    }

    /// From tensors already read, under their names in the file.
    pub fn from_named(path: &Path, raw: Vec<(String, Tensor)>, device: &Device) -> Result<Self> {
        let mut tensors = BTreeMap::new();
        let mut origin: BTreeMap<String, String> = BTreeMap::new();
        for (name, t) in raw {
            let Some(canon) = canonical_name(&name) else {
                continue;
            };
            if let Some(first) = origin.get(&canon) {
                bail!(
                    "{}: tensors {first} and {name} both name {canon}",
                    path.display()
                );
            }
            let t = if t.dtype().is_float() {
                t.to_dtype(DType::F32)?
            } else {
                t
            };
            let t = t
                .to_device(device)
                .with_context(|| format!("{}: tensor {name}", path.display()))?;
            origin.insert(canon.clone(), name);
            tensors.insert(canon, t);
        }
        if tensors.is_empty() {
            bail!("{}: no model tensors found", path.display());
        }
        Ok(Self {
            inner: Weights::from_tensors(path, tensors, "GET region"),
        })
    }

    pub fn path(&self) -> &Path {
        self.inner.path()
    }

    /// Every tensor under its current name (e.g. to copy into a trainable model's VarMap, whose
    /// variables [`GetRegionFinetune::new`](super::GetRegionFinetune::new) names the same).
    pub fn tensors(&self) -> &BTreeMap<String, Tensor> {
        self.inner.tensors()
    }

    pub fn contains(&self, name: &str) -> bool {
        self.inner.contains(name)
    }

    /// The tensor `name`, which must have `shape`.
    pub fn get(&self, name: &str, shape: &[usize]) -> Result<Tensor> {
        self.inner.get(name, shape)
    }

    /// Fails naming the first tensor of the file the model did not take.
    pub fn finish(&self) -> Result<()> {
        self.inner.finish()
    }

    /// The sizes the tensors imply; `num_heads` is not stored anywhere, so `heads` (or the
    /// published models' [`DEFAULT_HEADS`](super::config::DEFAULT_HEADS)).
    pub fn infer_config(&self, heads: Option<usize>) -> Result<GetRegionConfig> {
        let p = self.path().display();
        let embed = self.dims("region_embed.embed.weight")?;
        let (embed_dim, num_motif) = (embed[0], embed[1]);
        let num_layers = (0..)
            .take_while(|i| self.contains(&format!("encoder.blocks.{i}.norm1.weight")))
            .count();
        if num_layers == 0 {
            bail!("{p}: no encoder.blocks.0.* tensors: not a GET region checkpoint");
        }
        let (kind, head) = match (
            self.contains("head_exp.head.weight"),
            self.contains("head_mask.weight"),
        ) {
            (true, false) => (GetRegionKind::Finetune, "head_exp.head.weight"),
            (false, true) => (GetRegionKind::Pretrain, "head_mask.weight"),
            (true, true) => bail!("{p}: has both head_exp and head_mask: which GET model is it?"),
            (false, false) => bail!("{p}: has neither head_exp.head.weight (GETRegionFinetune) nor head_mask.weight (GETRegionPretrain)"),
        };
        let cfg = GetRegionConfig {
            model: Some(kind),
            num_regions: 900,
            num_motif,
            embed_dim,
            num_layers,
            num_heads: heads.unwrap_or(super::config::DEFAULT_HEADS),
            output_dim: self.dims(head)?[0],
        };
        cfg.validate(&format!("{p} (sizes from the tensors)"))?;
        Ok(cfg)
    }

    /// The class the checkpoint's head says it is.
    pub fn kind(&self) -> Option<GetRegionKind> {
        if self.contains("head_exp.head.weight") {
            Some(GetRegionKind::Finetune)
        } else if self.contains("head_mask.weight") {
            Some(GetRegionKind::Pretrain)
        } else {
            None
        }
    }

    fn dims(&self, name: &str) -> Result<Vec<usize>> {
        let t = self.tensors().get(name).with_context(|| {
            format!(
                "{}: tensor {name} is missing: not a GET region checkpoint",
                self.path().display()
            )
        })?;
        if t.rank() != 2 {
            bail!(
                "{}: tensor {name} has shape {:?}, expected a matrix",
                self.path().display(),
                t.dims()
            );
        }
        Ok(t.dims().to_vec())
    }
}

/// The current name of a checkpoint entry, `None` for what is not a model weight.
pub fn canonical_name(name: &str) -> Option<String> {
    let name = name.strip_prefix("model.").unwrap_or(name);
    if name.starts_with("loss.") || name.starts_with("metrics.") {
        return None;
    }
    for (old, new) in V1_PREFIXES {
        if let Some(rest) = name.strip_prefix(old) {
            return Some(format!("{new}{rest}"));
        }
    }
    Some(name.to_string())
}

/// The state dict of a PyTorch pickle: under `state_dict` (Lightning), `model` (older GET
/// checkpoints), or the whole file.
fn read_pickle(path: &Path) -> Result<Vec<(String, Tensor)>> {
    let mut last = None;
    for key in [Some("state_dict"), Some("model"), None] {
        match candle_core::pickle::read_all_with_key(path, key) {
            Ok(t) if !t.is_empty() => return Ok(t),
            Ok(_) => {}
            Err(e) => last = Some(e),
        }
    }
    match last {
        Some(e) => bail!(
            "{}: not a readable PyTorch checkpoint ({e}); expected a Lightning .ckpt, a .pth with a `model` or `state_dict` entry, or model.safetensors",
            path.display()
        ),
        None => bail!("{}: no tensors in the checkpoint", path.display()),
    }
}
