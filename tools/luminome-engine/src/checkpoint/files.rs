//! Checkpoint files: weights with their metadata, the config sidecar, the state path, and loading
//! tensors into a model's parameters.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use candle_core::{Device, Tensor};
use candle_nn::VarMap;
use luminome_io::atomic::AtomicFile;

use super::meta::{CheckpointMeta, CHECKPOINT_KIND, CHECKPOINT_VERSION};

/// `x.safetensors` → `x.config.json`.
pub fn config_path(weights: &Path) -> PathBuf {
    sidecar(weights, "config.json")
}

/// `x.safetensors` → `x.state.safetensors` (training state for resuming).
pub fn state_path(weights: &Path) -> PathBuf {
    sidecar(weights, "state.safetensors")
}

/// `x.safetensors` → `x.state.next.safetensors`: a new training state, committed before its
/// weights and moved to [`state_path`] after them (docs/reliability.md, "Resume").
pub fn pending_state_path(weights: &Path) -> PathBuf {
    sidecar(weights, "state.next.safetensors")
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
