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
use crate::checkpoint::{pending_state_path, read_safetensors, state_path, write_safetensors};

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
    /// The lowest dev loss so far and the evaluations since (runs with a loss patience only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dev_loss_watch: Option<DevLossWatch>,
    /// [`weights_checksum`] of the weights saved with this state: resume refuses weights that
    /// are not them (another step, another run). Absent in states of older versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weights_crc32: Option<u32>,
}

impl TrainerState {
    /// The state of a run that has not taken a step.
    pub fn fresh(config: &TrainConfig) -> Self {
        Self {
            config: config.clone(),
            step: 0,
            epoch: 0,
            cursor: 0,
            best_value: None,
            best_step: 0,
            evals_since_best: 0,
            optimizer_steps: 0,
            dev_loss_watch: None,
            weights_crc32: None,
        }
    }
}

/// CRC-32 of every parameter, in name order (name, shape and f32 values, little-endian): the
/// same for the same weights on any machine and version.
pub fn weights_checksum(varmap: &candle_nn::VarMap) -> Result<u32> {
    let data = varmap.data().lock().expect("var map lock");
    let mut names: Vec<&String> = data.keys().collect();
    names.sort();
    let mut h = crc32fast::Hasher::new();
    for name in names {
        let t = data[name].as_tensor();
        h.update(name.as_bytes());
        for d in t.dims() {
            h.update(&(*d as u64).to_le_bytes());
        }
        let values = t
            .flatten_all()?
            .to_dtype(candle_core::DType::F32)?
            .to_vec1::<f32>()?;
        for v in values {
            h.update(&v.to_le_bytes());
        }
    }
    Ok(h.finalize())
}

/// Refuses a training state that does not belong to the weights `ckpt` holds (loaded into
/// `varmap`; `ckpt_step` from its metadata): another step, or another run's weights.
pub fn check_state_matches(
    ckpt: &Path,
    ckpt_step: u64,
    state: &TrainerState,
    state_path: &Path,
    varmap: &candle_nn::VarMap,
) -> Result<()> {
    if ckpt_step != state.step {
        bail!(
            "{} holds the weights of step {ckpt_step} but {} the training state of step {}: they were not saved together (a run stopped while saving, or files copied from different runs); resuming would continue from mismatched files. Restart the run, or resume from a matching pair",
            ckpt.display(),
            state_path.display(),
            state.step
        );
    }
    if let Some(want) = state.weights_crc32 {
        let got = weights_checksum(varmap)?;
        if got != want {
            bail!(
                "{} (step {ckpt_step}) is not the checkpoint {} (step {}) was saved with: weights checksum {got:08x}, the state's {want:08x} (another run's files, or a changed checkpoint); resuming would continue from mismatched files",
                ckpt.display(),
                state_path.display(),
                state.step
            );
        }
    }
    Ok(())
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DevLossWatch {
    pub best: f64,
    pub evals_since_best: u64,
}

impl TrainerState {
    /// Records an evaluation's dev loss; returns the evaluations since the lowest one (0 when
    /// this one is the lowest). A NaN loss never counts as an improvement.
    pub fn watch_dev_loss(&mut self, loss: f64) -> u64 {
        let w = match self.dev_loss_watch {
            // A NaN loss compares as not lower: never an improvement.
            Some(w) if loss.partial_cmp(&w.best) != Some(std::cmp::Ordering::Less) => {
                DevLossWatch {
                    best: w.best,
                    evals_since_best: w.evals_since_best + 1,
                }
            }
            _ if loss.is_nan() => DevLossWatch {
                best: f64::INFINITY,
                evals_since_best: 1,
            },
            _ => DevLossWatch {
                best: loss,
                evals_since_best: 0,
            },
        };
        self.dev_loss_watch = Some(w);
        w.evals_since_best
    }
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
/// the state file's path. The committed state, or the pending one where a run was stopped
/// before it moved the pending state into place ([`read_matching_state`] picks between them).
pub fn read_state(
    ckpt: &Path,
    device: &Device,
) -> Result<(TrainerState, HashMap<String, Tensor>, PathBuf)> {
    let sp = state_path(ckpt);
    let pending = pending_state_path(ckpt);
    if !sp.exists() && pending.exists() {
        return read_state_file(&pending, device);
    }
    if !sp.exists() {
        bail!(
            "{}: no training state beside this checkpoint (expected {}); resume from a run's last.safetensors",
            ckpt.display(),
            sp.display()
        );
    }
    read_state_file(&sp, device)
}

/// The training state that belongs to the weights `ckpt` holds (loaded into `varmap`;
/// `ckpt_step` from its metadata). A checkpoint is committed as: pending state, weights, then
/// the pending state moved into place; a run stopped between the last two leaves new weights
/// beside the old state and the new one pending, so the pending state is taken when it matches.
/// Anything else that does not match is refused (check_state_matches).
pub fn read_matching_state(
    ckpt: &Path,
    ckpt_step: u64,
    varmap: &candle_nn::VarMap,
    device: &Device,
) -> Result<(TrainerState, HashMap<String, Tensor>, PathBuf)> {
    let pending = pending_state_path(ckpt);
    let committed = read_state(ckpt, device)?;
    let refusal = match check_state_matches(ckpt, ckpt_step, &committed.0, &committed.2, varmap) {
        Ok(()) => return Ok(committed),
        Err(e) => e,
    };
    if pending.exists() && committed.2 != pending {
        let candidate = read_state_file(&pending, device)?;
        if check_state_matches(ckpt, ckpt_step, &candidate.0, &candidate.2, varmap).is_ok() {
            return Ok(candidate);
        }
    }
    Err(refusal)
}

/// Moves the pending state beside checkpoint `ckpt` into place: the last step of a checkpoint's
/// commit, or its completion on resume after a run was killed just before it.
pub fn promote_pending_state(ckpt: &Path) -> Result<()> {
    let (pending, committed) = (pending_state_path(ckpt), state_path(ckpt));
    luminome_io::temps::rename_committed(&pending, &committed).with_context(|| {
        format!(
            "cannot move {} to {}",
            pending.display(),
            committed.display()
        )
    })
}

fn read_state_file(
    sp: &Path,
    device: &Device,
) -> Result<(TrainerState, HashMap<String, Tensor>, PathBuf)> {
    let (md, tensors) = read_safetensors(sp, device)?;
    if md.get("kind").map(String::as_str) != Some(STATE_KIND) {
        bail!("{}: not a Luminome training state", sp.display());
    }
    let state: TrainerState =
        serde_json::from_str(md.get("luminome").map(String::as_str).unwrap_or(""))
            .with_context(|| format!("{}: unreadable training state", sp.display()))?;
    Ok((state, tensors, sp.to_path_buf()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dev_loss_watch_counts_evaluations_since_the_lowest_loss() {
        let mut st: TrainerState = serde_json::from_str(
            r#"{"config":{"batch_size":1,"grad_accum":1,"max_steps":1,"lr":0.1,"warmup_steps":0,"min_lr_ratio":0.1,"adamw":{"beta1":0.9,"beta2":0.999,"eps":1e-8,"weight_decay":0.0},"clip_norm":1.0,"eval_every":1,"patience":null,"metric":"dev_loss","maximize":false,"seed":1},"step":0,"epoch":0,"cursor":0,"best_value":null,"best_step":0,"evals_since_best":0,"optimizer_steps":0}"#,
        )
        .unwrap();
        let seen: Vec<u64> = [1.0, 0.8, 0.9, 0.8, f64::NAN, 0.7, 0.75]
            .iter()
            .map(|&l| st.watch_dev_loss(l))
            .collect();
        assert_eq!(seen, vec![0, 0, 1, 2, 3, 0, 1]);
        // Written only when used, so states of runs without it keep their bytes.
        let mut fresh = st.clone();
        fresh.dev_loss_watch = None;
        assert!(!serde_json::to_string(&fresh)
            .unwrap()
            .contains("dev_loss_watch"));
        assert!(!serde_json::to_string(&fresh.config)
            .unwrap()
            .contains("loss_patience"));
    }
}
