//! Checkpoints: `<name>.safetensors` holds the weights, with `__metadata__` =
//! `{kind: "luminome.checkpoint", format_version, luminome: <CheckpointMeta JSON>}`; the same
//! JSON is written beside it as `<name>.config.json` for people and workflow engines. The
//! metadata alone rebuilds the model (the `model` field is the full [`ModelConfig`], whose `kind`
//! names the family) and records what the model reads (the dataset's tokenizer, or the region
//! features), so a mismatched dataset is caught before training or prediction. Training state
//! (optimizer moments, step, data-order position) lives in `<name>.state.safetensors` (see
//! `train::state`); it is only needed to resume.
//!
//! Files are written under temporary names and renamed, the weights last, so a checkpoint at
//! its final path is always complete.
//!
//! - [`meta`]: [`CheckpointMeta`]; [`files`]: reading and writing the files.

pub mod files;
pub mod meta;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use candle_core::{DType, Device};
use candle_nn::{VarBuilder, VarMap};

pub use files::{
    config_path, load_into, pending_state_path, prepare_checkpoint, read_safetensors,
    save_checkpoint, state_path, varmap_tensors, write_safetensors,
};
pub use meta::{read_checkpoint_meta, CheckpointMeta, CHECKPOINT_KIND, CHECKPOINT_VERSION};

use crate::models::{downcast, FamilyConfig, Model, ModelConfig};

/// A loaded checkpoint: metadata, the parameter map and the rebuilt model.
pub struct Checkpoint {
    pub path: PathBuf,
    pub meta: CheckpointMeta,
    pub varmap: VarMap,
    pub model: Box<dyn Model>,
}

impl Checkpoint {
    /// Loads a checkpoint onto `device` and rebuilds its model, whatever its family, with its
    /// parameters as trainable variables (`varmap`): to resume or fine-tune it.
    pub fn load(path: &Path, device: &Device) -> Result<Self> {
        Self::read(path, device, true)
    }

    /// Loads a checkpoint to run it, not train it: the model's parameters are the file's
    /// tensors themselves, not variables (`varmap` is empty). The same numbers come out; a
    /// forward pass records no graph through the weights, and a backward pass — the gradient
    /// with respect to the input that saliency and integrated gradients take — computes no
    /// weight gradients (the engine's ops skip them for inputs outside the graph), about a
    /// third of its products.
    pub fn load_frozen(path: &Path, device: &Device) -> Result<Self> {
        Self::read(path, device, false)
    }

    fn read(path: &Path, device: &Device, trainable: bool) -> Result<Self> {
        let meta = read_checkpoint_meta(path)?;
        meta.model
            .validate()
            .with_context(|| format!("{}: invalid model config", path.display()))?;
        let (_, tensors) = read_safetensors(path, device)?;
        // A dry build over the file's own tensors checks every parameter's name and shape
        // against the config before any parameter is allocated (a config claiming a larger
        // model than the file holds is an error here, not an allocation).
        let frozen = meta
            .model
            .build(VarBuilder::from_tensors(
                tensors.clone(),
                DType::F32,
                device,
            ))
            .with_context(|| {
                format!(
                    "{}: the weights do not match the model its metadata describes",
                    path.display()
                )
            })?;
        // A NaN or infinite weight makes every prediction NaN while metrics computed from them
        // can still look normal: refuse the file, naming the tensor.
        let mut names: Vec<&String> = tensors.keys().collect();
        names.sort();
        for name in names {
            let t = &tensors[name];
            if t.dtype().is_float() {
                let s = t
                    .to_dtype(DType::F64)?
                    .abs()?
                    .sum_all()?
                    .to_scalar::<f64>()?;
                if !s.is_finite() {
                    anyhow::bail!(
                        "{}: tensor {name} holds NaN or infinite values; the checkpoint is corrupt (or its training diverged)",
                        path.display()
                    );
                }
            }
        }
        let varmap = VarMap::new();
        let model = if trainable {
            let vb = VarBuilder::from_varmap(&varmap, DType::F32, device);
            let model = meta.model.build(vb)?;
            load_into(&varmap, &tensors, path, None)?;
            model
        } else {
            frozen
        };
        Ok(Self {
            path: path.to_path_buf(),
            meta,
            varmap,
            model,
        })
    }

    /// The model as family `C`'s model, or an error naming the file and both families.
    pub fn get<C: FamilyConfig>(&self) -> Result<&C::Model> {
        downcast::<C>(
            self.model.as_ref(),
            &self.meta.model,
            &self.path.display().to_string(),
        )
    }

    /// The model's config.
    pub fn config(&self) -> &ModelConfig {
        &self.meta.model
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::classifier::{AdapterKind, ClassifierConfig};
    use candle_core::{Tensor, Var};

    /// `load_frozen` runs the same model as `load`: the same logits and, through a backward
    /// pass from the embeddings (what saliency and integrated gradients take), the same input
    /// gradient, bit for bit — for the transformer and the CNN backbone.
    #[test]
    fn a_frozen_checkpoint_gives_the_same_logits_and_input_gradients() {
        let dir = tempfile::tempdir().unwrap();
        let cnn = dir.path().join("cnn.safetensors");
        crate::testing::write_cnn_checkpoint(&cnn, AdapterKind::Gated, false).unwrap();
        let transformer = dir.path().join("transformer.safetensors");
        crate::testing::write_transformer_classifier_checkpoint(&transformer, 3).unwrap();
        let (ids, mask) = crate::testing::padded_batch(&[b"ACGTTGCA", b"GGGCCA"], 10);
        let dev = Device::Cpu;
        for path in [&cnn, &transformer] {
            let run = |ck: &Checkpoint| -> (Vec<u32>, Vec<u32>) {
                let clf = ck.get::<ClassifierConfig>().unwrap();
                let emb = Var::from_tensor(&clf.embed(&ids).unwrap()).unwrap();
                let logits = clf
                    .forward_from_embeddings(emb.as_tensor(), &mask, None)
                    .unwrap()
                    .logits;
                let w = Tensor::new(&[[1f32, -0.5], [0.25, 2.0]], &dev).unwrap();
                let grads = (&logits * w)
                    .unwrap()
                    .sum_all()
                    .unwrap()
                    .backward()
                    .unwrap();
                let bits = |t: &Tensor| -> Vec<u32> {
                    let v = t.flatten_all().unwrap().to_vec1::<f32>().unwrap();
                    v.iter().map(|v| v.to_bits()).collect()
                };
                (bits(&logits), bits(grads.get(emb.as_tensor()).unwrap()))
            };
            let trainable = Checkpoint::load(path, &dev).unwrap();
            let frozen = Checkpoint::load_frozen(path, &dev).unwrap();
            assert!(frozen.varmap.all_vars().is_empty());
            assert!(!trainable.varmap.all_vars().is_empty());
            assert_eq!(run(&frozen), run(&trainable), "{}", path.display());
        }
    }
}
