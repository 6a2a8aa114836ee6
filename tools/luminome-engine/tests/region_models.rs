//! Region models: the region mask respected everywhere (attention, pooling, the TSS head), the
//! Poisson loss against its formula, and integrated gradients adding up to the prediction.

use candle_core::{Device, Tensor};
use luminome_engine::models::expression::explain::{contributions, pooling_weights};
use luminome_engine::models::expression::{ExpressionConfig, ExpressionHead, ExpressionLoss};
use luminome_engine::models::region::{RegionEncoderConfig, RegionPosition, RegionTensors};
use luminome_engine::models::{BuiltModel, ModelConfig};
use luminome_engine::testing::write_region_dataset;
use luminome_io::region_dataset::RegionDataset;

fn model(head: ExpressionHead, loss: ExpressionLoss) -> BuiltModel {
    let config = ModelConfig::from(ExpressionConfig {
        encoder: RegionEncoderConfig {
            n_features: 4,
            d_model: 16,
            num_layers: 2,
            num_heads: 2,
            ffn_dim: 32,
            dropout: 0.0,
            max_regions: 8,
            position: RegionPosition::TssRelative,
            layer_norm_eps: 1e-5,
            attention: Default::default(),
        },
        head,
        loss,
        linear_path: None,
        get: None,
        holdout: None,
    });
    BuiltModel::new(&config, &Device::Cpu, 3).unwrap()
}

fn dataset(dir: &std::path::Path) -> RegionDataset {
    let p = dir.join("r.safetensors");
    write_region_dataset(&p, 12, 8, &["K562"], 5, Some(&|_, y| y)).unwrap();
    RegionDataset::open(&p).unwrap()
}

#[test]
fn padding_slots_never_change_a_prediction_and_get_no_pooling_weight() {
    let dir = tempfile::tempdir().unwrap();
    let ds = dataset(dir.path());
    let records: Vec<usize> = (0..ds.len()).collect();
    let t = RegionTensors::new(&ds, &records, 8, true, &Device::Cpu).unwrap();
    assert!(
        t.n_used.iter().any(|&u| u < 8),
        "the test needs padded samples"
    );
    // The same batch with garbage in every padded slot.
    let mut noisy = t.host.features.clone();
    for (slot, &m) in t.host.region_mask.iter().enumerate() {
        if m == 0 {
            for v in &mut noisy[slot * 4..(slot + 1) * 4] {
                *v = 1e3;
            }
        }
    }
    let noisy = Tensor::from_vec(noisy, t.features.shape(), &Device::Cpu).unwrap();
    for head in [
        ExpressionHead::AttentionPool { mlp_hidden: 8 },
        ExpressionHead::TssRegion,
    ] {
        let b = model(head, ExpressionLoss::Poisson);
        let m = b.get::<ExpressionConfig>().unwrap();
        let clean: Vec<f32> = m.forward(&t, None).unwrap().prediction.to_vec1().unwrap();
        let dirty: Vec<f32> = m
            .forward_features(&noisy, &t, None)
            .unwrap()
            .prediction
            .to_vec1()
            .unwrap();
        for (a, b) in clean.iter().zip(&dirty) {
            assert!(
                (a - b).abs() < 1e-5,
                "{head:?}: padding changed a prediction {a} -> {b}"
            );
            assert!(*a > 0.0, "Poisson predictions are rates");
        }
        if matches!(head, ExpressionHead::AttentionPool { .. }) {
            let alpha = pooling_weights(m, &t).unwrap();
            for (r, &used) in t.n_used.iter().enumerate() {
                let row = &alpha[r * 8..(r + 1) * 8];
                let real: f32 = row[..used].iter().sum();
                assert!((real - 1.0).abs() < 1e-5, "α sums to {real}");
                assert!(
                    row[used..].iter().all(|&a| a < 1e-6),
                    "padding got weight: {row:?}"
                );
            }
        } else {
            assert!(pooling_weights(m, &t).is_err());
        }
    }
}

#[test]
fn the_poisson_loss_is_rate_minus_y_log_rate() {
    let b = model(ExpressionHead::TssRegion, ExpressionLoss::Poisson);
    let m = b.get::<ExpressionConfig>().unwrap();
    let rate = Tensor::new(&[0.5f32, 2.0, 1.0], &Device::Cpu).unwrap();
    let y = [1.0f32, 0.0, 3.0];
    let loss: f32 = m.loss(&rate, &y).unwrap().to_scalar().unwrap();
    let want = ((0.5 - 1.0 * (0.5f64).ln()) + 2.0 + (1.0 - 0.0)) / 3.0;
    assert!((f64::from(loss) - want).abs() < 1e-6, "{loss} vs {want}");
    let b = model(ExpressionHead::TssRegion, ExpressionLoss::Mse);
    let m = b.get::<ExpressionConfig>().unwrap();
    let loss: f32 = m.loss(&rate, &y).unwrap().to_scalar().unwrap();
    assert!((loss - (0.25 + 4.0 + 4.0) / 3.0).abs() < 1e-6);
}

#[test]
fn integrated_gradients_add_up_to_the_prediction_minus_the_baseline() {
    let dir = tempfile::tempdir().unwrap();
    let ds = dataset(dir.path());
    let t = RegionTensors::new(&ds, &[0, 1, 2], 8, true, &Device::Cpu).unwrap();
    let b = model(
        ExpressionHead::AttentionPool { mlp_hidden: 8 },
        ExpressionLoss::Poisson,
    );
    let m = b.get::<ExpressionConfig>().unwrap();
    let contrib = contributions(m, &t, Some(128)).unwrap();
    let at: Vec<f32> = m.forward(&t, None).unwrap().prediction.to_vec1().unwrap();
    let zero = t.features.zeros_like().unwrap();
    let base: Vec<f32> = m
        .forward_features(&zero, &t, None)
        .unwrap()
        .prediction
        .to_vec1()
        .unwrap();
    for r in 0..3 {
        let total: f32 = contrib[r * 32..(r + 1) * 32].iter().sum();
        let delta = at[r] - base[r];
        assert!(
            (total - delta).abs() < 0.02 * delta.abs().max(1e-2),
            "sample {r}: Σ contributions {total} vs ŷ(x) − ŷ(0) {delta}"
        );
    }
}
