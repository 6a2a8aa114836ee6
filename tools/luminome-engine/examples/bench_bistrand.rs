//! Training-step and inference timing of the bi-strand benchmark model (d_model 128, 2 layers,
//! d_state 16, expand 2, conv 4, cross-attention with 4 heads, untied strands, length 512, batch
//! 8, 15 % of positions masked), on random bases. Same configuration as
//! bench/bistrand/torch_bistrand.py.
//!
//!     RAYON_NUM_THREADS=1 cargo run --release -p luminome-engine --example bench_bistrand -- [steps] [d_model] [layers] [length] [batch]

use std::time::Instant;

use candle_core::{Device, Tensor};
use luminome_engine::models::bistrand::task::strand_loss;
use luminome_engine::models::bistrand::BiStrandConfig;
use luminome_engine::models::{BuiltModel, ModelConfig};
use luminome_engine::train::optim::clip_grad_norm;
use luminome_engine::train::{AdamW, AdamWConfig};
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
    let layers = arg(&args, 3, 2)?;
    let l = arg(&args, 4, 512)?;
    let b = arg(&args, 5, 8)?;
    let cfg = ModelConfig::BiStrand(BiStrandConfig {
        vocab_size: 10,
        d_model: d,
        num_layers: layers,
        d_state: 16,
        expand: 2,
        d_conv: 4,
        dt_rank: d.div_ceil(16),
        cross_heads: 4,
        cross_attention: true,
        tie_strands: false,
        max_length: l,
        dropout: 0.0,
        layer_norm_eps: 1e-5,
        encoder: None,
    });
    let dev = Device::Cpu;
    let built = BuiltModel::new(&cfg, &dev, 1)?;
    let model = built.get::<BiStrandConfig>()?;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    let a: Vec<u32> = (0..b * l).map(|_| 5 + rng.random_range(0..4)).collect();
    let comp: Vec<u32> = a.iter().map(|&x| 13 - x).collect();
    let mut positions = Vec::new();
    let (mut ta, mut tb) = (Vec::new(), Vec::new());
    let (mut ia, mut ib) = (a.clone(), comp.clone());
    for i in 0..b * l {
        if rng.random_bool(0.15) {
            positions.push(i as u32);
            ta.push(a[i] - 5);
            tb.push(comp[i] - 5);
            ia[i] = 3;
            ib[i] = 3;
        }
    }
    let ids_a = Tensor::from_vec(ia, (b, l), &dev)?;
    let ids_b = Tensor::from_vec(ib, (b, l), &dev)?;
    let mask = Tensor::ones((b, l), candle_core::DType::F32, &dev)?;
    let pos = Tensor::from_vec(positions.clone(), positions.len(), &dev)?;
    let names = built.parameter_names();
    let vars: Vec<(String, candle_core::Var)> = {
        let data = built.varmap.data().lock().unwrap();
        names.iter().map(|n| (n.clone(), data[n].clone())).collect()
    };
    let mut opt = AdamW::new(vars.clone(), AdamWConfig::default())?;
    let (mut fwd, mut bwd) = (Vec::new(), Vec::new());
    let mut times = Vec::new();
    for step in 0..steps + 2 {
        let t0 = Instant::now();
        let out = model.logits_at(&ids_a, &ids_b, &mask, &pos, None)?;
        let loss = (strand_loss(&out.a, &ta)?.0 + strand_loss(&out.b, &tb)?.0)?;
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
        "bistrand d{d} x{layers} L{l} B{b} ({} parameters): train_step_ms median {:.1} (forward {:.1}, backward {:.1})",
        built.num_parameters(),
        median(&mut times),
        median(&mut fwd),
        median(&mut bwd)
    );
    let mut inf = Vec::new();
    for _ in 0..steps + 2 {
        let t0 = Instant::now();
        let out = model.logits_at(&ids_a, &ids_b, &mask, &pos, None)?;
        let _ = out.a.to_vec2::<f32>()?;
        inf.push(t0.elapsed().as_secs_f64());
    }
    println!(
        "inference_batch_ms median {:.1} ({:.0} windows/s)",
        median(&mut inf),
        b as f64 / (median(&mut inf) / 1e3)
    );
    Ok(())
}
