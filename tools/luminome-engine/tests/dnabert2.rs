//! DNABERT-2 against its authors' code: fixtures made by their `bert_layers.py` (pure-PyTorch
//! attention path) on tiny random configurations in the published layout
//! (tests/fixtures/dnabert2/README.md, bench/reference/dnabert2/make_fixtures.py).

use std::path::PathBuf;

use candle_core::{DType, Device};
use candle_nn::VarBuilder;
use luminome_engine::backbones::{Backbone, Dnabert2Config, Dnabert2Encoder};
use luminome_engine::testing::max_abs_diff_masked;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/dnabert2")
        .join(name)
}

fn encoder(name: &str, max_length: usize) -> Dnabert2Encoder {
    let dir = fixture(name);
    let json = std::fs::read_to_string(dir.join("config.json")).unwrap();
    let cfg = Dnabert2Config::from_published(&json, name, max_length).unwrap();
    let tensors =
        candle_core::safetensors::load(dir.join("model.safetensors"), &Device::Cpu).unwrap();
    let vb = VarBuilder::from_tensors(tensors, DType::F32, &Device::Cpu);
    Dnabert2Encoder::new(&cfg, vb.pp("bert")).unwrap()
}

#[test]
fn hidden_states_match_the_authors_code_with_padding_and_alibi_past_its_starting_size() {
    for name in ["tiny", "heads6_long"] {
        let e = candle_core::safetensors::load(
            fixture(name).join("expected.safetensors"),
            &Device::Cpu,
        )
        .unwrap();
        let ids = e["input_ids"].to_dtype(DType::U32).unwrap();
        let mask = &e["attention_mask"];
        let (_, len) = ids.dims2().unwrap();
        let enc = encoder(name, len);
        let hidden = enc.forward(&ids, mask, None).unwrap();
        let (real, padding) = max_abs_diff_masked(&hidden, &e["hidden_states"], mask);
        assert!(
            real < 1e-4,
            "{name}: hidden states differ by {real} at tokens"
        );
        assert!(
            padding < 1e-6,
            "{name}: hidden states differ by {padding} at padding"
        );
    }
}

#[test]
fn the_published_keys_are_read_and_other_architectures_and_mistyped_sizes_refused() {
    let json = std::fs::read_to_string(fixture("tiny").join("config.json")).unwrap();
    let cfg = Dnabert2Config::from_published(&json, "tiny", 100).unwrap();
    assert_eq!(cfg.max_length, 100);
    let not_mosaic = json.replace("alibi_starting_size", "something_else");
    let err = Dnabert2Config::from_published(&not_mosaic, "x/config.json", 100).unwrap_err();
    assert!(
        err.to_string().contains("not a DNABERT-2 configuration"),
        "{err}"
    );
    // A mistyped size is refused before anything is allocated.
    let huge = json.replace("\"hidden_size\": 32", "\"hidden_size\": 1000000");
    let err = Dnabert2Config::from_published(&huge, "x/config.json", 100).unwrap_err();
    assert!(err.to_string().contains("parameters is over"), "{err}");
    let heads = json.replace("\"num_attention_heads\": 4", "\"num_attention_heads\": 5");
    let err = Dnabert2Config::from_published(&heads, "x/config.json", 100).unwrap_err();
    assert!(err.to_string().contains("not a multiple"), "{err}");
}
