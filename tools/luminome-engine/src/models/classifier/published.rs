//! `luminome-train classify --init DIR|hf:ORG/NAME`: a published foundation model as the
//! classifier's backbone, loaded as its authors publish it (docs/pretrained-models.md): DNABERT-2
//! ([`crate::backbones::dnabert2`], weights under `bert.`) or the Nucleotide Transformer v2
//! ([`crate::backbones::nt_v2`], weights under `esm.`), told apart by their `config.json`.
//!
//! The training data must be tokenized with the checkpoint's own tokenizer
//! (`luminome-tokenize --scheme hf --tokenizer DIR`), recorded in the dataset: a model cannot be
//! paired with another vocabulary.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use candle_core::Device;
use candle_nn::VarMap;
use luminome_io::token_dataset::{TokenDataset, TokenizerInfo, TokenizerScheme};

use crate::backbones::{BackboneConfig, BackboneKind, Dnabert2Config, NtV2Config};
use crate::checkpoint::{load_into, read_safetensors};

/// A published checkpoint opened as a backbone: its configuration and where its weights are.
pub struct PublishedBackbone {
    pub backbone: BackboneConfig,
    pub weights: PathBuf,
    /// What the user named (`hf:ORG/NAME` or the folder).
    pub name: String,
}

impl PublishedBackbone {
    /// Opens `init` (a folder or `hf:ORG/NAME[@REVISION]`) for a classifier on `train` as the
    /// family `kind` names (`--backbone`; the other family's checkpoint is refused before its
    /// data is checked); `dropout` (`--dropout`) replaces its hidden dropout.
    pub fn open_as(
        init: &Path,
        kind: BackboneKind,
        train: &TokenDataset,
        dropout: Option<f64>,
    ) -> Result<Self> {
        let name = init.display().to_string();
        let ck = luminome_cli::hub::open_checkpoint(&name)?;
        let json = ck.config_text()?;
        let found = published_kind(&json).unwrap_or(BackboneKind::Dnabert2);
        if found != kind {
            bail!(
                "{name}: a {} checkpoint, but --backbone says {}",
                found.name(),
                kind.name()
            );
        }
        let what = format!("{name}: config.json");
        let (backbone, rows) = match kind {
            BackboneKind::NtV2 => {
                let expected = ck.esm_tokenizer()?.with_context(|| {
                    format!("{name}: a Nucleotide Transformer without its EsmTokenizer files (tokenizer_config.json, vocab.txt)")
                })?;
                check_same_tokenizer(train, &expected, &name)?;
                let mut c = NtV2Config::from_published(&json, &what, train.max_length())?;
                let vocab_rows = c.vocab_size;
                c.hidden_dropout_prob = dropout.unwrap_or(c.hidden_dropout_prob);
                (BackboneConfig::NtV2(c), vocab_rows)
            }
            _ => {
                let mut c = Dnabert2Config::from_published(&json, &what, train.max_length())?;
                let tokenizer = ck.dir.join("tokenizer.json");
                let text = std::fs::read_to_string(&tokenizer).with_context(|| {
                    format!(
                        "{name}: reading {} (the model's tokenizer)",
                        tokenizer.display()
                    )
                })?;
                check_tokenized_with(train, &text, &name, &tokenizer)?;
                let vocab_rows = c.vocab_size;
                c.hidden_dropout_prob = dropout.unwrap_or(c.hidden_dropout_prob);
                (BackboneConfig::Dnabert2(c), vocab_rows)
            }
        };
        if let Some(d) = dropout {
            backbone
                .validate()
                .with_context(|| format!("--dropout {d}"))?;
        }
        let vocab = train.tokenizer().vocab_size();
        if vocab > rows {
            bail!("{name}: the tokenizer has {vocab} tokens, the model's embedding {rows}");
        }
        Ok(Self {
            backbone,
            weights: ck.weights_path(),
            name,
        })
    }

    /// The parameter prefix of the published weights (`bert.`, `esm.`).
    fn prefix(&self) -> String {
        format!("{}.", self.backbone.prefix())
    }

    /// Copies the published weights into the model's backbone parameters (every one must be
    /// there with its shape; the file's pooler, masked-LM and contact heads are not used).
    pub fn load(&self, varmap: &VarMap, device: &Device) -> Result<usize> {
        let (_, tensors) = read_safetensors(&self.weights, device)?;
        load_into(varmap, &tensors, &self.weights, Some(&self.prefix()))
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

/// Which published family a `config.json` describes: an ESM configuration is the Nucleotide
/// Transformer, `alibi_starting_size` marks DNABERT-2; `None` for anything else.
pub fn published_kind(config_json: &str) -> Option<BackboneKind> {
    let v: serde_json::Value = serde_json::from_str(config_json).ok()?;
    if crate::backbones::nt_v2::is_esm_config(&v) {
        Some(BackboneKind::NtV2)
    } else if v.get("alibi_starting_size").is_some() {
        Some(BackboneKind::Dnabert2)
    } else {
        None
    }
}

/// The family of the published checkpoint `init` (a folder or `hf:ORG/NAME`), read from its
/// config.json; DNABERT-2 when the file says neither (opening it then says why).
pub fn kind_of(init: &Path) -> Result<BackboneKind> {
    let ck = luminome_cli::hub::open_checkpoint(&init.display().to_string())?;
    Ok(published_kind(&ck.config_text()?).unwrap_or(BackboneKind::Dnabert2))
}

/// The dataset's ids must come from this published tokenizer (the same vocabulary, special
/// tokens and framing).
fn check_same_tokenizer(train: &TokenDataset, expected: &TokenizerInfo, name: &str) -> Result<()> {
    if !train.tokenizer().same_tokenization(expected) {
        bail!(
            "{}: not tokenized with {name}'s tokenizer (the data: {}; the model: {}); tokenize the data with `luminome-tokenize --scheme hf --tokenizer {name}` (every split the same way)",
            train.path().display(),
            train.tokenizer().describe(),
            expected.describe()
        );
    }
    Ok(())
}
