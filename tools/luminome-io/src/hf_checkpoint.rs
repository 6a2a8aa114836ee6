//! A published model in the Hugging Face layout: a folder with `config.json`,
//! `model.safetensors` and the tokenizer's files, read as its authors publish it. Fetching one by
//! name (`hf:ORG/NAME`) is `luminome_cli::hub`; this module reads the folder.
//!
//! The tokenizer of a DNA character model, as a [`TokenizerInfo`] of scheme `characters` (one
//! token per base), from either file its authors ship:
//! - `tokenizer.json` (a fast tokenizer, e.g. PlantCaduceus', GPN's `[PAD] [MASK] [UNK] a c g t`):
//!   its WordLevel vocabulary; a post-processor that appends `[SEP]` sets `add_sep`;
//! - `tokenizer_config.json` of Caduceus' `CaduceusTokenizer`: `[CLS] [SEP] [BOS] [MASK] [PAD]
//!   [RESERVED] [UNK]` then its `characters` (default A C G T N); it appends `[SEP]`.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::token_dataset::{TokenizerInfo, TokenizerScheme};

/// The files of a published checkpoint folder.
#[derive(Debug, Clone)]
pub struct HfCheckpoint {
    pub dir: PathBuf,
    /// What the user named (`hf:ORG/NAME` or the folder), for messages.
    pub name: String,
}

impl HfCheckpoint {
    /// A folder in the Hugging Face layout: it must hold `config.json` and `model.safetensors`.
    pub fn open(dir: &Path, name: &str) -> Result<Self> {
        if !dir.is_dir() {
            bail!("{name}: not a folder (a published checkpoint is a folder with config.json and model.safetensors)");
        }
        if !dir.join("config.json").is_file() {
            let luminome = ["best.safetensors", "last.safetensors"]
                .iter()
                .find(|f| dir.join(f).is_file());
            if let Some(f) = luminome {
                bail!(
                    "{name}: a Luminome run folder, not a published checkpoint; give its checkpoint file ({})",
                    dir.join(f).display()
                );
            }
            bail!("{name}: no config.json in {}", dir.display());
        }
        if !dir.join("model.safetensors").is_file() {
            let bin = dir.join("pytorch_model.bin");
            if bin.is_file() {
                bail!(
                    "{name}: the weights are only in pytorch_model.bin (a pickle, not read here); convert them once in that folder with\n  python -c \"import torch; from safetensors.torch import save_file; sd = torch.load('pytorch_model.bin', map_location='cpu'); save_file({{k: v.clone().contiguous() for k, v in sd.items()}}, 'model.safetensors')\""
                );
            }
            bail!("{name}: no model.safetensors in {}", dir.display());
        }
        Ok(Self {
            dir: dir.to_path_buf(),
            name: name.to_string(),
        })
    }

    pub fn config_path(&self) -> PathBuf {
        self.dir.join("config.json")
    }

    pub fn weights_path(&self) -> PathBuf {
        self.dir.join("model.safetensors")
    }

    /// `config.json` as text.
    pub fn config_text(&self) -> Result<String> {
        std::fs::read_to_string(self.config_path())
            .with_context(|| format!("{}: reading config.json", self.name))
    }

    /// The model's tokenizer (see the module documentation).
    pub fn tokenizer(&self) -> Result<TokenizerInfo> {
        if let Some(t) = self.esm_tokenizer()? {
            return Ok(t);
        }
        let fast = self.dir.join("tokenizer.json");
        if fast.is_file() {
            let text = std::fs::read_to_string(&fast)?;
            return from_tokenizer_json(&text)
                .with_context(|| format!("{}: {}", self.name, fast.display()));
        }
        let cfg = self.dir.join("tokenizer_config.json");
        if cfg.is_file() {
            let text = std::fs::read_to_string(&cfg)?;
            return from_character_config(&text)
                .with_context(|| format!("{}: {}", self.name, cfg.display()));
        }
        bail!(
            "{}: no tokenizer.json or tokenizer_config.json in {}: the model's vocabulary is unknown",
            self.name,
            self.dir.display()
        )
    }
}

impl HfCheckpoint {
    /// The `EsmTokenizer` of a Nucleotide Transformer checkpoint (its `tokenizer_config.json`
    /// names that class): `vocab.txt` and the special tokens as `transformers` resolves them;
    /// `None` for any other tokenizer.
    pub fn esm_tokenizer(&self) -> Result<Option<TokenizerInfo>> {
        let read = |file: &str| -> Result<Option<String>> {
            let path = self.dir.join(file);
            match path.is_file() {
                true => std::fs::read_to_string(&path)
                    .map(Some)
                    .with_context(|| format!("{}: reading {}", self.name, path.display())),
                false => Ok(None),
            }
        };
        let Some(config) = read("tokenizer_config.json")? else {
            return Ok(None);
        };
        let doc: serde_json::Value = serde_json::from_str(&config)
            .with_context(|| format!("{}: tokenizer_config.json is not JSON", self.name))?;
        if doc.get("tokenizer_class").and_then(|c| c.as_str()) != Some("EsmTokenizer") {
            return Ok(None);
        }
        let vocab = read("vocab.txt")?.with_context(|| {
            format!(
                "{}: an EsmTokenizer without vocab.txt in {}",
                self.name,
                self.dir.display()
            )
        })?;
        let map = read("special_tokens_map.json")?;
        crate::esm_vocab::tokenizer_info(&vocab, &doc, map.as_deref())
            .with_context(|| format!("{}: its EsmTokenizer files", self.name))
            .map(Some)
    }
}

/// A fast tokenizer's WordLevel vocabulary of single characters.
fn from_tokenizer_json(text: &str) -> Result<TokenizerInfo> {
    let doc: serde_json::Value = serde_json::from_str(text).context("not JSON")?;
    let vocab = doc
        .pointer("/model/vocab")
        .and_then(|v| v.as_object())
        .context("no model.vocab map (not a WordLevel tokenizer of characters)")?;
    let mut tokens: Vec<Option<String>> = vec![None; vocab.len()];
    for (tok, id) in vocab {
        let id = id.as_u64().context("a vocabulary id is not a number")? as usize;
        let slot = tokens.get_mut(id).with_context(|| {
            format!("token {tok:?} has id {id}, past the {} tokens", vocab.len())
        })?;
        if slot.replace(tok.clone()).is_some() {
            bail!("two tokens have id {id}");
        }
    }
    let tokens: Vec<String> = tokens.into_iter().map(|t| t.unwrap_or_default()).collect();
    // A post-processor that adds [SEP] after each sequence.
    let post = doc
        .get("post_processor")
        .map(|p| p.to_string())
        .unwrap_or_default();
    let add_sep = post.contains("[SEP]");
    characters_info(tokens, add_sep)
}

/// `CaduceusTokenizer`'s vocabulary from its `tokenizer_config.json`.
fn from_character_config(text: &str) -> Result<TokenizerInfo> {
    let doc: serde_json::Value = serde_json::from_str(text).context("not JSON")?;
    let characters: Vec<String> = match doc.get("characters") {
        Some(c) => {
            serde_json::from_value(c.clone()).context("characters is not a list of strings")?
        }
        None => ["A", "C", "G", "T", "N"].map(String::from).to_vec(),
    };
    let mut tokens: Vec<String> = [
        "[CLS]",
        "[SEP]",
        "[BOS]",
        "[MASK]",
        "[PAD]",
        "[RESERVED]",
        "[UNK]",
    ]
    .map(String::from)
    .to_vec();
    tokens.extend(characters);
    characters_info(tokens, true)
}

fn characters_info(tokens: Vec<String>, add_sep: bool) -> Result<TokenizerInfo> {
    let id = |name: &str| tokens.iter().position(|t| t == name).map(|i| i as u32);
    for base in ["A", "C", "G", "T"] {
        if !tokens.iter().any(|t| t.eq_ignore_ascii_case(base)) {
            bail!("the vocabulary has no {base} token: not a DNA character vocabulary");
        }
    }
    let Some(mask_id) = id("[MASK]") else {
        bail!("the vocabulary has no [MASK] token");
    };
    let pad_id = id("[PAD]").context("the vocabulary has no [PAD] token")?;
    let sep_id = id("[SEP]");
    if add_sep && sep_id.is_none() {
        bail!("the tokenizer appends [SEP], which is not in its vocabulary");
    }
    Ok(TokenizerInfo {
        scheme: TokenizerScheme::Characters,
        pad_id,
        unk_id: id("[UNK]"),
        cls_id: id("[CLS]"),
        sep_id,
        mask_id: Some(mask_id),
        add_cls: false,
        add_sep,
        k: None,
        kmer_step: None,
        hf_tokenizer_json: None,
        vocab: tokens,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gpn_style_tokenizer_json_gives_its_lowercase_bases_without_sep() {
        let json = r#"{"model": {"type": "WordLevel", "vocab": {"[PAD]": 0, "[MASK]": 1, "[UNK]": 2, "a": 3, "c": 4, "g": 5, "t": 6}}, "post_processor": null}"#;
        let t = from_tokenizer_json(json).unwrap();
        assert_eq!(t.vocab, ["[PAD]", "[MASK]", "[UNK]", "a", "c", "g", "t"]);
        assert_eq!((t.pad_id, t.mask_id, t.unk_id), (0, Some(1), Some(2)));
        assert!(!t.add_sep && !t.add_cls);
        assert_eq!(crate::masking::base_ids(&t), Some([3, 4, 5, 6]));
    }

    #[test]
    fn caduceus_character_config_appends_sep_after_seven_specials() {
        let t = from_character_config(r#"{"characters": ["A", "C", "G", "T", "N"]}"#).unwrap();
        assert_eq!(t.vocab.len(), 12);
        assert_eq!(t.vocab[7], "A");
        assert_eq!((t.pad_id, t.mask_id, t.sep_id), (4, Some(3), Some(1)));
        assert!(t.add_sep);
    }

    #[test]
    fn a_luminome_run_folder_given_as_a_published_checkpoint_names_its_file() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("best.safetensors"), b"").unwrap();
        let e = HfCheckpoint::open(d.path(), "run/")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("Luminome run folder") && e.contains("best.safetensors"),
            "{e}"
        );
        std::fs::remove_file(d.path().join("best.safetensors")).unwrap();
        let e = HfCheckpoint::open(d.path(), "x/").unwrap_err().to_string();
        assert!(e.contains("no config.json"), "{e}");
    }

    #[test]
    fn a_vocabulary_without_bases_is_refused() {
        let json = r#"{"model": {"vocab": {"[PAD]": 0, "[MASK]": 1, "the": 2}}}"#;
        let e = from_tokenizer_json(json).unwrap_err().to_string();
        assert!(e.contains("no A token"), "{e}");
    }
}
