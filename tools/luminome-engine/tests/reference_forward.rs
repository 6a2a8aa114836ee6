//! The forward pass agrees with an independent PyTorch implementation
//! (fixtures/make_reference.py → fixtures/reference.safetensors), in float64.

use std::path::Path;

use candle_core::{DType, Device, Tensor};
use candle_nn::{VarBuilder, VarMap};
use luminome_engine::backbones::{BackboneConfig, EncoderConfig, PositionEncoding};
use luminome_engine::checkpoint::{load_into, read_safetensors};
use luminome_engine::models::classifier::{AdapterKind, Classifier, ClassifierConfig};
use luminome_engine::models::mlm::{MlmConfig, MlmModel};

fn encoder(position: PositionEncoding) -> EncoderConfig {
    EncoderConfig {
        vocab_size: 10,
        d_model: 16,
        num_layers: 2,
        num_heads: 2,
        ffn_dim: 32,
        dropout: 0.0,
        max_length: 16,
        position,
        layer_norm_eps: 1e-5,
        pad_id: 0,
        attention: Default::default(),
    }
}

fn fixture() -> std::collections::HashMap<String, Tensor> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/reference.safetensors");
    read_safetensors(&path, &Device::Cpu).unwrap().1
}

/// The tensors of one model, without its prefix.
fn weights(
    all: &std::collections::HashMap<String, Tensor>,
    model: &str,
) -> std::collections::HashMap<String, Tensor> {
    all.iter()
        .filter_map(|(k, v)| {
            k.strip_prefix(&format!("{model}/"))
                .map(|n| (n.to_string(), v.clone()))
        })
        .collect()
}

use luminome_engine::testing::max_abs_diff;

fn inputs(all: &std::collections::HashMap<String, Tensor>) -> (Tensor, Tensor) {
    let ids = all["ids"].to_dtype(DType::U32).unwrap();
    (ids, all["mask"].clone())
}

#[test]
fn classifier_logits_and_gates_match_pytorch() {
    let all = fixture();
    let (ids, mask) = inputs(&all);
    for (name, adapter, position) in [
        ("cls_learned", AdapterKind::Cls, PositionEncoding::Learned),
        ("mean_learned", AdapterKind::Mean, PositionEncoding::Learned),
        ("max_learned", AdapterKind::Max, PositionEncoding::Learned),
        (
            "gated_learned",
            AdapterKind::Gated,
            PositionEncoding::Learned,
        ),
        ("gated_rotary", AdapterKind::Gated, PositionEncoding::Rotary),
    ] {
        let cfg = ClassifierConfig {
            backbone: BackboneConfig::Transformer(encoder(position)),
            adapter,
            num_classes: 3,
            label_values: vec![0, 1, 2],
            rc_average: None,
            gate_score_scale: None,
        };
        let varmap = VarMap::new();
        let model = Classifier::new(
            &cfg,
            VarBuilder::from_varmap(&varmap, DType::F64, &Device::Cpu),
        )
        .unwrap();
        let w = weights(&all, name);
        let n = load_into(&varmap, &w, Path::new(name), None).unwrap();
        assert_eq!(
            n,
            w.keys().filter(|k| !k.starts_with("expected")).count(),
            "{name}: every weight used"
        );
        let out = model.forward(&ids, &mask, None).unwrap();
        let d = max_abs_diff(&out.logits, &w["expected_logits"]);
        assert!(d < 1e-9, "{name}: logits differ from PyTorch by {d}");
        if let Some(g) = out.gates {
            let d = max_abs_diff(&g, &w["expected_gates"]);
            assert!(d < 1e-9, "{name}: gates differ from PyTorch by {d}");
        }
    }
}

#[test]
fn mlm_logits_match_pytorch() {
    let all = fixture();
    let (ids, mask) = inputs(&all);
    let cfg = MlmConfig {
        backbone: BackboneConfig::Transformer(encoder(PositionEncoding::Rotary)),
    };
    let varmap = VarMap::new();
    let model = MlmModel::new(
        &cfg,
        VarBuilder::from_varmap(&varmap, DType::F64, &Device::Cpu),
    )
    .unwrap();
    load_into(
        &varmap,
        &weights(&all, "mlm_rotary"),
        Path::new("mlm_rotary"),
        None,
    )
    .unwrap();
    let logits = model.forward(&ids, &mask, None).unwrap();
    let d = max_abs_diff(&logits, &all["mlm_rotary/expected_logits"]);
    assert!(d < 1e-9, "MLM logits differ from PyTorch by {d}");
}
