//! Multi-head self-attention (one fused QKV projection, padding masked by an additive bias),
//! standard or genetic (fitness-modulated values), and rotary position embeddings.

use candle_core::{DType, Result, Tensor, D};
use candle_nn::VarBuilder;

use super::config::{AttentionKind, EncoderConfig};
use crate::nn::{
    attention_bias, batched_matmul, deeplift, fused_attention_applies, fused_self_attention,
    maybe_dropout, softmax_last_dim, softmax_last_dim_biased, DropoutRng, Linear,
};

/// What every attention layer of a stack needs to know about the padding, built once per
/// forward pass: the additive bias on the keys and, for genetic attention, the weights of the
/// mean over unmasked positions.
#[derive(Debug, Clone)]
pub(crate) struct AttentionMask {
    /// `[B, 1, 1, L]`: 0 at tokens, −1e9 at padding.
    pub bias: Tensor,
    /// `[B, 1, L, 1]`: m_t / Σ_t m_t (genetic attention only).
    pub mean_weights: Option<Tensor>,
}

impl AttentionMask {
    /// From mask `[B, L]` (1 = token, 0 = padding; any dtype).
    pub fn new(mask: &Tensor, dtype: DType, kind: AttentionKind) -> Result<Self> {
        let bias = attention_bias(mask, dtype)?;
        let mean_weights = match kind {
            AttentionKind::Standard => None,
            AttentionKind::Genetic | AttentionKind::GeneticScaled => {
                let (b, l) = mask.dims2()?;
                let m = mask.to_dtype(dtype)?;
                // A row with no token at all would divide by 0: count at least one.
                let n = m.sum_keepdim(1)?.clamp(1.0, f64::INFINITY)?;
                Some(m.broadcast_div(&n)?.reshape((b, 1, l, 1))?)
            }
        };
        Ok(Self { bias, mean_weights })
    }
}

/// Genetic attention's fitness scores γ `[B, H, 1, Dh]` of values `v` `[B, H, L, Dh]`, with
/// `mean_weights` `[B, 1, L, 1]` (summing to 1 over L):
///
/// V_norm = σ(V); Φ_g = Σ_t w_t V_norm[t, g] (the mean over unmasked positions);
/// γ_g = (Σ_s (Φ_g + ½)/(Φ_s + ½))⁻¹ = (1/(Φ_g + ½)) / Σ_s 1/(Φ_s + ½).
///
/// So γ sums to 1 over the head's Dh features, and γ_g ∝ 1/(Φ_g + ½): features whose values
/// are high on average are weighted down. `scaled` multiplies γ by Dh (mean 1).
pub(crate) fn genetic_fitness(v: &Tensor, mean_weights: &Tensor, scaled: bool) -> Result<Tensor> {
    let dh = v.dim(D::Minus1)?;
    let v_norm = candle_nn::ops::sigmoid(v)?;
    let phi = v_norm.broadcast_mul(mean_weights)?.sum_keepdim(2)?;
    let inv = (phi + 0.5)?.recip()?;
    let gamma = inv.broadcast_div(&inv.sum_keepdim(D::Minus1)?)?;
    if scaled {
        gamma * dh as f64
    } else {
        Ok(gamma)
    }
}

/// Rotary position tables (cos, sin), each `[max_length, head_dim / 2]`.
#[derive(Debug, Clone)]
pub(crate) struct Rotary {
    cos: Tensor,
    sin: Tensor,
}

impl Rotary {
    pub(crate) fn new(
        cfg: &EncoderConfig,
        dtype: DType,
        device: &candle_core::Device,
    ) -> Result<Self> {
        let half = cfg.head_dim() / 2;
        let mut cos = Vec::with_capacity(cfg.max_length * half);
        let mut sin = Vec::with_capacity(cfg.max_length * half);
        for pos in 0..cfg.max_length {
            for i in 0..half {
                let freq = 1.0 / 10000f64.powf(2.0 * i as f64 / cfg.head_dim() as f64);
                let angle = pos as f64 * freq;
                cos.push(angle.cos());
                sin.push(angle.sin());
            }
        }
        let shape = (cfg.max_length, half);
        Ok(Self {
            cos: Tensor::from_vec(cos, shape, device)?.to_dtype(dtype)?,
            sin: Tensor::from_vec(sin, shape, device)?.to_dtype(dtype)?,
        })
    }

    /// The tables as ESM's `RotaryEmbedding` computes them (Nucleotide Transformer v2): every
    /// step in f32 — `inv_freq = 1 / 10000^(2i / Dh)`, `angle = pos · inv_freq` — so the
    /// angles carry the published model's rounding, not f64's.
    pub(crate) fn esm(
        head_dim: usize,
        max_length: usize,
        dtype: DType,
        device: &candle_core::Device,
    ) -> Result<Self> {
        let half = head_dim / 2;
        let inv_freq: Vec<f32> = (0..half)
            .map(|i| 1.0 / 10000f32.powf((2 * i) as f32 / head_dim as f32))
            .collect();
        let mut cos = Vec::with_capacity(max_length * half);
        let mut sin = Vec::with_capacity(max_length * half);
        for pos in 0..max_length {
            for &f in &inv_freq {
                let angle = pos as f32 * f;
                cos.push(angle.cos());
                sin.push(angle.sin());
            }
        }
        let shape = (max_length, half);
        Ok(Self {
            cos: Tensor::from_vec(cos, shape, device)?.to_dtype(dtype)?,
            sin: Tensor::from_vec(sin, shape, device)?.to_dtype(dtype)?,
        })
    }

    /// Rotates `[B, H, L, Dh]` by position ("rotate half" convention: the first and second
    /// halves of each head form the pairs).
    pub(crate) fn apply(&self, x: &Tensor) -> Result<Tensor> {
        let (_, _, l, _) = x.dims4()?;
        let cos = self.cos.narrow(0, 0, l)?;
        let sin = self.sin.narrow(0, 0, l)?;
        crate::nn::rotate_half(x, &cos, &sin)
    }
}

/// Multi-head self-attention with one fused QKV projection.
#[derive(Debug, Clone)]
pub struct SelfAttention {
    qkv: Linear,
    out: Linear,
    num_heads: usize,
    head_dim: usize,
    dropout: f64,
    kind: AttentionKind,
}

impl SelfAttention {
    pub fn new(cfg: &EncoderConfig, vb: VarBuilder) -> Result<Self> {
        Ok(Self {
            qkv: Linear::new(cfg.d_model, 3 * cfg.d_model, vb.pp("qkv"))?,
            out: Linear::new(cfg.d_model, cfg.d_model, vb.pp("out"))?,
            num_heads: cfg.num_heads,
            head_dim: cfg.head_dim(),
            dropout: cfg.dropout,
            kind: cfg.attention,
        })
    }

    /// Scaled queries, keys and values `[B, H, L, Dh]` of `x` `[B, L, D]` (rotary positions
    /// applied to queries and keys).
    fn project(&self, x: &Tensor, rotary: Option<&Rotary>) -> Result<(Tensor, Tensor, Tensor)> {
        let (b, l, _) = x.dims3()?;
        let (h, dh) = (self.num_heads, self.head_dim);
        // [B, L, 3, H, Dh] → [3, B, H, L, Dh]: one copy gives q, k and v in matmul layout.
        let qkv = self
            .qkv
            .forward(x)?
            .reshape((b, l, 3, h, dh))?
            .permute((2, 0, 3, 1, 4))?
            .contiguous()?;
        let scale = 1.0 / (dh as f64).sqrt();
        let mut q = (qkv.get(0)? * scale)?;
        let mut k = qkv.get(1)?;
        let v = qkv.get(2)?;
        if let Some(r) = rotary {
            q = r.apply(&q)?;
            k = r.apply(&k)?;
        }
        Ok((q, k, v))
    }

    /// `qkv` `[B, L, 3·D]` with its values weighted by genetic attention's fitness scores (the
    /// same products as the graph path's `v · γ`, in the fused op's layout).
    fn genetic_qkv(
        &self,
        qkv: &Tensor,
        mean_weights: &Tensor,
        kind: AttentionKind,
    ) -> Result<Tensor> {
        let (b, l, three_d) = qkv.dims3()?;
        let d = three_d / 3;
        let (h, dh) = (self.num_heads, self.head_dim);
        let v = qkv.narrow(D::Minus1, 2 * d, d)?;
        let heads = v.reshape((b, l, h, dh))?.transpose(1, 2)?; // [B, H, L, Dh]
        let gamma = genetic_fitness(&heads, mean_weights, kind == AttentionKind::GeneticScaled)?;
        let gamma = gamma.transpose(1, 2)?.reshape((b, 1, d))?; // [B, 1, H·Dh]
        let v = v.broadcast_mul(&gamma)?;
        Tensor::cat(&[&qkv.narrow(D::Minus1, 0, 2 * d)?, &v], D::Minus1)
    }

    /// The attention probabilities `[B, H, L, L]` (query × key, eval mode) of `x` `[B, L, D]`
    /// with `bias` `[B, 1, 1, L]`: what attention-based importance reads.
    pub(crate) fn probabilities(
        &self,
        x: &Tensor,
        bias: &Tensor,
        rotary: Option<&Rotary>,
    ) -> Result<Tensor> {
        let (q, k, _) = self.project(x, rotary)?;
        softmax_last_dim_biased(&batched_matmul(&q, &k.t()?)?, bias)
    }

    /// `x`: `[B, L, D]`; `mask`: the stack's padding mask.
    pub(crate) fn forward(
        &self,
        x: &Tensor,
        mask: &AttentionMask,
        rotary: Option<&Rotary>,
        rng: Option<&DropoutRng>,
    ) -> Result<Tensor> {
        let (b, l, d) = x.dims3()?;
        if deeplift::active() {
            return self.forward_deeplift(x, mask, rotary);
        }
        if rotary.is_none() {
            // One op from the projections to the context on the CPU (nn::attention: the same
            // bits as the graph below, without its copies and L × L round trips to memory).
            // Genetic attention is standard attention on fitness-weighted values, so it takes
            // the same op once its values are weighted.
            let qkv = self.qkv.forward(x)?;
            if fused_attention_applies(&qkv, self.num_heads) {
                let qkv = match (self.kind, &mask.mean_weights) {
                    (AttentionKind::Standard, _) => qkv,
                    (kind, Some(w)) => self.genetic_qkv(&qkv, w, kind)?,
                    (_, None) => {
                        candle_core::bail!("internal: genetic attention without mean weights")
                    }
                };
                let ctx =
                    fused_self_attention(&qkv, &mask.bias, self.num_heads, self.dropout, rng)?;
                return self.out.forward(&ctx);
            }
        }
        let (q, k, v) = self.project(x, rotary)?;
        let v = match (self.kind, &mask.mean_weights) {
            (AttentionKind::Standard, _) => v,
            (kind, Some(w)) => {
                let gamma = genetic_fitness(&v, w, kind == AttentionKind::GeneticScaled)?;
                v.broadcast_mul(&gamma)?
            }
            (_, None) => candle_core::bail!("internal: genetic attention without mean weights"),
        };
        let probs = softmax_last_dim_biased(&batched_matmul(&q, &k.t()?)?, &mask.bias)?;
        let probs = maybe_dropout(&probs, self.dropout, rng)?;
        let ctx = batched_matmul(&probs, &v)?; // [B, H, L, Dh]
        let ctx = ctx.transpose(1, 2)?.reshape((b, l, d))?;
        self.out.forward(&ctx)
    }

    /// Standard attention under DeepLIFT's rules (`nn::deeplift`): the midpoint rule at QKᵀ and
    /// at the probabilities times V, the softmax rule between (eval mode, no dropout).
    fn forward_deeplift(
        &self,
        x: &Tensor,
        mask: &AttentionMask,
        rotary: Option<&Rotary>,
    ) -> Result<Tensor> {
        if self.kind != AttentionKind::Standard {
            candle_core::bail!("genetic attention has no DeepLIFT rule");
        }
        let (b, l, d) = x.dims3()?;
        let (q, k, v) = self.project(x, rotary)?;
        let scores = deeplift::matmul(&q, &k.t()?.contiguous()?)?.broadcast_add(&mask.bias)?;
        let probs = deeplift::softmax_last_dim(&scores, &softmax_last_dim(&scores)?)?;
        let ctx = deeplift::matmul(&probs, &v)?;
        self.out.forward(&ctx.transpose(1, 2)?.reshape((b, l, d))?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nn::gradcheck::max_grad_error;
    use crate::nn::kernels::test_support::{randn, weights};
    use candle_core::Device;

    fn sigmoid(x: f64) -> f64 {
        1.0 / (1.0 + (-x).exp())
    }

    /// The spec's formula written out in loops: Φ_g = mean over the unmasked positions of
    /// σ(v[t, g]); γ_g = 1 / Σ_s (Φ_g + ½)/(Φ_s + ½).
    fn fitness_by_hand(v: &[Vec<f64>], mask: &[f64]) -> Vec<f64> {
        let dh = v[0].len();
        let n: f64 = mask.iter().sum();
        let phi: Vec<f64> = (0..dh)
            .map(|g| {
                v.iter()
                    .zip(mask)
                    .map(|(row, m)| m * sigmoid(row[g]))
                    .sum::<f64>()
                    / n
            })
            .collect();
        (0..dh)
            .map(|g| {
                1.0 / (0..dh)
                    .map(|s| (phi[g] + 0.5) / (phi[s] + 0.5))
                    .sum::<f64>()
            })
            .collect()
    }

    #[test]
    fn fitness_is_the_spec_formula_over_unmasked_positions_and_sums_to_one() {
        // One sample, one head, three positions (the last is padding), two features.
        let v = vec![vec![2.0, -1.0], vec![0.0, 3.0], vec![50.0, -50.0]];
        let mask = [1.0, 1.0, 0.0];
        let want = fitness_by_hand(&v, &mask);
        // By hand: Φ = (½(σ(2) + σ(0)), ½(σ(−1) + σ(3))) = (0.690399, 0.610758);
        // γ_0 = 1 / (1 + 1.190399/1.110758) = 0.482695, γ_1 = 0.517305.
        assert!((want[0] - 0.482695).abs() < 1e-6 && (want[1] - 0.517305).abs() < 1e-6);
        let vt = Tensor::new(
            &[[[[2.0f64, -1.0], [0.0, 3.0], [50.0, -50.0]]]],
            &Device::Cpu,
        )
        .unwrap();
        let m = Tensor::new(&[mask], &Device::Cpu).unwrap();
        let am = AttentionMask::new(&m, DType::F64, AttentionKind::Genetic).unwrap();
        let w = am.mean_weights.unwrap();
        let got: Vec<f64> = genetic_fitness(&vt, &w, false)
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1()
            .unwrap();
        for (g, w) in got.iter().zip(&want) {
            assert!((g - w).abs() < 1e-12, "{got:?} vs {want:?}");
        }
        assert!((got.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        // The scaled variant is Dh × γ: mean 1.
        let scaled: Vec<f64> = genetic_fitness(&vt, &w, true)
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1()
            .unwrap();
        assert!((scaled.iter().sum::<f64>() - 2.0).abs() < 1e-12);
    }

    #[test]
    fn fitness_gradient_matches_finite_differences() {
        // [B=2, H=2, L=5, Dh=4], the second sample with two padded positions. The loss weights
        // γ by large random numbers so that the gradients are O(1), not lost under the check's
        // absolute floor.
        let mask = Tensor::new(
            &[[1f64, 1., 1., 1., 1.], [1., 1., 1., 0., 0.]],
            &Device::Cpu,
        )
        .unwrap();
        let am = AttentionMask::new(&mask, DType::F64, AttentionKind::Genetic).unwrap();
        let w = am.mean_weights.unwrap();
        let wt = (weights(&[2, 2, 1, 4]) * 50.0).unwrap();
        for scaled in [false, true] {
            let f = |v: &Tensor| {
                let g = genetic_fitness(v, &w, scaled)?;
                // Modulated values, as the attention uses them.
                v.broadcast_mul(&g)?
                    .sum_keepdim(2)?
                    .broadcast_mul(&wt)?
                    .sum_all()
            };
            let err = max_grad_error(&randn(&[2, 2, 5, 4], 3), 1e-5, &f).unwrap();
            assert!(err < 1e-6, "scaled {scaled}: {err}");
        }
    }

    fn attention(kind: AttentionKind) -> SelfAttention {
        let cfg = EncoderConfig {
            vocab_size: 10,
            d_model: 8,
            num_layers: 1,
            num_heads: 2,
            ffn_dim: 16,
            dropout: 0.0,
            max_length: 8,
            position: super::super::PositionEncoding::Learned,
            layer_norm_eps: 1e-5,
            pad_id: 0,
            attention: kind,
        };
        let varmap = candle_nn::VarMap::new();
        let vb = VarBuilder::from_varmap(&varmap, DType::F64, &Device::Cpu);
        let a = SelfAttention::new(&cfg, vb).unwrap();
        crate::nn::init::init_parameters(&varmap, 5, None).unwrap();
        // Larger weights than the default N(0, 0.02²), so that σ(V) varies across features.
        for var in varmap.all_vars() {
            let t = (var.as_tensor() * 40.0).unwrap();
            var.set(&t).unwrap();
        }
        a
    }

    #[test]
    fn genetic_attention_ignores_padding_differs_from_standard_and_has_gradients() {
        let x = randn(&[1, 4, 8], 7);
        let padded = Tensor::cat(&[x.clone(), randn(&[1, 2, 8], 8)], 1).unwrap();
        let mask = Tensor::new(&[[1f64, 1., 1., 1.]], &Device::Cpu).unwrap();
        let mask_padded = Tensor::new(&[[1f64, 1., 1., 1., 0., 0.]], &Device::Cpu).unwrap();
        let run = |a: &SelfAttention, kind, x: &Tensor, m: &Tensor| {
            let am = AttentionMask::new(m, DType::F64, kind).unwrap();
            a.forward(x, &am, None, None).unwrap()
        };
        let gen = attention(AttentionKind::Genetic);
        let short = run(&gen, AttentionKind::Genetic, &x, &mask);
        let long = run(&gen, AttentionKind::Genetic, &padded, &mask_padded)
            .narrow(1, 0, 4)
            .unwrap();
        let diff = (short.clone() - long)
            .unwrap()
            .abs()
            .unwrap()
            .max_all()
            .unwrap()
            .to_scalar::<f64>()
            .unwrap();
        assert!(diff < 1e-12, "padding changed the output by {diff}");
        // The same weights with standard attention give other outputs (the modulation acts).
        let std_out = run(
            &attention(AttentionKind::Standard),
            AttentionKind::Standard,
            &x,
            &mask,
        );
        let d = (std_out - short)
            .unwrap()
            .abs()
            .unwrap()
            .max_all()
            .unwrap()
            .to_scalar::<f64>()
            .unwrap();
        assert!(d > 1e-3, "genetic equals standard ({d})");
        // Gradient of the whole layer (projections, fitness, softmax) w.r.t. its input.
        let wt = weights(&[1, 4, 8]);
        for kind in [AttentionKind::Genetic, AttentionKind::GeneticScaled] {
            let a = attention(kind);
            let f = |x: &Tensor| {
                let am = AttentionMask::new(&mask, DType::F64, kind)?;
                (a.forward(x, &am, None, None)? * &wt)?.sum_all()
            };
            let err = max_grad_error(&x, 1e-6, &f).unwrap();
            assert!(err < 1e-5, "{kind:?}: {err}");
        }
    }
}
