//! The selective scan alone: median forward and forward + backward time of the fused op at the
//! bi-strand roofline's shapes (batch 8, length 256, 128 channels, 16 states; one direction), and
//! its FLOP rate by the roofline's count (bench/roofline/flops.py: 7 FLOPs per state element
//! forward, twice that backward). Prints a checksum of the output and gradients (FNV-1a over
//! their bits), so a kernel change can be checked for bit-identity with the same command.
//!
//!     RAYON_NUM_THREADS=1 cargo run --release -p luminome-engine --example bench_scan -- [steps] [batch] [length] [channels] [states]

use std::time::Instant;

use candle_core::{DType, Device, Tensor, Var};
use luminome_engine::nn::scan::selective_scan;
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
    // Set up as the binaries run (see bench_bistrand).
    luminome_cli::keep_freed_memory();
    luminome_cli::candle_elementwise_on_caller();
    luminome_cli::on_pool(run)
}

/// FNV-1a over the bits of every value, in order.
fn checksum(ts: &[&Tensor]) -> anyhow::Result<u64> {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for t in ts {
        for v in t.flatten_all()?.to_vec1::<f32>()? {
            for byte in v.to_bits().to_le_bytes() {
                h = (h ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
            }
        }
    }
    Ok(h)
}

fn median_ms(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2] * 1e3
}

fn run() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let steps = arg(&args, 1, 20)?;
    let (b, l, e, n) = (
        arg(&args, 2, 8)?,
        arg(&args, 3, 256)?,
        arg(&args, 4, 128)?,
        arg(&args, 5, 16)?,
    );
    let dev = Device::Cpu;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    let mut uniform = |len: usize, lo: f32, hi: f32| -> Vec<f32> {
        (0..len).map(|_| rng.random_range(lo..hi)).collect()
    };
    let x = Var::from_vec(uniform(b * l * e, -1.0, 1.0), (b, l, e), &dev)?;
    // Δ as softplus(dt_proj) gives it: small and positive.
    let delta = Var::from_vec(uniform(b * l * e, 0.001, 0.1), (b, l, e), &dev)?;
    // Mamba's initial A, −(1..N) per channel, perturbed so that no two channels share it.
    let a_vals: Vec<f32> = (0..e * n)
        .map(|i| -((i % n) as f32 + 1.0) * (1.0 + 0.1 * ((i / n) as f32 / e as f32)))
        .collect();
    let a = Var::from_vec(a_vals, (e, n), &dev)?;
    let bm = Var::from_vec(uniform(b * l * n, -1.0, 1.0), (b, l, n), &dev)?;
    let cm = Var::from_vec(uniform(b * l * n, -1.0, 1.0), (b, l, n), &dev)?;
    let d = Var::from_vec(uniform(e, -1.0, 1.0), e, &dev)?;
    let weight = Tensor::from_vec(uniform(b * l * e, -1.0, 1.0), (b, l, e), &dev)?;
    let scan = || {
        selective_scan(
            x.as_tensor(),
            delta.as_tensor(),
            a.as_tensor(),
            bm.as_tensor(),
            cm.as_tensor(),
            d.as_tensor(),
            false,
        )
    };
    let (mut fwd, mut train) = (Vec::new(), Vec::new());
    let mut sums = (0, 0);
    for step in 0..steps + 2 {
        let t0 = Instant::now();
        let y = scan()?;
        let _ = y.sum_all()?.to_dtype(DType::F32)?.to_scalar::<f32>()?;
        let t1 = Instant::now();
        let y = scan()?;
        let grads = (&y * &weight)?.sum_all()?.backward()?;
        let t2 = Instant::now();
        if step >= 2 {
            fwd.push((t1 - t0).as_secs_f64());
            train.push((t2 - t1).as_secs_f64());
        } else {
            let g = |v: &Var| grads.get(v.as_tensor()).cloned().unwrap();
            sums = (
                checksum(&[&y])?,
                checksum(&[&g(&x), &g(&delta), &g(&a), &g(&bm), &g(&cm), &g(&d)])?,
            );
        }
    }
    let elems = (b * l * e * n) as f64;
    let (f_ms, t_ms) = (median_ms(&mut fwd), median_ms(&mut train));
    println!(
        "scan B{b} L{l} E{e} N{n}: forward_ms median {f_ms:.2} ({:.1} GFLOP/s), \
         train_ms median {t_ms:.2} ({:.1} GFLOP/s); checksum y {:016x} grads {:016x}",
        7.0 * elems / f_ms / 1e6,
        21.0 * elems / t_ms / 1e6,
        sums.0,
        sums.1
    );
    Ok(())
}
