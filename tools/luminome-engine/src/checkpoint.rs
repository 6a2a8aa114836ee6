//! Checkpoints: `<name>.safetensors` holds the weights, with `__metadata__` =
//! `{kind: "luminome.checkpoint", format_version, luminome: <CheckpointMeta JSON>}`; the same
//! JSON is written beside it as `<name>.config.json` for people and workflow engines. The
//! metadata alone rebuilds the model (the `model` field is the full [`ModelConfig`]) and carries
//! the dataset's tokenizer so that a vocabulary mismatch is caught before training or
//! prediction. Training state (optimizer moments, step, data-order position) lives in
//! `<name>.state.safetensors` (see `trainer`); it is only needed to resume.
//!
//! Files are written under temporary names and renamed, the weights last, so a checkpoint at
//! its final path is always complete.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use candle_core::{DType, Device, Tensor};
use candle_nn::{VarBuilder, VarMap};
use luminome_io::atomic::AtomicFile;
use luminome_io::token_dataset::TokenizerInfo;
use serde::{Deserialize, Serialize};

use crate::classifier::Classifier;
use crate::config::ModelConfig;
use crate::mlm::MlmModel;
use crate::model::Model;

pub const CHECKPOINT_KIND: &str = "luminome.checkpoint";
pub const CHECKPOINT_VERSION: u32 = 1;

/// The JSON stored in a checkpoint's `__metadata__["luminome"]` and in `<name>.config.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CheckpointMeta {
    pub kind: String,
    pub format_version: u32,
    /// The model: kind (`mlm` / `classifier`) and every size that rebuilds it.
    pub model: ModelConfig,
    /// The tokenizer of the dataset the model was trained on.
    pub tokenizer: TokenizerInfo,
    /// Optimizer step the weights are from.
    pub step: u64,
    /// Dev metrics at that step (when evaluated).
    pub metrics: BTreeMap<String, f64>,
    pub sources: Vec<String>,
    pub tool: String,
    pub tool_version: String,
    pub command_line: String,
}

impl CheckpointMeta {
    /// Checks that a dataset's tokenizer is the one the model was trained with.
    pub fn check_tokenizer(&self, ckpt: &Path, dataset: &Path, tok: &TokenizerInfo) -> Result<()> {
        if tok.vocab != self.tokenizer.vocab || tok.pad_id != self.tokenizer.pad_id {
            bail!(
                "{}: vocabulary differs from the checkpoint's ({}: {} tokens [{}], checkpoint {}: {} tokens [{}]); tokenize with the same settings as the training data",
                dataset.display(),
                dataset.display(),
                tok.vocab.len(),
                preview(&tok.vocab),
                ckpt.display(),
                self.tokenizer.vocab.len(),
                preview(&self.tokenizer.vocab)
            );
        }
        Ok(())
    }
}

fn preview(v: &[String]) -> String {
    let mut s = v.iter().take(12).cloned().collect::<Vec<_>>().join(" ");
    if v.len() > 12 {
        s.push_str(" ...");
    }
    s
}

/// `x.safetensors` → `x.config.json`.
pub fn config_path(weights: &Path) -> PathBuf {
    sidecar(weights, "config.json")
}

/// `x.safetensors` → `x.state.safetensors` (training state for resuming).
pub fn state_path(weights: &Path) -> PathBuf {
    sidecar(weights, "state.safetensors")
}

fn sidecar(weights: &Path, ext: &str) -> PathBuf {
    let s = weights.to_string_lossy();
    let stem = s.strip_suffix(".safetensors").unwrap_or(&s);
    PathBuf::from(format!("{stem}.{ext}"))
}

/// Serialises named tensors with metadata into an uncommitted atomic file (tensors sorted by
/// name, metadata in key order: the same weights give the same bytes).
pub fn write_safetensors(
    dest: &Path,
    tensors: &[(String, Tensor)],
    metadata: BTreeMap<String, String>,
) -> Result<AtomicFile> {
    let cpu: Vec<(String, Tensor)> = tensors
        .iter()
        .map(|(n, t)| Ok((n.clone(), t.to_device(&Device::Cpu)?.contiguous()?)))
        .collect::<Result<_>>()?;
    luminome_io::tensorfile::write_tensors(dest, &cpu, &metadata)
}

/// The named tensors of a var map, sorted by name.
pub fn varmap_tensors(varmap: &VarMap) -> Vec<(String, Tensor)> {
    let data = varmap.data().lock().expect("var map lock");
    let mut v: Vec<(String, Tensor)> = data
        .iter()
        .map(|(n, var)| (n.clone(), var.as_tensor().clone()))
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

/// Writes weights + config sidecar; returns the uncommitted files (sidecar first, weights
/// last: commit them in this order).
pub fn prepare_checkpoint(
    dest: &Path,
    meta: &CheckpointMeta,
    varmap: &VarMap,
) -> Result<Vec<AtomicFile>> {
    let json = serde_json::to_string(meta)?;
    let mut md = BTreeMap::new();
    md.insert("kind".to_string(), CHECKPOINT_KIND.to_string());
    md.insert("format_version".to_string(), CHECKPOINT_VERSION.to_string());
    md.insert("luminome".to_string(), json);
    let mut cfg = AtomicFile::create(config_path(dest))?;
    cfg.write_all(serde_json::to_string_pretty(meta)?.as_bytes())?;
    cfg.write_all(b"\n")?;
    let weights = write_safetensors(dest, &varmap_tensors(varmap), md)?;
    Ok(vec![cfg, weights])
}

/// Writes a checkpoint (weights last).
pub fn save_checkpoint(dest: &Path, meta: &CheckpointMeta, varmap: &VarMap) -> Result<()> {
    for f in prepare_checkpoint(dest, meta, varmap)? {
        f.commit()?;
    }
    Ok(())
}

/// Reads a safetensors file's `__metadata__` and tensors.
pub fn read_safetensors(
    path: &Path,
    device: &Device,
) -> Result<(HashMap<String, String>, HashMap<String, Tensor>)> {
    let bytes = std::fs::read(path).with_context(|| format!("{}: cannot read", path.display()))?;
    let (_, header) = safetensors::SafeTensors::read_metadata(&bytes)
        .map_err(|e| anyhow::anyhow!("{}: not a safetensors file ({e})", path.display()))?;
    let md = header.metadata().clone().unwrap_or_default();
    let tensors = candle_core::safetensors::load_buffer(&bytes, device)
        .with_context(|| format!("{}: cannot read the tensors", path.display()))?;
    Ok((md, tensors))
}

/// Reads only a checkpoint's metadata.
pub fn read_checkpoint_meta(path: &Path) -> Result<CheckpointMeta> {
    let f = std::fs::File::open(path)
        .with_context(|| format!("{}: cannot open the checkpoint", path.display()))?;
    let mut len = [0u8; 8];
    use std::io::Read;
    let mut r = std::io::BufReader::new(f);
    r.read_exact(&mut len)
        .with_context(|| format!("{}: not a safetensors file (too short)", path.display()))?;
    let n = u64::from_le_bytes(len);
    if n > 100_000_000 {
        bail!(
            "{}: not a safetensors file (header length {n})",
            path.display()
        );
    }
    let mut header = vec![0u8; n as usize];
    r.read_exact(&mut header).with_context(|| {
        format!(
            "{}: not a safetensors file (truncated header)",
            path.display()
        )
    })?;
    let v: serde_json::Value = serde_json::from_slice(&header).with_context(|| {
        format!(
            "{}: not a safetensors file (unreadable header)",
            path.display()
        )
    })?;
    let md = v.get("__metadata__").cloned().unwrap_or_default();
    parse_meta(path, &md)
}

fn parse_meta(path: &Path, md: &serde_json::Value) -> Result<CheckpointMeta> {
    let kind = md.get("kind").and_then(|k| k.as_str()).unwrap_or("");
    if kind != CHECKPOINT_KIND {
        bail!(
            "{}: not a Luminome checkpoint (kind {kind:?}, expected {CHECKPOINT_KIND:?})",
            path.display()
        );
    }
    let json = md
        .get("luminome")
        .and_then(|k| k.as_str())
        .with_context(|| {
            format!(
                "{}: checkpoint metadata has no `luminome` entry",
                path.display()
            )
        })?;
    let meta: CheckpointMeta = serde_json::from_str(json)
        .with_context(|| format!("{}: unreadable checkpoint metadata", path.display()))?;
    if meta.format_version > CHECKPOINT_VERSION {
        bail!(
            "{}: checkpoint format version {} is newer than this tool reads ({CHECKPOINT_VERSION})",
            path.display(),
            meta.format_version
        );
    }
    Ok(meta)
}

/// A loaded checkpoint: metadata, the parameter map and the rebuilt model.
pub struct Checkpoint {
    pub path: PathBuf,
    pub meta: CheckpointMeta,
    pub varmap: VarMap,
    pub model: Model,
}

impl Checkpoint {
    /// Loads a checkpoint onto `device` and rebuilds its model.
    pub fn load(path: &Path, device: &Device) -> Result<Self> {
        let meta = read_checkpoint_meta(path)?;
        meta.model
            .encoder()
            .validate()
            .with_context(|| format!("{}: invalid model config", path.display()))?;
        let (_, tensors) = read_safetensors(path, device)?;
        let varmap = VarMap::new();
        let vb = VarBuilder::from_varmap(&varmap, DType::F32, device);
        let model = match &meta.model {
            ModelConfig::Mlm(c) => Model::Mlm(MlmModel::new(c, vb)?),
            ModelConfig::Classifier(c) => Model::Classifier(Classifier::new(c, vb)?),
        };
        load_into(&varmap, &tensors, path, None)?;
        Ok(Self {
            path: path.to_path_buf(),
            meta,
            varmap,
            model,
        })
    }

    /// The classifier, or an error naming the file when the checkpoint holds another kind.
    pub fn classifier(&self) -> Result<&Classifier> {
        match &self.model {
            Model::Classifier(c) => Ok(c),
            Model::Mlm(_) => bail!(
                "{}: this checkpoint is a masked-LM model (kind mlm), expected a classifier (train one with `luminome-train classify`)",
                self.path.display()
            ),
        }
    }

    pub fn mlm(&self) -> Result<&MlmModel> {
        match &self.model {
            Model::Mlm(m) => Ok(m),
            Model::Classifier(_) => bail!(
                "{}: this checkpoint is a classifier, expected a masked-LM model (kind mlm)",
                self.path.display()
            ),
        }
    }
}

/// Copies tensors into the var map's variables with matching names. `prefix`: only variables
/// whose name starts with it (e.g. `encoder.` to initialise a classifier's encoder from an MLM
/// checkpoint). Every selected variable must be present with the same shape.
pub fn load_into(
    varmap: &VarMap,
    tensors: &HashMap<String, Tensor>,
    path: &Path,
    prefix: Option<&str>,
) -> Result<usize> {
    let data = varmap.data().lock().expect("var map lock");
    let mut n = 0;
    let mut names: Vec<&String> = data.keys().collect();
    names.sort();
    for name in names {
        if prefix.is_some_and(|p| !name.starts_with(p)) {
            continue;
        }
        let var = &data[name];
        let t = tensors
            .get(name)
            .with_context(|| format!("{}: tensor {name} is missing", path.display()))?;
        if t.shape() != var.shape() {
            bail!(
                "{}: tensor {name} has shape {:?}, the model expects {:?}",
                path.display(),
                t.dims(),
                var.dims()
            );
        }
        var.set(&t.to_dtype(var.dtype())?)?;
        n += 1;
    }
    Ok(n)
}
