//! The training state beside a `last.safetensors`: `last.state.safetensors` holds the AdamW
//! moments as tensors and, in its metadata, everything else a resumed run needs (the training
//! settings, step, epoch, position in the epoch's order, early-stopping counters). Written and
//! read only here.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use candle_core::{Device, Tensor};
use luminome_io::atomic::AtomicFile;
use serde::{Deserialize, Serialize};

use super::optim::AdamW;
use super::trainer::TrainConfig;
use crate::checkpoint::{read_safetensors, state_path, write_safetensors};

pub const STATE_KIND: &str = "luminome.train_state";

/// Everything besides weights and optimizer moments that a resumed run needs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TrainerState {
    pub config: TrainConfig,
    pub step: u64,
    pub epoch: u64,
    pub cursor: usize,
    pub best_value: Option<f64>,
    pub best_step: u64,
    pub evals_since_best: u64,
    pub optimizer_steps: u64,
}

/// Writes the state file (uncommitted) of a checkpoint.
pub fn write_state(dest: &Path, state: &TrainerState, opt: &AdamW) -> Result<AtomicFile> {
    let (tensors, _) = opt.state();
    let mut md = BTreeMap::new();
    md.insert("kind".to_string(), STATE_KIND.to_string());
    md.insert("luminome".to_string(), serde_json::to_string(state)?);
    write_safetensors(dest, &tensors, md)
}

/// Reads the state beside checkpoint `ckpt`: the state, the optimizer tensors (on `device`) and
/// the state file's path.
pub fn read_state(
    ckpt: &Path,
    device: &Device,
) -> Result<(TrainerState, HashMap<String, Tensor>, PathBuf)> {
    let sp = state_path(ckpt);
    if !sp.exists() {
        bail!(
            "{}: no training state beside this checkpoint (expected {}); resume from a run's last.safetensors",
            ckpt.display(),
            sp.display()
        );
    }
    let (md, tensors) = read_safetensors(&sp, device)?;
    if md.get("kind").map(String::as_str) != Some(STATE_KIND) {
        bail!("{}: not a Luminome training state", sp.display());
    }
    let state: TrainerState =
        serde_json::from_str(md.get("luminome").map(String::as_str).unwrap_or(""))
            .with_context(|| format!("{}: unreadable training state", sp.display()))?;
    Ok((state, tensors, sp))
}
