//! Seeded parameter initialisation (candle's CPU generator cannot be seeded): every parameter
//! is drawn from its own ChaCha stream keyed by (seed, name), so the same seed gives the same
//! weights whatever the order in which parameters were created.

use candle_core::{Result, Tensor};
use candle_nn::VarMap;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Standard deviation of weight matrices and embeddings (BERT's 0.02).
pub const INIT_STD: f64 = 0.02;

/// A stable hash of a parameter name (seeds its own random stream).
pub fn name_hash(name: &str) -> u64 {
    // FNV-1a: stable across runs and platforms.
    name.bytes().fold(0xcbf29ce484222325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100000001b3)
    })
}

/// A layer norm's scale: `….norm.weight`, `….ln_f.weight`, and in published names
/// `….LayerNorm.weight` / `….emb_layer_norm_after.weight`.
fn is_norm_scale(name: &str) -> bool {
    name.ends_with(".weight")
        && name.rsplit('.').nth(1).is_some_and(|m| {
            let m = m.to_ascii_lowercase();
            m.contains("norm") || m.starts_with("ln")
        })
}

/// Matrices and embeddings ~ N(0, 0.02²) (CNN convolutions U(±1/√fan_in)); layer-norm scales 1;
/// biases 0.
pub fn init_parameters(
    varmap: &VarMap,
    seed: u64,
    names: Option<&dyn Fn(&str) -> bool>,
) -> Result<()> {
    let data = varmap.data().lock().expect("var map lock");
    let mut keys: Vec<&String> = data.keys().collect();
    keys.sort();
    for name in keys {
        if let Some(f) = names {
            if !f(name) {
                continue;
            }
        }
        let var = &data[name];
        let t = var.as_tensor();
        let n = t.elem_count();
        let values: Vec<f32> = if t.rank() == 2 && name.starts_with("cnn.") {
            // Convolutions (ReLU, no normalisation between blocks): PyTorch's Conv1d default,
            // U(±1/√fan_in), so activations keep their scale through the stack where N(0, 0.02²)
            // would shrink them block by block.
            let mut rng = ChaCha8Rng::seed_from_u64(seed ^ name_hash(name));
            let bound = 1.0 / (t.dims()[1] as f64).sqrt();
            (0..n)
                .map(|_| ((rng.random::<f64>() * 2.0 - 1.0) * bound) as f32)
                .collect()
        } else if t.rank() >= 2 {
            let mut rng = ChaCha8Rng::seed_from_u64(seed ^ name_hash(name));
            (0..n)
                .map(|_| (normal(&mut rng) * INIT_STD) as f32)
                .collect()
        } else if is_norm_scale(name) {
            vec![1.0; n]
        } else {
            vec![0.0; n]
        };
        let v = Tensor::from_vec(values, t.shape(), t.device())?.to_dtype(t.dtype())?;
        var.set(&v)?;
    }
    Ok(())
}

/// A standard normal draw (Box–Muller).
fn normal(rng: &mut ChaCha8Rng) -> f64 {
    let u1: f64 = rng.random::<f64>().max(f64::MIN_POSITIVE);
    let u2: f64 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}
