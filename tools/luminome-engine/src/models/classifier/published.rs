//! `luminome-train classify --init DIR|hf:ORG/NAME`: a published foundation model as the
//! classifier's backbone, loaded as its authors publish it (docs/pretrained-models.md). Today
//! DNABERT-2 ([`crate::backbones::dnabert2`]); its weights keep their names under `bert.`.
//!
//! The training data must be tokenized with the checkpoint's own `tokenizer.json`
//! (`luminome-tokenize --scheme hf --tokenizer DIR`), recorded verbatim in the dataset: a model
//! cannot be paired with another vocabulary.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use candle_core::Device;
use candle_nn::VarMap;
use luminome_io::token_dataset::{TokenDataset, TokenizerScheme};

use crate::backbones::{BackboneConfig, Dnabert2Config};
use crate::checkpoint::{load_into, read_safetensors};

/// A published checkpoint opened as a backbone: its configuration and where its weights are.
pub struct PublishedBackbone {
    pub backbone: BackboneConfig,
    pub weights: PathBuf,
    /// What the user named (`hf:ORG/NAME` or the folder).
    pub name: String,
}

impl PublishedBackbone {
    /// Opens `init` (a folder or `hf:ORG/NAME[@REVISION]`) for a classifier on `train`.
    pub fn open(init: &Path, train: &TokenDataset) -> Result<Self> {
        let name = init.display().to_string();
        let ck = luminome_cli::hub::open_checkpoint(&name)?;
        let config = Dnabert2Config::from_published(
            &ck.config_text()?,
            &format!("{name}: config.json"),
            train.max_length(),
        )?;
        let tokenizer = ck.dir.join("tokenizer.json");
        let json = std::fs::read_to_string(&tokenizer).with_context(|| {
            format!(
                "{name}: reading {} (the model's tokenizer)",
                tokenizer.display()
            )
        })?;
        check_tokenized_with(train, &json, &name, &tokenizer)?;
        let vocab = train.tokenizer().vocab_size();
        if vocab > config.vocab_size {
            bail!(
                "{name}: the tokenizer has {vocab} tokens, the model's embedding {}",
                config.vocab_size
            );
        }
        Ok(Self {
            backbone: BackboneConfig::Dnabert2(config),
            weights: ck.weights_path(),
            name,
        })
    }

    /// Copies the published weights into the model's `bert.*` parameters (every one must be
    /// there with its shape; the pooler and masked-LM head of the file are not used).
    pub fn load(&self, varmap: &VarMap, device: &Device) -> Result<usize> {
        let (_, tensors) = read_safetensors(&self.weights, device)?;
        load_into(varmap, &tensors, &self.weights, Some("bert."))
            .with_context(|| format!("{}: loading the published weights", self.name))
    }
}

/// The dataset's ids must come from this tokenizer.json, with [CLS] and [SEP] around each record
/// as the model was trained.
fn check_tokenized_with(
    train: &TokenDataset,
    json: &str,
    name: &str,
    tokenizer: &Path,
) -> Result<()> {
    let t = train.tokenizer();
    let same = t.scheme == TokenizerScheme::Hf
        && t.hf_tokenizer_json.as_deref() == Some(json)
        && t.add_cls
        && t.add_sep;
    if !same {
        bail!(
            "{}: not tokenized with {name}'s tokenizer ({}); tokenize the data with `luminome-tokenize --scheme hf --tokenizer {}` (every split the same way)",
            train.path().display(),
            t.describe(),
            tokenizer.display()
        );
    }
    Ok(())
}
