//! Training-step and inference timing of the benchmark model (vocab 10, d 128, 4 layers,
//! 4 heads, FFN 512, length 72, batch 32, learned positions, pre-LN, gated adapter), on random
//! tokens. Same configuration as bench/engine/torch_bench.py. With `cnn` as the third argument:
//! the dilated residual CNN (128 channels, first kernel 15, 7 blocks of kernel 3, dilations
//! 1..64) with the mean adapter, as `torch_bench.py --backbone cnn`.
//!
//!     RAYON_NUM_THREADS=1 cargo run --release -p luminome-engine --example bench_step -- [steps] [dropout] [transformer|cnn]
//!
//! Other sizes and devices (the GPU benchmark, bench/gpu/run_gpu.sh) through the environment:
//! BENCH_DEVICE (cpu, cuda, cuda:N), BENCH_D, BENCH_LAYERS, BENCH_HEADS, BENCH_FFN, BENCH_LEN,
//! BENCH_BATCH (transformer; defaults: the model above).

use std::time::Instant;

use candle_core::Tensor;
use luminome_engine::backbones::{BackboneConfig, CnnConfig, EncoderConfig, PositionEncoding};
use luminome_engine::models::classifier::{AdapterKind, ClassifierConfig};
use luminome_engine::models::{BuiltModel, ModelConfig};
use luminome_engine::nn::DropoutRng;
use luminome_engine::train::optim::clip_grad_norm;
use luminome_engine::train::{AdamW, AdamWConfig};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> anyhow::Result<()> {
    // As luminome-train does (MIMALLOC_PURGE_DELAY, if set, wins), and from a pool thread as
    // the binaries run (luminome_cli::on_pool).
    luminome_cli::keep_freed_memory();
    luminome_cli::candle_elementwise_on_caller();
    luminome_cli::on_pool(run)
}

fn run() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let steps: usize = args.get(1).map(|s| s.parse()).transpose()?.unwrap_or(20);
    let dropout: f64 = args.get(2).map(|s| s.parse()).transpose()?.unwrap_or(0.1);
    let cnn = args.get(3).is_some_and(|s| s == "cnn");
    let env = |k: &str, d: usize| -> usize {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let (b, l) = (env("BENCH_BATCH", 32), env("BENCH_LEN", 72));
    let dev = luminome_engine::parse_device(
        &std::env::var("BENCH_DEVICE").unwrap_or_else(|_| "cpu".into()),
    )?;
    let (backbone, adapter) = if cnn {
        let c = CnnConfig {
            vocab_size: 10,
            channels: 128,
            first_kernel: 15,
            kernel: 3,
            num_layers: 7,
            dropout,
            max_length: l,
            layer_norm_eps: 1e-5,
            pad_id: 0,
        };
        (BackboneConfig::Cnn(c), AdapterKind::Mean)
    } else {
        let e = EncoderConfig {
            vocab_size: 10,
            d_model: env("BENCH_D", 128),
            num_layers: env("BENCH_LAYERS", 4),
            num_heads: env("BENCH_HEADS", 4),
            ffn_dim: env("BENCH_FFN", 512),
            dropout,
            max_length: l,
            position: PositionEncoding::Learned,
            layer_norm_eps: 1e-5,
            pad_id: 0,
            attention: Default::default(),
        };
        (BackboneConfig::Transformer(e), AdapterKind::Gated)
    };
    let cfg = ModelConfig::Classifier(ClassifierConfig {
        backbone,
        adapter,
        num_classes: 2,
        label_values: vec![0, 1],
        rc_average: None,
        gate_score_scale: None,
    });
    let built = BuiltModel::new(&cfg, &dev, 1)?;
    let model = built.get::<ClassifierConfig>()?;
    let ids: Vec<u32> = (0..b * l)
        .map(|i| {
            if i % l == 0 {
                1
            } else {
                5 + (i * 7 % 4) as u32
            }
        })
        .collect();
    let ids = Tensor::from_vec(ids, (b, l), &dev)?;
    let mask = Tensor::ones((b, l), candle_core::DType::F32, &dev)?;
    let targets = Tensor::from_vec((0..b as u32).map(|i| i % 2).collect::<Vec<_>>(), b, &dev)?;
    let mut names = built.parameter_names();
    names.sort();
    let vars: Vec<(String, candle_core::Var)> = {
        let data = built.varmap.data().lock().unwrap();
        names.iter().map(|n| (n.clone(), data[n].clone())).collect()
    };
    let mut opt = AdamW::new(vars.clone(), AdamWConfig::default())?;
    let mut fwd = 0f64;
    let mut bwd = 0f64;
    let mut upd = 0f64;
    let mut times = Vec::new();
    // BENCH_SKIP_TRAIN=1: inference only (to profile it alone).
    let train_steps = if env("BENCH_SKIP_TRAIN", 0) == 1 {
        0
    } else {
        steps + 3
    };
    for step in 0..train_steps {
        let t0 = Instant::now();
        let rng = DropoutRng::new(step as u64);
        let logits = model.forward(&ids, &mask, Some(&rng))?.logits;
        let loss = candle_nn::loss::cross_entropy(&logits, &targets)?;
        let t1 = Instant::now();
        let grads = loss.backward()?;
        let t2 = Instant::now();
        let mut map = std::collections::HashMap::new();
        for (n, v) in &vars {
            if let Some(g) = grads.get(v.as_tensor()) {
                map.insert(n.clone(), g.clone());
            }
        }
        clip_grad_norm(&mut map, 1.0)?;
        opt.step(&map, 1e-4)?;
        // On a GPU the kernels run asynchronously: wait for them before reading the clock.
        dev.synchronize()?;
        let t3 = Instant::now();
        if step >= 3 {
            fwd += (t1 - t0).as_secs_f64();
            bwd += (t2 - t1).as_secs_f64();
            upd += (t3 - t2).as_secs_f64();
            times.push((t3 - t0).as_secs_f64());
        }
    }
    times.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = steps as f64;
    if !times.is_empty() {
        println!(
            "train_step_ms median {:.1} (forward {:.1}, backward {:.1}, clip+AdamW {:.1})",
            times[times.len() / 2] * 1e3,
            fwd / n * 1e3,
            bwd / n * 1e3,
            upd / n * 1e3
        );
    }
    // Inference as luminome-predict runs it (and as PyTorch's side runs under inference_mode):
    // the trained weights as plain tensors, so no op records a graph (Checkpoint::load_frozen).
    let frozen = BuiltModel {
        config: cfg.clone(),
        varmap: candle_nn::VarMap::new(),
        model: cfg.build(candle_nn::VarBuilder::from_tensors(
            vars.iter()
                .map(|(n, v)| (n.clone(), v.as_tensor().detach()))
                .collect(),
            candle_core::DType::F32,
            &dev,
        ))?,
    };
    let model = frozen.get::<ClassifierConfig>()?;
    let mut inf = Vec::new();
    for _ in 0..steps + 3 {
        let t0 = Instant::now();
        let _ = model.forward(&ids, &mask, None)?.logits.to_vec2::<f32>()?;
        dev.synchronize()?;
        inf.push(t0.elapsed().as_secs_f64());
    }
    inf.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let med = inf[inf.len() / 2];
    println!(
        "inference_batch_ms median {:.1} ({:.0} sequences/s)",
        med * 1e3,
        b as f64 / med
    );
    Ok(())
}
