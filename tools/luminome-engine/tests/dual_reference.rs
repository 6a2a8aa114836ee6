//! The dual encoder with genetic attention against an independent PyTorch implementation
//! (tests/fixtures/make_dual_reference.py): embeddings, InfoNCE loss and the loss's gradients
//! with respect to both token-embedding tables, in float64.

use std::collections::HashMap;
use std::path::Path;

use candle_core::{DType, Device, Tensor};
use candle_nn::{VarBuilder, VarMap};
use luminome_engine::backbones::{AttentionKind, EncoderConfig, PositionEncoding};
use luminome_engine::checkpoint::{load_into, read_safetensors};
use luminome_engine::models::dual::{DualConfig, DualEncoder};
use luminome_io::retrieval_pairs::Side;

use luminome_engine::testing::max_abs_diff;

#[test]
fn genetic_dual_encoder_matches_pytorch_in_value_and_gradient() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/dual_reference.safetensors");
    let all = read_safetensors(&path, &Device::Cpu).unwrap().1;
    let weights: HashMap<String, Tensor> = all
        .iter()
        .filter_map(|(k, v)| {
            k.strip_prefix("genetic/")
                .map(|n| (n.to_string(), v.clone()))
        })
        .collect();
    let cfg = DualConfig {
        encoder: EncoderConfig {
            vocab_size: 10,
            d_model: 16,
            num_layers: 2,
            num_heads: 2,
            ffn_dim: 32,
            dropout: 0.0,
            max_length: 12,
            position: PositionEncoding::Learned,
            layer_norm_eps: 1e-5,
            pad_id: 0,
            attention: AttentionKind::Genetic,
        },
        shared: false,
        temperature: 0.1,
    };
    let varmap = VarMap::new();
    let vb = VarBuilder::from_varmap(&varmap, DType::F64, &Device::Cpu);
    let model = DualEncoder::new(&cfg, vb).unwrap();
    let n = load_into(&varmap, &weights, &path, None).unwrap();
    assert_eq!(
        n,
        weights.len(),
        "every PyTorch tensor is a Luminome parameter"
    );
    let side = |name: &str| {
        (
            all[&format!("{name}_ids")].to_dtype(DType::U32).unwrap(),
            all[&format!("{name}_mask")].clone(),
        )
    };
    let (qi, qm) = side("query");
    let (pi, pm) = side("passage");
    let q = model.embed(Side::Query, &qi, &qm, None).unwrap();
    let p = model.embed(Side::Passage, &pi, &pm, None).unwrap();
    assert!(max_abs_diff(&q, &all["query_embeddings"]) < 1e-10);
    assert!(max_abs_diff(&p, &all["passage_embeddings"]) < 1e-10);
    let loss = model.info_nce(&q, &p, None).unwrap();
    let want = all["loss"].to_vec1::<f64>().unwrap()[0];
    assert!((loss.to_scalar::<f64>().unwrap() - want).abs() < 1e-10);
    let grads = loss.backward().unwrap();
    let data = varmap.data().lock().unwrap();
    for (param, expected) in [
        ("query_encoder.tok_emb.weight", "grad_query_tok_emb"),
        ("passage_encoder.tok_emb.weight", "grad_passage_tok_emb"),
    ] {
        let g = grads.get(data[param].as_tensor()).unwrap();
        let d = max_abs_diff(g, &all[expected]);
        let scale = all[expected]
            .abs()
            .unwrap()
            .max_all()
            .unwrap()
            .to_scalar::<f64>()
            .unwrap();
        assert!(scale > 1e-3, "the reference gradient is not trivially zero");
        assert!(d < 1e-7 * scale.max(1.0), "{param}: {d} (largest {scale})");
    }
}
