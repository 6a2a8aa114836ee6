//! Training-step and embedding timing of the dual encoder of the genomic retrieval task
//! (docs/dual.md): one shared encoder, overlapping 6-mers (vocabulary 4,101), d 64, 1 layer,
//! 4 heads, FFN 256, dropout 0.1, batch 32 of queries of 122 tokens and passages of 497, no
//! padding; standard or genetic attention. The same step as `bench/dual/torch_dual.py --bench`:
//! forward of both sides, InfoNCE (τ 0.05), backward, gradient clipping at 1, AdamW.
//!
//!     RAYON_NUM_THREADS=1 cargo run --release -p luminome-engine --example bench_dual -- [steps] [standard|genetic] [query_len] [passage_len]
//!
//! BENCH_EMBED_ONLY=1 skips the training steps (a profile of the embedding alone).

use std::time::Instant;

use candle_core::{Device, Tensor};
use luminome_engine::backbones::{AttentionKind, EncoderConfig, PositionEncoding};
use luminome_engine::models::dual::DualConfig;
use luminome_engine::models::{BuiltModel, ModelConfig};
use luminome_engine::nn::DropoutRng;
use luminome_engine::train::optim::clip_grad_norm;
use luminome_engine::train::{AdamW, AdamWConfig};
use luminome_io::retrieval_pairs::Side;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
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
    let steps: usize = args.get(1).map(|s| s.parse()).transpose()?.unwrap_or(10);
    let attention: AttentionKind = args.get(2).map_or("standard", String::as_str).parse()?;
    let lq: usize = args.get(3).map(|s| s.parse()).transpose()?.unwrap_or(122);
    let lp: usize = args.get(4).map(|s| s.parse()).transpose()?.unwrap_or(497);
    let b = 32usize;
    let cfg = ModelConfig::from(DualConfig {
        encoder: EncoderConfig {
            vocab_size: 4101,
            d_model: 64,
            num_layers: 1,
            num_heads: 4,
            ffn_dim: 256,
            dropout: 0.1,
            max_length: lq.max(lp),
            position: PositionEncoding::Learned,
            layer_norm_eps: 1e-5,
            pad_id: 0,
            attention,
        },
        shared: true,
        temperature: 0.05,
    });
    let dev = Device::Cpu;
    let built = BuiltModel::new(&cfg, &dev, 1)?;
    let model = built.get::<DualConfig>()?;
    // The token pattern of torch_dual.py --bench: [CLS], k-mer ids, [SEP].
    let ids = |l: usize, salt: usize| -> candle_core::Result<Tensor> {
        let v: Vec<u32> = (0..b * l)
            .map(|k| {
                let (i, j) = (k / l, k % l);
                if j == 0 {
                    1
                } else if j == l - 1 {
                    2
                } else {
                    5 + ((i * 131 + j * 17 + salt) % 4096) as u32
                }
            })
            .collect();
        Tensor::from_vec(v, (b, l), &dev)
    };
    let (qi, pi) = (ids(lq, 0)?, ids(lp, 7)?);
    let qm = Tensor::ones((b, lq), candle_core::DType::F32, &dev)?;
    let pm = Tensor::ones((b, lp), candle_core::DType::F32, &dev)?;
    let mut names = built.parameter_names();
    names.sort();
    let vars: Vec<(String, candle_core::Var)> = {
        let data = built.varmap.data().lock().unwrap();
        names.iter().map(|n| (n.clone(), data[n].clone())).collect()
    };
    let mut opt = AdamW::new(vars.clone(), AdamWConfig::default())?;
    let mut times = Vec::new();
    // BENCH_EMBED_ONLY=1: the embedding loop alone (for a profile of inference).
    let train_steps = match std::env::var_os("BENCH_EMBED_ONLY") {
        Some(_) => 0,
        None => steps + 3,
    };
    for step in 0..train_steps {
        let t0 = Instant::now();
        let rng = DropoutRng::new(step as u64);
        let q = model.embed(Side::Query, &qi, &qm, Some(&rng))?;
        let p = model.embed(Side::Passage, &pi, &pm, Some(&rng))?;
        let loss = model.info_nce(&q, &p, None)?;
        let grads = loss.backward()?;
        let mut map = std::collections::HashMap::new();
        for (n, v) in &vars {
            if let Some(g) = grads.get(v.as_tensor()) {
                map.insert(n.clone(), g.clone());
            }
        }
        clip_grad_norm(&mut map, 1.0)?;
        opt.step(&map, 1e-4)?;
        if step >= 3 {
            times.push(t0.elapsed().as_secs_f64());
        }
    }
    let mut inf = Vec::new();
    for step in 0..steps + 3 {
        let t0 = Instant::now();
        let _ = model
            .embed(Side::Passage, &pi, &pm, None)?
            .to_vec2::<f32>()?;
        if step >= 3 {
            inf.push(t0.elapsed().as_secs_f64());
        }
    }
    let embed = median(inf);
    println!("luminome attention {}", attention.name());
    if !times.is_empty() {
        println!("train_step_ms median {:.1}", median(times) * 1e3);
    }
    println!(
        "embed_batch_ms median {:.1} ({:.0} passages/s)",
        embed * 1e3,
        b as f64 / embed
    );
    Ok(())
}
