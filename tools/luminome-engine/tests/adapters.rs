//! Adapter behaviour users rely on: padding never changes an output, gradients are right, the
//! gated adapter's gates are zero at CLS and padding.

use candle_core::{DType, Device, Tensor, Var};
use candle_nn::{VarBuilder, VarMap};
use luminome_engine::backbones::{BackboneConfig, EncoderConfig, PositionEncoding};
use luminome_engine::models::classifier::adapters::{Adapter, DynamicGated};
use luminome_engine::models::classifier::{AdapterKind, Classifier, ClassifierConfig};
use luminome_engine::nn::gradcheck::max_grad_error;
use luminome_engine::nn::init::init_parameters;

fn tiny(adapter: AdapterKind, position: PositionEncoding, dtype: DType) -> (VarMap, Classifier) {
    let cfg = ClassifierConfig {
        backbone: BackboneConfig::Transformer(EncoderConfig {
            vocab_size: 10,
            d_model: 16,
            num_layers: 2,
            num_heads: 4,
            ffn_dim: 32,
            dropout: 0.1,
            max_length: 40,
            position,
            layer_norm_eps: 1e-5,
            pad_id: 0,
            attention: Default::default(),
        }),
        adapter,
        num_classes: 2,
        label_values: vec![0, 1],
        rc_average: None,
        gate_score_scale: None,
    };
    let varmap = VarMap::new();
    let model =
        Classifier::new(&cfg, VarBuilder::from_varmap(&varmap, dtype, &Device::Cpu)).unwrap();
    // Larger weights than the training init, so that every part of the model matters.
    init_parameters(&varmap, 3, None).unwrap();
    for v in varmap.all_vars() {
        let t = v.as_tensor();
        if t.rank() >= 2 {
            v.set(&(t * 10.0).unwrap()).unwrap();
        }
    }
    (varmap, model)
}

fn batch(seqs: &[&[u8]], len: usize) -> (Tensor, Tensor) {
    luminome_engine::testing::padded_batch(seqs, len)
}

#[test]
fn padding_does_not_change_any_adapters_output() {
    let seqs: [&[u8]; 3] = [b"ACGTACGTAAC", b"GGGCCA", b"TTATAAAAGGCCAGT"];
    for adapter in [
        AdapterKind::Cls,
        AdapterKind::Mean,
        AdapterKind::Max,
        AdapterKind::Gated,
        AdapterKind::GatedMax,
    ] {
        for position in [PositionEncoding::Learned, PositionEncoding::Rotary] {
            let (_, model) = tiny(adapter, position, DType::F32);
            let (ids, mask) = batch(&seqs, 17);
            let short = model.forward(&ids, &mask, None).unwrap().logits;
            let (ids, mask) = batch(&seqs, 40);
            let long = model.forward(&ids, &mask, None).unwrap().logits;
            let d = (short - long)
                .unwrap()
                .abs()
                .unwrap()
                .max_all()
                .unwrap()
                .to_scalar::<f32>()
                .unwrap();
            assert!(
                d < 1e-4,
                "{adapter:?}/{position:?}: padding changed the logits by {d}"
            );
            // Each row alone (no batch-mates, minimal padding) gives the same logits too.
            let (ids, mask) = batch(&seqs[2..], 17);
            let alone = model.forward(&ids, &mask, None).unwrap().logits;
            let (ids, mask) = batch(&seqs, 40);
            let full = model
                .forward(&ids, &mask, None)
                .unwrap()
                .logits
                .get(2)
                .unwrap()
                .unsqueeze(0)
                .unwrap();
            let d = (alone - full)
                .unwrap()
                .abs()
                .unwrap()
                .max_all()
                .unwrap()
                .to_scalar::<f32>()
                .unwrap();
            assert!(
                d < 1e-4,
                "{adapter:?}/{position:?}: batch-mates changed the logits by {d}"
            );
        }
    }
}

#[test]
fn gated_adapter_gradients_match_finite_differences() {
    let varmap = VarMap::new();
    let vb = VarBuilder::from_varmap(&varmap, DType::F64, &Device::Cpu);
    let adapter = DynamicGated::new(6, 3, 1e-5, vb).unwrap();
    init_parameters(&varmap, 11, None).unwrap();
    for v in varmap.all_vars() {
        if v.rank() >= 2 {
            v.set(&(v.as_tensor() * 20.0).unwrap()).unwrap();
        }
    }
    let h = Tensor::randn(0f64, 1.0, (2, 5, 6), &Device::Cpu).unwrap();
    let mask = Tensor::new(
        &[[1f64, 1., 1., 1., 0.], [1., 1., 1., 1., 1.]],
        &Device::Cpu,
    )
    .unwrap();
    let w = Tensor::randn(0f64, 1.0, (2, 3), &Device::Cpu).unwrap();
    // With respect to the hidden states...
    let err = max_grad_error(&h, 1e-6, &|h| {
        adapter.forward(h, &mask)?.logits.mul(&w)?.sum_all()
    })
    .unwrap();
    assert!(err < 1e-5, "gated adapter input gradient error {err}");
    // ... and to a parameter (the gate matrix W_g), through the model's own backward pass.
    let gate_w = varmap.data().lock().unwrap()["gate.weight"].clone();
    let logits = adapter.forward(&h, &mask).unwrap().logits;
    let grads = logits
        .mul(&w)
        .unwrap()
        .sum_all()
        .unwrap()
        .backward()
        .unwrap();
    let analytic = grads
        .get(gate_w.as_tensor())
        .unwrap()
        .flatten_all()
        .unwrap()
        .to_vec1::<f64>()
        .unwrap();
    let base = gate_w
        .as_tensor()
        .flatten_all()
        .unwrap()
        .to_vec1::<f64>()
        .unwrap();
    for i in [0, 7, 20, 45, 71] {
        let eval = |delta: f64| {
            let mut v = base.clone();
            v[i] += delta;
            gate_w
                .set(&Tensor::from_vec(v, gate_w.shape(), &Device::Cpu).unwrap())
                .unwrap();
            adapter
                .forward(&h, &mask)
                .unwrap()
                .logits
                .mul(&w)
                .unwrap()
                .sum_all()
                .unwrap()
                .to_scalar::<f64>()
                .unwrap()
        };
        let numeric = (eval(1e-6) - eval(-1e-6)) / 2e-6;
        assert!(
            (numeric - analytic[i]).abs() < 1e-5 * numeric.abs().max(1.0),
            "W_g[{i}]: {numeric} vs {}",
            analytic[i]
        );
    }
}

#[test]
fn whole_classifier_gradients_match_finite_differences_for_every_adapter() {
    let (ids, mask) = batch(&[b"ACGTAC", b"GGA"], 9);
    let mask = mask.to_dtype(DType::F64).unwrap();
    for adapter in [
        AdapterKind::Cls,
        AdapterKind::Mean,
        AdapterKind::Max,
        AdapterKind::Gated,
        AdapterKind::GatedMax,
    ] {
        let (_, model) = tiny(adapter, PositionEncoding::Rotary, DType::F64);
        let emb = model.embed(&ids).unwrap();
        let w = Tensor::new(&[[0.3f64, -1.2], [0.7, 0.4]], &Device::Cpu).unwrap();
        let err = max_grad_error(&emb, 1e-6, &|e| {
            model
                .forward_from_embeddings(e, &mask, None)?
                .logits
                .mul(&w)?
                .sum_all()
        })
        .unwrap();
        assert!(
            err < 1e-5,
            "{adapter:?}: gradient w.r.t. the input embeddings off by {err}"
        );
    }
}

#[test]
fn gates_are_zero_at_cls_and_padding_and_in_unit_range_elsewhere() {
    let (_, model) = tiny(AdapterKind::Gated, PositionEncoding::Learned, DType::F32);
    let (ids, mask) = batch(&[b"ACGTACGT", b"GGA"], 12);
    let gates = model.forward(&ids, &mask, None).unwrap().gates.unwrap();
    assert_eq!(gates.dims(), &[2, 12, 16]);
    let g: Vec<Vec<Vec<f32>>> = gates.to_vec3().unwrap();
    for (row, n) in [(0usize, 10usize), (1, 5)] {
        assert!(g[row][0].iter().all(|&v| v == 0.0), "CLS gate must be zero");
        for (i, pos) in g[row].iter().enumerate().skip(1) {
            if i < n {
                assert!(pos.iter().all(|&v| v > 0.0 && v < 1.0));
            } else {
                assert!(pos.iter().all(|&v| v == 0.0), "padding gate must be zero");
            }
        }
    }
    let _ = Var::from_tensor(&gates);
    let adapter_kinds = matches!(model.adapter, Adapter::Gated(_));
    assert!(adapter_kinds);
}

#[test]
fn a_scaled_gate_score_equals_the_unscaled_adapter_with_its_query_scaled() {
    // α_i = σ(s · q_CLSᵀ k_i) and q = W_q h_CLS + b_q: scaling the score by s is scaling the
    // query projection (weight and bias) by s, everything else unchanged.
    let s = 0.25;
    let h = Tensor::randn(0f64, 1.0, (2, 5, 6), &Device::Cpu).unwrap();
    let mask = Tensor::new(
        &[[1f64, 1., 1., 0., 0.], [1., 1., 1., 1., 1.]],
        &Device::Cpu,
    )
    .unwrap();
    let build = |scale: Option<f64>, query_factor: f64| {
        let varmap = VarMap::new();
        let vb = VarBuilder::from_varmap(&varmap, DType::F64, &Device::Cpu);
        let adapter = DynamicGated::new(6, 3, 1e-5, vb)
            .unwrap()
            .with_score_scale(scale);
        init_parameters(&varmap, 5, None).unwrap();
        for (name, v) in varmap.data().lock().unwrap().iter() {
            // Weights large enough that the sigmoid of the score is far from linear.
            let weight = if v.rank() >= 2 { 10.0 } else { 1.0 };
            let query = if name.starts_with("query.") {
                query_factor
            } else {
                1.0
            };
            if weight * query != 1.0 {
                v.set(&(v.as_tensor() * (weight * query)).unwrap()).unwrap();
            }
        }
        adapter.forward(&h, &mask).unwrap()
    };
    let scaled = build(Some(s), 1.0);
    let by_hand = build(None, s);
    let unscaled = build(None, 1.0);
    let diff = luminome_engine::testing::max_abs_diff;
    assert!(diff(&scaled.gates, &by_hand.gates) < 1e-12);
    assert!(diff(&scaled.logits, &by_hand.logits) < 1e-12);
    // ... and the scale does change the gates (the check above is not vacuous).
    assert!(diff(&scaled.gates, &unscaled.gates) > 1e-3);
}

/// gated-max shares the gated adapter's parameter names: with its max head zeroed it is the
/// gated adapter exactly, and with the head it adds W_max · max_i h_i to those logits.
#[test]
fn gated_max_is_the_gated_adapter_plus_a_max_pooled_head() {
    let (ids, mask) = batch(&[b"ACGTACGT", b"GGA"], 12);
    let (_, gated) = tiny(AdapterKind::Gated, PositionEncoding::Learned, DType::F32);
    let (varmap, gated_max) = tiny(AdapterKind::GatedMax, PositionEncoding::Learned, DType::F32);
    let logits = |m: &Classifier| m.forward(&ids, &mask, None).unwrap().logits;
    let gap = luminome_engine::testing::max_abs_diff;
    let with_head = logits(&gated_max);
    assert!(
        gap(&with_head, &logits(&gated)) > 1e-3,
        "the max head changes nothing"
    );
    let head = varmap.data().lock().unwrap()["adapter.max_head.weight"].clone();
    head.set(&head.zeros_like().unwrap()).unwrap();
    assert!(gap(&logits(&gated_max), &logits(&gated)) < 1e-6);
    let gates = |m: &Classifier| m.forward(&ids, &mask, None).unwrap().gates.unwrap();
    assert!(gap(&gates(&gated_max), &gates(&gated)) < 1e-6);
}
