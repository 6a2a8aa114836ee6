//! A checkpoint's metadata: what the model is (its full config), what it reads, and where it came
//! from.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context, Result};
use luminome_io::pair_dataset::Pairing;
use luminome_io::token_dataset::TokenizerInfo;
use serde::{Deserialize, Serialize};

use crate::input::InputSpec;
use crate::models::ModelConfig;

pub const CHECKPOINT_KIND: &str = "luminome.checkpoint";
pub const CHECKPOINT_VERSION: u32 = 1;

/// The JSON stored in a checkpoint's `__metadata__["luminome"]` and in `<name>.config.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CheckpointMeta {
    pub kind: String,
    pub format_version: u32,
    /// The model: kind (`mlm` / `classifier`) and every size that rebuilds it.
    pub model: ModelConfig,
    /// Token models: the tokenizer of the dataset the model was trained on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokenizer: Option<TokenizerInfo>,
    /// Region models: the names of the features each region carries, in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feature_names: Option<Vec<String>>,
    /// Paired-strand models: what strand B was relative to A in the training pairs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pairing: Option<Pairing>,
    /// Tabular models: the feature columns they read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table_columns: Option<Vec<String>>,
    /// Optimizer step the weights are from.
    pub step: u64,
    /// Dev metrics at that step (when evaluated). A metric that is undefined on the dev set
    /// (e.g. AUROC without both classes) is NaN, which JSON writes as `null` and reads back as
    /// NaN, so a checkpoint can always be read by the tool that wrote it.
    #[serde(deserialize_with = "metrics_with_nan")]
    pub metrics: BTreeMap<String, f64>,
    pub sources: Vec<String>,
    pub tool: String,
    pub tool_version: String,
    pub command_line: String,
}

/// Metrics whose `null`s (NaN as serde_json writes it) read back as NaN.
fn metrics_with_nan<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<BTreeMap<String, f64>, D::Error> {
    let raw: BTreeMap<String, Option<f64>> = serde::Deserialize::deserialize(d)?;
    Ok(raw
        .into_iter()
        .map(|(k, v)| (k, v.unwrap_or(f64::NAN)))
        .collect())
}

impl CheckpointMeta {
    /// The metadata of a new checkpoint at step 0, without metrics.
    pub fn new(
        model: ModelConfig,
        input: InputSpec,
        sources: Vec<String>,
        tool: &str,
        command_line: &str,
    ) -> Self {
        let (tokenizer, feature_names, pairing, table_columns) = match input {
            InputSpec::Tokens(t) => (Some(t), None, None, None),
            InputSpec::RegionFeatures(f) => (None, Some(f), None, None),
            InputSpec::TokenPairs(t, p) => (Some(t), None, Some(p), None),
            InputSpec::Table(c) => (None, None, None, Some(c)),
        };
        Self {
            kind: CHECKPOINT_KIND.into(),
            format_version: CHECKPOINT_VERSION,
            model,
            tokenizer,
            feature_names,
            pairing,
            table_columns,
            step: 0,
            metrics: BTreeMap::new(),
            sources,
            tool: tool.into(),
            tool_version: luminome_cli::VERSION.into(),
            command_line: command_line.into(),
        }
    }

    /// What the model reads.
    pub fn input(&self, ckpt: &Path) -> Result<InputSpec> {
        match (&self.tokenizer, &self.feature_names, self.pairing, &self.table_columns) {
            (Some(t), None, None, None) => Ok(InputSpec::Tokens(t.clone())),
            (None, Some(f), None, None) => Ok(InputSpec::RegionFeatures(f.clone())),
            (Some(t), None, Some(p), None) => Ok(InputSpec::TokenPairs(t.clone(), p)),
            (None, None, None, Some(c)) => Ok(InputSpec::Table(c.clone())),
            _ => bail!(
                "{}: the checkpoint metadata must record one of a tokenizer, feature names or table columns",
                ckpt.display()
            ),
        }
    }

    /// Checks that `dataset` is the kind of dataset the model in `model` reads (before anything else
    /// is read from either), with a message naming both files when it is not.
    pub fn check_dataset_kind(&self, model: &Path, dataset: &Path) -> Result<()> {
        let spec = self.input(model)?;
        let file = luminome_io::tensorfile::TensorFile::open(dataset)?;
        let kind = file
            .metadata()
            .get("kind")
            .map(String::as_str)
            .unwrap_or("");
        if kind != spec.dataset_kind() {
            let what = match kind {
                luminome_io::token_dataset::TOKEN_DATASET_KIND => {
                    "a token dataset (luminome-tokenize)"
                }
                luminome_io::region_dataset::REGION_DATASET_KIND => {
                    "a region dataset (luminome-regions)"
                }
                luminome_io::pair_dataset::PAIR_DATASET_KIND => {
                    "a paired dataset (luminome-mask-pairs)"
                }
                _ => "not a Luminome dataset",
            };
            bail!(
                "{}: {what}, but the {} in {} reads {}",
                dataset.display(),
                self.model.family(),
                model.display(),
                spec.describe()
            );
        }
        Ok(())
    }

    /// The tokenizer a token model was trained with, or an error naming what the model reads.
    pub fn tokenizer(&self, ckpt: &Path) -> Result<&TokenizerInfo> {
        match &self.tokenizer {
            Some(t) => Ok(t),
            None => bail!(
                "{}: this model reads {}, not token ids",
                ckpt.display(),
                self.input(ckpt)?.describe()
            ),
        }
    }

    /// Checks that a dataset's tokenizer is the one the model was trained with.
    pub fn check_tokenizer(&self, ckpt: &Path, dataset: &Path, tok: &TokenizerInfo) -> Result<()> {
        let mine = self.tokenizer(ckpt)?;
        if !tok.same_tokenization(mine) {
            bail!(
                "{}: tokenized differently from the data the checkpoint was trained on (dataset: {}; checkpoint {}: {}{}); re-tokenize it to match with `luminome-tokenize --like {}`{}",
                dataset.display(),
                tok.describe(),
                ckpt.display(),
                mine.describe(),
                crate::input::tokens::vocab_note(tok, mine),
                ckpt.display(),
                mine.tokenize_flags()
                    .map(|f| format!(" (the same as `{f}`)"))
                    .unwrap_or_default()
            );
        }
        Ok(())
    }
}

/// What a file that is not safetensors most likely is, from its first 8 bytes (safetensors starts
/// with its header's length, a small little-endian number).
fn what_the_file_starts_as(first: &[u8; 8]) -> String {
    match first {
        [b'P', b'K', 3, 4, ..] => "a zip archive: a PyTorch .pt/.bin/.ckpt file?".into(),
        [0x80, 2..=5, ..] => "a Python pickle: a PyTorch file?".into(),
        [0x1f, 0x8b, ..] => "gzip-compressed: decompress it first".into(),
        [0x89, b'H', b'D', b'F', ..] => "an HDF5 file (Keras?)".into(),
        _ if first
            .iter()
            .all(|b| b.is_ascii_graphic() || b.is_ascii_whitespace()) =>
        {
            format!(
                "it starts with the text {:?}",
                String::from_utf8_lossy(first)
            )
        }
        _ => "its first 8 bytes are not a safetensors header length".into(),
    }
}

/// What to say when a folder is given where a checkpoint file is read: a run folder's
/// checkpoints by name.
fn folder_given_for_a_file(path: &Path) -> String {
    let found: Vec<String> = ["best.safetensors", "last.safetensors"]
        .iter()
        .map(|f| path.join(f))
        .filter(|p| p.is_file())
        .map(|p| p.display().to_string())
        .collect();
    if found.is_empty() {
        format!(
            "{}: a folder, not a checkpoint file (a luminome-train output: best.safetensors, last.safetensors)",
            path.display()
        )
    } else {
        format!(
            "{}: a run folder, not a checkpoint file; give one of its checkpoints: {}",
            path.display(),
            found.join(" or ")
        )
    }
}

/// Reads only a checkpoint's metadata.
pub fn read_checkpoint_meta(path: &Path) -> Result<CheckpointMeta> {
    if path.is_dir() {
        bail!("{}", folder_given_for_a_file(path));
    }
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
            "{}: not a safetensors checkpoint ({}); a checkpoint is a luminome-train output \
             (best.safetensors, last.safetensors) or a published model's folder",
            path.display(),
            what_the_file_starts_as(&len)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_that_is_not_safetensors_is_named_for_what_it_is() {
        let dir = tempfile::tempdir().unwrap();
        for (bytes, says) in [
            (
                &b"sequence,label\nACGT,1\n"[..],
                "starts with the text \"sequence\"",
            ),
            (
                &b"PK\x03\x04\x14\x00\x00\x00\x08\x00"[..],
                "PyTorch .pt/.bin/.ckpt",
            ),
            (
                &[0x80, 2, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9][..],
                "pickle",
            ),
        ] {
            let p = dir.path().join("model.pt");
            std::fs::write(&p, bytes).unwrap();
            let e = format!("{:#}", read_checkpoint_meta(&p).unwrap_err());
            assert!(
                e.contains("not a safetensors checkpoint") && e.contains(says),
                "{e}"
            );
            assert!(!e.contains("header length"), "{e}");
        }
    }

    /// A run folder given where a checkpoint file is read (`--resume run/`, `--checkpoint run/`)
    /// names the folder's checkpoints (it read as "not a safetensors file (too short): Is a
    /// directory").
    #[test]
    fn a_run_folder_given_for_a_checkpoint_names_its_checkpoints() {
        let dir = tempfile::tempdir().unwrap();
        let e = format!("{:#}", read_checkpoint_meta(dir.path()).unwrap_err());
        assert!(e.contains("a folder, not a checkpoint file"), "{e}");
        std::fs::write(dir.path().join("last.safetensors"), b"x").unwrap();
        let e = format!("{:#}", read_checkpoint_meta(dir.path()).unwrap_err());
        assert!(
            e.contains("a run folder")
                && e.contains("last.safetensors")
                && !e.contains("too short"),
            "{e}"
        );
    }

    /// A tiny masked-LM config (its metadata is what these tests read).
    fn tiny_mlm(vocab_size: usize) -> ModelConfig {
        ModelConfig::from(crate::models::mlm::MlmConfig {
            backbone: crate::backbones::BackboneConfig::Transformer(
                crate::backbones::EncoderConfig {
                    vocab_size,
                    d_model: 8,
                    num_layers: 1,
                    num_heads: 2,
                    ffn_dim: 16,
                    dropout: 0.0,
                    max_length: 16,
                    position: crate::backbones::PositionEncoding::Learned,
                    layer_norm_eps: 1e-5,
                    pad_id: 0,
                    attention: Default::default(),
                },
            ),
        })
    }

    /// A dev metric that is undefined (NaN: AUROC of a dev set with one class) is written as
    /// JSON null and must read back, or the tool cannot open the checkpoint it just wrote.
    #[test]
    fn an_undefined_metric_round_trips_as_nan() {
        let model = tiny_mlm(10);
        let tok = TokenizerInfo::nucleotide(true, true);
        let mut meta = CheckpointMeta::new(model, InputSpec::Tokens(tok), vec![], "t", "");
        meta.metrics.insert("dev_auroc".into(), f64::NAN);
        meta.metrics.insert("dev_loss".into(), 0.5);
        let text = serde_json::to_string(&meta).unwrap();
        assert!(text.contains("\"dev_auroc\":null"), "{text}");
        let back: CheckpointMeta = serde_json::from_str(&text).unwrap();
        assert!(back.metrics["dev_auroc"].is_nan());
        assert_eq!(back.metrics["dev_loss"], 0.5);
    }

    /// A checkpoint trained on non-overlapping 3-mers refuses overlapping 3-mers (the same
    /// vocabulary, other ids for the same bases), naming both tokenizations and the fix.
    #[test]
    fn a_dataset_tokenized_otherwise_than_the_checkpoint_is_refused_naming_both() {
        let mine = TokenizerInfo::kmer(3, 3, true, true);
        let model = tiny_mlm(mine.vocab_size());
        let meta = CheckpointMeta::new(model, InputSpec::Tokens(mine.clone()), vec![], "t", "");
        let (ck, ds) = (
            Path::new("genome.safetensors"),
            Path::new("task.safetensors"),
        );
        assert!(meta.check_tokenizer(ck, ds, &mine).is_ok());
        let overlapping = TokenizerInfo::kmer(3, 1, true, true);
        assert_eq!(overlapping.vocab, mine.vocab);
        let e = meta
            .check_tokenizer(ck, ds, &overlapping)
            .unwrap_err()
            .to_string();
        for part in [
            "task.safetensors",
            "genome.safetensors",
            "kmer k=3 overlapping",
            "kmer k=3 non-overlapping",
            "--like genome.safetensors",
            "--scheme kmer -k 3 --kmer-mode non-overlapping",
        ] {
            assert!(e.contains(part), "{part:?} missing: {e}");
        }
        let nucleotide = TokenizerInfo::nucleotide(true, true);
        let e = meta
            .check_tokenizer(ck, ds, &nucleotide)
            .unwrap_err()
            .to_string();
        assert!(e.contains("nucleotide, [CLS]+[SEP], 10 tokens"), "{e}");
    }
}
