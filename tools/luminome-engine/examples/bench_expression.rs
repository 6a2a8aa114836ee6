//! Training-step and inference timing of the region expression transformer on random features
//! (N regions × F features, every slot a region, the TSS at the middle slot, TSS-relative
//! positions, Poisson loss). Same model, batch and step as bench/expression/torch_expression.py
//! `--bench`: forward (train mode, no dropout) + Poisson NLL + backward + global-norm clipping
//! (1.0) + AdamW; inference is a forward of the batch.
//!
//!     RAYON_NUM_THREADS=1 cargo run --release -p luminome-engine --example bench_expression -- \
//!         [steps] [d_model] [layers] [heads] [ffn] [batch] [attention-pool|tss-region] [regions] [features]

use std::time::Instant;

use candle_core::Device;
use luminome_engine::models::expression::{ExpressionConfig, ExpressionHead, ExpressionLoss};
use luminome_engine::models::region::data::trainable;
use luminome_engine::models::region::{RegionEncoderConfig, RegionPosition, RegionTensors};
use luminome_engine::models::{BuiltModel, ModelConfig};
use luminome_engine::train::optim::clip_grad_norm;
use luminome_engine::train::{AdamW, AdamWConfig};
use luminome_io::region_dataset::RegionBatch;
use rand::{Rng, SeedableRng};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn arg(args: &[String], i: usize, default: usize) -> anyhow::Result<usize> {
    Ok(args
        .get(i)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(default))
}

fn main() -> anyhow::Result<()> {
    // As luminome-train and luminome-predict run: mimalloc keeping freed memory, candle's
    // element-wise ops on the calling thread, the work started from a rayon pool thread.
    luminome_cli::keep_freed_memory();
    luminome_cli::candle_elementwise_on_caller();
    luminome_cli::on_pool(run)
}

fn run() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let steps = arg(&args, 1, 10)?;
    let d = arg(&args, 2, 128)?;
    let layers = arg(&args, 3, 4)?;
    let heads = arg(&args, 4, 4)?;
    let ffn = arg(&args, 5, 256)?;
    let b = arg(&args, 6, 16)?;
    let head = match args.get(7).map(String::as_str).unwrap_or("attention-pool") {
        "attention-pool" => ExpressionHead::AttentionPool { mlp_hidden: d },
        "tss-region" => ExpressionHead::TssRegion,
        other => anyhow::bail!("head: attention-pool or tss-region, got {other}"),
    };
    let n = arg(&args, 8, 200)?;
    let f = arg(&args, 9, 283)?;
    let cfg = ModelConfig::Expression(ExpressionConfig {
        encoder: RegionEncoderConfig {
            n_features: f,
            d_model: d,
            num_layers: layers,
            num_heads: heads,
            ffn_dim: ffn,
            dropout: 0.0,
            max_regions: n,
            position: RegionPosition::TssRelative,
            layer_norm_eps: 1e-5,
            attention: Default::default(),
        },
        head,
        loss: ExpressionLoss::Poisson,
        linear_path: None,
        get: None,
        holdout: None,
    });
    let dev = Device::Cpu;
    let built = BuiltModel::new(&cfg, &dev, 1)?;
    let model = built.get::<ExpressionConfig>()?;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    let features: Vec<f32> = (0..b * n * f)
        .map(|_| rng.random_range(0.0f32..1.0))
        .collect();
    let targets: Vec<f32> = (0..b).map(|_| rng.random_range(0.0f32..5.0)).collect();
    let host = RegionBatch {
        batch: b,
        n_regions: n,
        n_features: f,
        features,
        region_mask: vec![1; b * n],
        tss_index: vec![(n / 2) as i64; b],
        region_index: (0..(b * n) as i64).collect(),
        tss_slot: Some(vec![(n / 2) as i64; b]),
        strand: Some(vec![1; b]),
        expression: Some(targets.clone()),
    };
    let max_offset = match &cfg {
        ModelConfig::Expression(c) => c.encoder.max_offset(),
        _ => unreachable!(),
    };
    let batch = RegionTensors::from_host(host, max_offset, &dev)?;
    let names = trainable(built.parameter_names());
    let vars: Vec<(String, candle_core::Var)> = {
        let data = built.varmap.data().lock().unwrap();
        names.iter().map(|n| (n.clone(), data[n].clone())).collect()
    };
    let mut opt = AdamW::new(vars.clone(), AdamWConfig::default())?;
    let (mut fwd, mut bwd, mut times) = (Vec::new(), Vec::new(), Vec::new());
    for step in 0..steps + 2 {
        let t0 = Instant::now();
        let out = model.forward(&batch, None)?;
        let loss = model.loss(&out.prediction, &targets)?;
        let t1 = Instant::now();
        let grads = loss.backward()?;
        let t2 = Instant::now();
        let mut map = std::collections::HashMap::new();
        for (name, v) in &vars {
            if let Some(g) = grads.get(v.as_tensor()) {
                map.insert(name.clone(), g.clone());
            }
        }
        clip_grad_norm(&mut map, 1.0)?;
        opt.step(&map, 1e-4)?;
        if step >= 2 {
            fwd.push((t1 - t0).as_secs_f64());
            bwd.push((t2 - t1).as_secs_f64());
            times.push(t0.elapsed().as_secs_f64());
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        v[v.len() / 2] * 1e3
    };
    println!(
        "expression {} d{d} x{layers} h{heads} ffn{ffn} N{n} F{f} B{b} ({} parameters): train_step_ms median {:.1} (forward {:.1}, backward {:.1})",
        head.name(),
        built.num_parameters(),
        median(&mut times),
        median(&mut fwd),
        median(&mut bwd)
    );
    let mut inf = Vec::new();
    for _ in 0..steps + 2 {
        let t0 = Instant::now();
        let _ = model.predict(&batch)?;
        inf.push(t0.elapsed().as_secs_f64());
    }
    let m = median(&mut inf);
    println!(
        "inference_batch_ms median {m:.1} ({:.0} samples/s)",
        b as f64 / (m / 1e3)
    );
    Ok(())
}
