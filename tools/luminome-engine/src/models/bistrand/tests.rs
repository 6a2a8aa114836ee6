//! The bi-strand model: gradients of the whole model, padding that changes nothing, a loss that
//! falls on a learnable task, and the difference cross-attention makes to what a strand sees.

use candle_core::{DType, Device, Tensor, Var};
use candle_nn::{VarBuilder, VarMap};

use super::config::BiStrandConfig;
use super::model::BiStrandModel;
use super::task::strand_loss;
use crate::models::FamilyConfig;

fn config(cross: bool, tie: bool) -> BiStrandConfig {
    BiStrandConfig {
        vocab_size: 10,
        d_model: 8,
        num_layers: 1,
        d_state: 4,
        expand: 2,
        d_conv: 3,
        dt_rank: 2,
        cross_heads: 2,
        cross_attention: cross,
        tie_strands: tie,
        max_length: 16,
        dropout: 0.0,
        layer_norm_eps: 1e-5,
        encoder: None,
    }
}

fn build(cfg: &BiStrandConfig, dtype: DType) -> (VarMap, BiStrandModel) {
    let varmap = VarMap::new();
    let model = cfg
        .build(VarBuilder::from_varmap(&varmap, dtype, &Device::Cpu))
        .unwrap();
    cfg.init(&varmap, 3).unwrap();
    // Larger weights than the training init, so that every part of the model matters.
    for v in varmap.all_vars() {
        if v.rank() >= 2 {
            v.set(&(v.as_tensor() * 8.0).unwrap()).unwrap();
        }
    }
    (varmap, model)
}

fn ids(rows: &[&[u32]]) -> Tensor {
    let l = rows[0].len();
    let flat: Vec<u32> = rows.iter().flat_map(|r| r.iter().copied()).collect();
    Tensor::from_vec(flat, (rows.len(), l), &Device::Cpu).unwrap()
}

fn complement(r: &[u32]) -> Vec<u32> {
    r.iter()
        .map(|&x| match x {
            5..=8 => 13 - x,
            x => x,
        })
        .collect()
}

#[test]
fn gradients_of_the_whole_model_match_finite_differences() {
    for (cross, tie) in [(true, false), (false, true)] {
        let cfg = config(cross, tie);
        let (varmap, model) = build(&cfg, DType::F64);
        let a = ids(&[&[5, 6, 3, 8, 7, 5, 6], &[8, 3, 7, 6, 5, 0, 0]]);
        let b = ids(&[
            &complement(&[5, 6, 3, 8, 7, 5, 6]),
            &complement(&[8, 3, 7, 6, 5, 0, 0]),
        ]);
        let mask = Tensor::new(
            &[[1f64, 1., 1., 1., 1., 1., 1.], [1., 1., 1., 1., 1., 0., 0.]],
            &Device::Cpu,
        )
        .unwrap();
        let pos = Tensor::new(&[2u32, 8], &Device::Cpu).unwrap();
        let data = varmap.data().lock().unwrap();
        // One matrix and one vector of every kind of layer.
        let prefix = if tie { "strand" } else { "strand_a" };
        let mut names = vec![
            format!("{prefix}.embed.weight"),
            format!("{prefix}.layers.0.mixer.in_proj.weight"),
            format!("{prefix}.layers.0.mixer.fwd.conv.weight"),
            format!("{prefix}.layers.0.mixer.rev.a_log"),
            format!("{prefix}.layers.0.mixer.fwd.dt_proj.bias"),
            format!("{prefix}.layers.0.mixer.out_proj.weight"),
        ];
        if cross {
            names.push("cross_ab.k.weight".into());
            names.push("fuse_b.weight".into());
        }
        for name in names {
            let var: &Var = data
                .get(&name)
                .unwrap_or_else(|| panic!("no parameter {name}"));
            let original = var.as_tensor().copy().unwrap();
            let f = |w: &Tensor| {
                var.set(w).unwrap();
                let out = model.logits_at(&a, &b, &mask, &pos, None)?;
                let l = (strand_loss(&out.a, &[1, 2]).unwrap().0
                    + strand_loss(&out.b, &[2, 1]).unwrap().0)?;
                Ok(l)
            };
            let err = max_grad_error_through(var, &original, &f);
            var.set(&original).unwrap();
            assert!(
                err < 1e-5,
                "cross {cross} tie {tie}: gradient of {name}: relative error {err}"
            );
        }
    }
}

/// The largest relative difference between autograd and central differences over the elements
/// of a parameter the model reads from its variable (as `nn::gradcheck` does for inputs).
fn max_grad_error_through(
    var: &Var,
    original: &Tensor,
    f: &dyn Fn(&Tensor) -> candle_core::Result<Tensor>,
) -> f64 {
    // Autograd gradient at the original value.
    var.set(original).unwrap();
    let loss = f(original).unwrap();
    let grads = loss.backward().unwrap();
    let analytic: Vec<f64> = grads
        .get(var.as_tensor())
        .unwrap()
        .flatten_all()
        .unwrap()
        .to_vec1()
        .unwrap();
    let base: Vec<f64> = original.flatten_all().unwrap().to_vec1().unwrap();
    let h = 1e-6;
    let mut worst = 0f64;
    for i in 0..base.len() {
        let at = |d: f64| {
            let mut v = base.clone();
            v[i] += d;
            let t = Tensor::from_vec(v, original.shape(), original.device()).unwrap();
            f(&t).unwrap().to_scalar::<f64>().unwrap()
        };
        let numeric = (at(h) - at(-h)) / (2.0 * h);
        let err = (analytic[i] - numeric).abs() / 1f64.max(analytic[i].abs()).max(numeric.abs());
        worst = worst.max(err);
    }
    worst
}

#[test]
fn padding_never_changes_the_prediction_at_a_base() {
    let cfg = config(true, false);
    let (_, model) = build(&cfg, DType::F32);
    let row = [5u32, 6, 3, 8, 7, 5, 6, 8];
    let mut padded = row.to_vec();
    padded.extend([0, 0, 0, 0]);
    let short = model
        .logits_at(
            &ids(&[&row]),
            &ids(&[&complement(&row)]),
            &Tensor::ones((1, 8), DType::F32, &Device::Cpu).unwrap(),
            &Tensor::new(&[2u32], &Device::Cpu).unwrap(),
            None,
        )
        .unwrap();
    let mask: Vec<f32> = padded
        .iter()
        .map(|&x| f32::from(u8::from(x != 0)))
        .collect();
    let long = model
        .logits_at(
            &ids(&[&padded]),
            &ids(&[&complement(&padded)]),
            &Tensor::from_vec(mask, (1, 12), &Device::Cpu).unwrap(),
            &Tensor::new(&[2u32], &Device::Cpu).unwrap(),
            None,
        )
        .unwrap();
    for (x, y) in [(&short.a, &long.a), (&short.b, &long.b)] {
        let d: f32 = (x - y)
            .unwrap()
            .abs()
            .unwrap()
            .max_all()
            .unwrap()
            .to_scalar()
            .unwrap();
        assert!(d < 1e-5, "padding changed a logit by {d}");
    }
}

#[test]
fn without_cross_attention_a_strand_ignores_its_partner() {
    // The partner's bases change; strand A's prediction must not (and with cross-attention it does).
    let row = [5u32, 6, 3, 8, 7, 5, 6, 8];
    let other: Vec<u32> = row.iter().map(|&x| if x == 3 { 3 } else { 5 }).collect();
    let mask = Tensor::ones((1, 8), DType::F32, &Device::Cpu).unwrap();
    let pos = Tensor::new(&[2u32], &Device::Cpu).unwrap();
    for cross in [false, true] {
        let (_, model) = build(&config(cross, false), DType::F32);
        let p1 = model
            .logits_at(&ids(&[&row]), &ids(&[&complement(&row)]), &mask, &pos, None)
            .unwrap();
        let p2 = model
            .logits_at(&ids(&[&row]), &ids(&[&other]), &mask, &pos, None)
            .unwrap();
        let d: f32 = (p1.a - p2.a)
            .unwrap()
            .abs()
            .unwrap()
            .max_all()
            .unwrap()
            .to_scalar()
            .unwrap();
        if cross {
            assert!(
                d > 1e-4,
                "with cross-attention strand A should see strand B"
            );
        } else {
            assert_eq!(
                d, 0.0,
                "without cross-attention strand A must not see strand B"
            );
        }
    }
}

#[test]
fn training_through_luminome_train_learns_a_periodic_genome() {
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: super::BiStrandArgs,
    }
    // A sequence with period 7: every masked base is readable from its neighbours.
    let dir = tempfile::tempdir().unwrap();
    let period = b"ACGGTCA";
    let seqs: Vec<Vec<u8>> = (0..48)
        .map(|i| (0..40).map(|j| period[(i + j) % 7]).collect())
        .collect();
    let path = |n: &str| dir.path().join(n);
    crate::testing::write_pair_dataset(&path("train.safetensors"), &seqs, 0.15, 1).unwrap();
    crate::testing::write_pair_dataset(&path("dev.safetensors"), &seqs[..16], 0.15, 2).unwrap();
    let arg = |p: std::path::PathBuf| p.display().to_string();
    let cli = Cli::parse_from([
        "luminome-train bistrand".to_string(),
        "--train".into(),
        arg(path("train.safetensors")),
        "--dev".into(),
        arg(path("dev.safetensors")),
        "-o".into(),
        arg(path("run")),
        "--d-model".into(),
        "16".into(),
        "--layers".into(),
        "1".into(),
        "--steps".into(),
        "80".into(),
        "--eval-every".into(),
        "40".into(),
        "--batch-size".into(),
        "8".into(),
        "--lr".into(),
        "5e-3".into(),
        "--warmup".into(),
        "5".into(),
        "--dynamic-masking".into(),
        "--threads".into(),
        "1".into(),
        "--quiet".into(),
    ]);
    crate::train::run(&cli.args, "test").unwrap();
    let log = std::fs::read_to_string(path("run/metrics.tsv")).unwrap();
    let rows: Vec<Vec<&str>> = log
        .lines()
        .skip(1)
        .map(|l| l.split('\t').collect())
        .collect();
    let loss = |r: &[&str]| r[2].parse::<f64>().unwrap();
    assert!(loss(&rows[0]) > 2.5, "the first loss is near 2 ln 4");
    let last = rows.last().unwrap();
    // dev_accuracy_a, dev_accuracy_b after dev_loss.
    let (acc_a, acc_b): (f64, f64) = (last[7].parse().unwrap(), last[8].parse().unwrap());
    assert!(
        acc_a > 0.9 && acc_b > 0.9,
        "dev accuracy {acc_a} {acc_b}\n{log}"
    );
}
