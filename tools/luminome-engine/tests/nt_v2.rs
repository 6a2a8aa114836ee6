//! The Nucleotide Transformer v2 against its authors' code: fixtures made by the published
//! remote code (`modeling_esm.py`) on tiny random configurations in the published layout, with
//! the published 6-mer vocabulary (tests/fixtures/nt_v2/README.md,
//! bench/reference/nt_v2/make_fixtures.py).

use std::path::PathBuf;

use candle_core::{DType, Device};
use candle_nn::VarBuilder;
use luminome_engine::backbones::{Backbone, NtV2Config, NtV2Encoder};
use luminome_engine::testing::max_abs_diff_masked;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/nt_v2")
        .join(name)
}

fn config(name: &str, max_length: usize) -> NtV2Config {
    let json = std::fs::read_to_string(fixture(name).join("config.json")).unwrap();
    NtV2Config::from_published(&json, name, max_length).unwrap()
}

fn encoder(name: &str, max_length: usize) -> NtV2Encoder {
    let tensors =
        candle_core::safetensors::load(fixture(name).join("model.safetensors"), &Device::Cpu)
            .unwrap();
    let vb = VarBuilder::from_tensors(tensors, DType::F32, &Device::Cpu);
    NtV2Encoder::new(&config(name, max_length), vb.pp("esm")).unwrap()
}

#[test]
fn hidden_states_match_the_authors_code_with_right_and_left_padding() {
    for name in ["tiny", "bias_long"] {
        let e = candle_core::safetensors::load(
            fixture(name).join("expected.safetensors"),
            &Device::Cpu,
        )
        .unwrap();
        let ids = e["input_ids"].to_dtype(DType::U32).unwrap();
        let mask = e["attention_mask"].to_dtype(DType::U32).unwrap();
        let (_, len) = ids.dims2().unwrap();
        let hidden = encoder(name, len).forward(&ids, &mask, None).unwrap();
        let (real, padding) = max_abs_diff_masked(&hidden, &e["hidden_states"], &mask);
        assert!(
            real < 1e-5,
            "{name}: hidden states differ by {real} at tokens"
        );
        // Padded positions hold what the port's layers give them there too.
        assert!(
            padding < 1e-5,
            "{name}: hidden states differ by {padding} at padding"
        );
    }
}

#[test]
fn the_published_keys_are_read_and_other_esm_models_and_mistyped_sizes_refused() {
    let json = std::fs::read_to_string(fixture("tiny").join("config.json")).unwrap();
    let cfg = config("tiny", 100);
    assert_eq!(cfg.max_length, 100);
    assert!(!cfg.add_bias_fnn && !cfg.emb_layer_norm_before);
    let refused = |text: &str, max_length: usize| {
        NtV2Config::from_published(text, "x/config.json", max_length)
            .unwrap_err()
            .to_string()
    };
    let v1 = json.replace("\"rotary\"", "\"absolute\"");
    assert!(refused(&v1, 100).contains("v1's learned positions"));
    let protein = json.replace("\"token_dropout\": false", "\"token_dropout\": true");
    assert!(refused(&protein, 100).contains("ESM protein model"));
    let other = json.replace("esm_config.EsmConfig", "configuration_bert.BertConfig");
    assert!(refused(&other, 100).contains("not a Nucleotide Transformer"));
    // transformers' own ESM names its model_type instead.
    let named = json.replacen('{', "{\"model_type\": \"bert\", ", 1);
    assert!(refused(&named, 100).contains("not a Nucleotide Transformer"));
    let huge = json.replace(
        &format!("\"hidden_size\": {}", cfg.hidden_size),
        "\"hidden_size\": 1000000",
    );
    assert!(refused(&huge, 100).contains("parameters is over"));
    let too_long = cfg.max_position_embeddings + 1;
    assert!(refused(&json, too_long).contains("max_position_embeddings"));
}

/// `luminome-train mlm --backbone nt-v2` builds the published `EsmForMaskedLM`: loaded from the
/// fixture by its published names (`esm.*`, `lm_head.*`), the masked-LM logits are the authors'.
#[test]
fn the_masked_lm_model_gives_the_authors_logits() {
    use luminome_engine::backbones::BackboneConfig;
    use luminome_engine::models::mlm::{MlmConfig, MlmModel};

    let e =
        candle_core::safetensors::load(fixture("tiny").join("expected.safetensors"), &Device::Cpu)
            .unwrap();
    let ids = e["input_ids"].to_dtype(DType::U32).unwrap();
    let mask = e["attention_mask"].to_dtype(DType::U32).unwrap();
    let (_, len) = ids.dims2().unwrap();
    let tensors =
        candle_core::safetensors::load(fixture("tiny").join("model.safetensors"), &Device::Cpu)
            .unwrap();
    let vb = VarBuilder::from_tensors(tensors, DType::F32, &Device::Cpu);
    let cfg = MlmConfig {
        backbone: BackboneConfig::NtV2(config("tiny", len)),
    };
    let logits = MlmModel::new(&cfg, vb)
        .unwrap()
        .forward(&ids, &mask, None)
        .unwrap();
    let pos: Vec<Vec<i64>> = e["mlm_logits_positions"]
        .to_dtype(DType::I64)
        .unwrap()
        .to_vec2()
        .unwrap();
    let expected: Vec<Vec<f32>> = e["mlm_logits"].to_vec2().unwrap();
    assert!(!pos.is_empty());
    for (p, want) in pos.iter().zip(&expected) {
        let got: Vec<f32> = logits
            .get(p[0] as usize)
            .unwrap()
            .get(p[1] as usize)
            .unwrap()
            .to_vec1()
            .unwrap();
        let worst = got
            .iter()
            .zip(want)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        assert!(worst < 1e-5, "logits at {p:?} differ by {worst}");
    }
}

/// Pretraining here writes the published names and the same configuration keys, so the
/// checkpoint's encoder is what `classify --init` and the published loader read.
#[test]
fn an_encoder_from_sizes_has_the_published_form() {
    let c = NtV2Config::from_sizes(4107, (16, 2, 4, 32), 20, 0.1).unwrap();
    let published = config("tiny", 20);
    assert_eq!(
        (c.layer_norm_eps, c.add_bias_fnn, c.emb_layer_norm_before),
        (
            published.layer_norm_eps,
            published.add_bias_fnn,
            published.emb_layer_norm_before
        )
    );
    assert_eq!(c.max_position_embeddings, 20);
    // Heads must split the width into an even number of channels (rotary pairs).
    assert!(NtV2Config::from_sizes(4107, (18, 2, 4, 32), 20, 0.1).is_err());
}
