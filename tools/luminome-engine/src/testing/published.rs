//! Tiny published-layout checkpoints of DNABERT-2 and the Nucleotide Transformer v2 (random
//! weights under the published names, the published `config.json` keys that mark each family,
//! their tokenizer files) and token datasets in their vocabularies: what the device check runs
//! the published backbones on, with no file from outside. The checks against the authors' code
//! use the committed fixtures (tests/fixtures/{dnabert2,nt_v2}); these are for CPU-vs-device
//! comparisons, where both sides load the same file.

use std::path::Path;

use anyhow::{bail, Result};
use candle_core::{DType, Device};
use candle_nn::{VarBuilder, VarMap};
use luminome_io::esm_vocab::EsmVocabEncoder;
use luminome_io::hf_checkpoint::HfCheckpoint;
use luminome_io::token_dataset::{special, TokenizerInfo, TokenizerScheme};
use serde_json::json;

use crate::backbones::{BackboneConfig, BackboneKind, Dnabert2Config, NtV2Config};

/// Writes a tiny checkpoint folder of `kind` (hidden 16, 2 layers, 2 heads) into `dir` and
/// returns the tokenizer its data must be made with.
pub fn write_published_checkpoint(dir: &Path, kind: BackboneKind) -> Result<TokenizerInfo> {
    std::fs::create_dir_all(dir)?;
    let sizes = json!({
        "hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2,
        "intermediate_size": 32, "hidden_dropout_prob": 0.0,
        "attention_probs_dropout_prob": 0.0, "layer_norm_eps": 1e-12,
    });
    let mut config = sizes.as_object().expect("an object").clone();
    let (backbone, tokenizer) = match kind {
        BackboneKind::NtV2 => {
            for (k, v) in json!({
                "auto_map": {"AutoConfig": "esm_config.EsmConfig"},
                "vocab_size": 4107, "max_position_embeddings": 2050, "add_bias_fnn": false,
                "position_embedding_type": "rotary", "token_dropout": false, "pad_token_id": 1,
            })
            .as_object()
            .expect("an object")
            {
                config.insert(k.clone(), v.clone());
            }
            std::fs::write(dir.join("vocab.txt"), nt_v2_vocab().join("\n"))?;
            std::fs::write(
                dir.join("tokenizer_config.json"),
                r#"{"eos_token": null, "tokenizer_class": "EsmTokenizer"}"#,
            )?;
            let text = serde_json::Value::Object(config.clone()).to_string();
            let cfg = NtV2Config::from_published(&text, "tiny NT-v2", 64)?;
            (BackboneConfig::NtV2(cfg), None)
        }
        BackboneKind::Dnabert2 => {
            let (vocab, json) = character_tokenizer_json();
            config.insert("vocab_size".into(), vocab.len().into());
            config.insert("alibi_starting_size".into(), 64.into());
            std::fs::write(dir.join("tokenizer.json"), &json)?;
            let text = serde_json::Value::Object(config.clone()).to_string();
            let cfg = Dnabert2Config::from_published(&text, "tiny DNABERT-2", 64)?;
            (BackboneConfig::Dnabert2(cfg), Some((vocab, json)))
        }
        other => bail!("{} is not a published family", other.name()),
    };
    std::fs::write(
        dir.join("config.json"),
        serde_json::Value::Object(config).to_string(),
    )?;
    let varmap = VarMap::new();
    backbone.build(VarBuilder::from_varmap(&varmap, DType::F32, &Device::Cpu))?;
    crate::nn::init::init_parameters(&varmap, 7, None)?;
    varmap.save(dir.join("model.safetensors"))?;
    match tokenizer {
        None => HfCheckpoint::open(dir, "tiny NT-v2")?
            .esm_tokenizer()?
            .ok_or_else(|| anyhow::anyhow!("internal: no EsmTokenizer written")),
        Some((vocab, json)) => Ok(TokenizerInfo {
            scheme: TokenizerScheme::Hf,
            pad_id: 0,
            unk_id: Some(4),
            cls_id: Some(1),
            sep_id: Some(2),
            mask_id: Some(3),
            add_cls: true,
            add_sep: true,
            k: None,
            kmer_step: None,
            hf_tokenizer_json: Some(json),
            vocab,
        }),
    }
}

/// Ids of `seq` in `tok` (one of the two above), framed as the tokenizer frames records.
pub fn encode_published(tok: &TokenizerInfo, seq: &[u8]) -> Result<Vec<u32>> {
    let mut ids: Vec<u32> = tok.cls_id.filter(|_| tok.add_cls).into_iter().collect();
    if tok.scheme == TokenizerScheme::EsmVocab {
        EsmVocabEncoder::new(tok)?.encode(seq, None, &mut ids, &mut Vec::new());
    } else {
        let id = |b: &u8| tok.vocab.iter().position(|t| t.as_bytes() == [*b]);
        ids.extend(seq.iter().map(|b| id(b).unwrap_or(4) as u32));
    }
    ids.extend(tok.sep_id.filter(|_| tok.add_sep));
    Ok(ids)
}

/// The published NT-v2 vocabulary: six specials, the 6-mers over A T C G, then A T C G N.
fn nt_v2_vocab() -> Vec<String> {
    let mut v: Vec<String> = ["<unk>", "<pad>", "<mask>", "<cls>", "<eos>", "<bos>"]
        .map(String::from)
        .to_vec();
    for i in 0..4096usize {
        v.push(
            (0..6)
                .map(|j| b"ATCG"[(i >> (2 * (5 - j))) & 3] as char)
                .collect(),
        );
    }
    v.extend(["A", "T", "C", "G", "N"].map(String::from));
    v
}

/// A WordLevel tokenizer.json of single bases with DNABERT-2's special names (`[PAD]` = 0 in
/// Luminome's order), and its vocabulary by id.
fn character_tokenizer_json() -> (Vec<String>, String) {
    let mut vocab: Vec<String> = special::NAMES.iter().map(|s| s.to_string()).collect();
    vocab.extend(["A", "C", "G", "T", "N"].map(String::from));
    let ids: serde_json::Map<String, serde_json::Value> = vocab
        .iter()
        .enumerate()
        .map(|(i, t)| (t.clone(), i.into()))
        .collect();
    let json = json!({
        "version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
        "normalizer": null,
        "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "."}, "behavior": "Isolated", "invert": false},
        "post_processor": null, "decoder": null,
        "model": {"type": "WordLevel", "vocab": ids, "unk_token": "[UNK]"},
    });
    (vocab, json.to_string())
}
