//! DeepLIFT's rules, for attributions against references (`luminome-importance --method
//! deepliftshap`).
//!
//! DeepLIFT runs the model once on a batch whose first half holds the explained inputs and whose
//! second half holds one reference per input (row i of the first half paired with row i of the
//! second), and backpropagates with each nonlinear operation's local gradient replaced by a
//! *multiplier* built from the pair: the change in its output over the change in its input. The
//! multipliers chain like gradients, and with every rule below exact, the input's multipliers
//! times (input − reference) sum to f(input) − f(reference) (completeness).
//!
//! The rules are tangermeme's (`tangermeme._deep_lift_utils`, 1.6.0), which
//! `bench/importance/deeplift_tangermeme.py` checks these against:
//!
//! - [`relu`], [`sigmoid`]: the rescale rule, Δy/Δx elementwise, the ordinary derivative where
//!   |Δx| < 1e-6.
//! - [`product`], [`matmul`]: the midpoint rule of bilinear operations: each operand's multiplier
//!   is the other operand at the midpoint of input and reference (exact for a product).
//! - [`LayerNorm`](super::LayerNorm) (through [`normalize_last_dim`]): the closed-form rule of
//!   tangermeme's `_layernorm`, which accounts for every input moving the mean and variance.
//! - [`masked_max`]: the max-pooling rule of `_maxpool` over all positions.
//! - [`gelu`]: the rescale rule (the transformer's feed-forward).
//! - [`softmax_last_dim`]: tangermeme's `_softmax` rule (exp, sum and reciprocal chained with
//!   log-ratio multipliers), for attention probabilities; with [`matmul`] at QKᵀ and at the
//!   probabilities times V, the whole standard attention.
//!
//! Every rule is written as `value.detach() + J(x − x.detach())` with J the rule's linear map
//! (its multipliers) built from detached pair statistics: the forward value is the operation's
//! own (x − x.detach() is exactly zero) and the backward pass applies J's transpose, so no custom
//! backward is needed and the rules run on every device. Outside a [`Scope`] each function is
//! the ordinary operation, bit for bit.

use std::cell::Cell;

use candle_core::{DType, Result, Tensor, D};

thread_local! {
    static ACTIVE: Cell<bool> = const { Cell::new(false) };
}

/// While alive, the functions of this module (and the layers that call them: the CNN's
/// activations, layer norms, the adapters' gates and pooling) apply DeepLIFT's rules to
/// batches of paired halves. Per thread: the forward pass must be built on the thread that
/// entered the scope (the backward pass may run anywhere).
pub struct Scope {
    previous: bool,
}

impl Scope {
    pub fn enter() -> Self {
        Self {
            previous: ACTIVE.with(|a| a.replace(true)),
        }
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        ACTIVE.with(|a| a.set(self.previous));
    }
}

/// Whether a [`Scope`] is alive on this thread.
pub fn active() -> bool {
    ACTIVE.with(Cell::get)
}

/// The two halves of dimension 0 (inputs, references).
fn halves(x: &Tensor) -> Result<(Tensor, Tensor)> {
    let n = x.dim(0)?;
    if n % 2 != 0 {
        candle_core::bail!("DeepLIFT: a batch of {n} rows is not inputs and references in pairs");
    }
    Ok((x.narrow(0, 0, n / 2)?, x.narrow(0, n / 2, n / 2)?))
}

/// `t` for both halves.
fn both(t: &Tensor) -> Result<Tensor> {
    Tensor::cat(&[t, t], 0)
}

/// The midpoint of each pair, for both halves.
fn midpoint(x: &Tensor) -> Result<Tensor> {
    let (a, b) = halves(&x.detach())?;
    both(&((a + b)? * 0.5)?)
}

/// `value` (detached) plus `x − x.detach()` through `mult` elementwise: the forward value is
/// `value`, the gradient reaching `x` is the upstream gradient times `mult`.
fn through(value: &Tensor, x: &Tensor, mult: &Tensor) -> Result<Tensor> {
    value.detach() + (x - x.detach())?.mul(&mult.detach())?
}

/// The rescale rule for an elementwise `y = f(x)`: multiplier Δy/Δx of each pair (both halves),
/// `derivative` (f′ at each row's own x) where |Δx| < 1e-6.
pub fn rescale(x: &Tensor, y: &Tensor, derivative: &Tensor) -> Result<Tensor> {
    let (x1, x2) = halves(&x.detach())?;
    let (y1, y2) = halves(&y.detach())?;
    let dx = (x1 - x2)?;
    let small = both(&dx.abs()?.lt(1e-6)?)?;
    // Where Δx is tiny the secant is noise (or 0/0) and is not selected.
    let secant = both(&((y1 - y2)? / dx)?)?;
    let mult = small.where_cond(&derivative.detach(), &secant)?;
    through(y, x, &mult)
}

/// ReLU; DeepLIFT's rescale rule inside a [`Scope`].
pub fn relu(x: &Tensor) -> Result<Tensor> {
    let y = x.relu()?;
    if !active() {
        return Ok(y);
    }
    let derivative = x.detach().gt(0.0)?.to_dtype(x.dtype())?;
    rescale(x, &y, &derivative)
}

/// The logistic sigmoid; DeepLIFT's rescale rule inside a [`Scope`].
pub fn sigmoid(x: &Tensor) -> Result<Tensor> {
    let y = candle_nn::ops::sigmoid(x)?;
    if !active() {
        return Ok(y);
    }
    let s = y.detach();
    let derivative = (&s * (1.0 - &s)?)?;
    rescale(x, &y, &derivative)
}

/// GELU (erf form, [`super::gelu`]); DeepLIFT's rescale rule inside a [`Scope`], the
/// derivative Φ(x) + x·φ(x) where |Δx| < 1e-6.
pub fn gelu(x: &Tensor) -> Result<Tensor> {
    let y = super::gelu(x)?;
    if !active() {
        return Ok(y);
    }
    let xd = x.detach();
    let cdf = ((&xd * std::f64::consts::FRAC_1_SQRT_2)?.erf()? + 1.0)? * 0.5;
    let pdf = (xd.sqr()? * -0.5)?.exp()?
        * (0.5 * std::f64::consts::FRAC_2_SQRT_PI * std::f64::consts::FRAC_1_SQRT_2);
    let derivative = (cdf? + (xd * pdf?)?)?;
    rescale(x, &y, &derivative)
}

/// Softmax over the last dimension of `x` (already biased), `probs` its ordinary value, under
/// tangermeme's softmax rule: with a = exp(x − c), s = Σa, v = 1/s, y = a·v (c the larger of the
/// pair's maxima), the multiplier from input j to output i is δᵢⱼ·Dᵢ + Bᵢ·Aⱼ, where
/// D = Δy/Δlog y (y_ref where |Δlog y| ≤ 1e-6), A = Δa/Δx (a_ref where |Δx| ≤ 1e-6) and
/// B = −v·v_ref·D·(Δlog v/Δv) (1/v_ref where |Δv| ≤ 1e-6).
pub fn softmax_last_dim(x: &Tensor, probs: &Tensor) -> Result<Tensor> {
    let (x1, x2) = halves(&x.detach())?;
    let c = x1
        .max_keepdim(D::Minus1)?
        .maximum(&x2.max_keepdim(D::Minus1)?)?;
    let (a1, a2) = (x1.broadcast_sub(&c)?.exp()?, x2.broadcast_sub(&c)?.exp()?);
    let tiny = f64::from(f32::MIN_POSITIVE);
    let v1 = a1.sum_keepdim(D::Minus1)?.maximum(tiny)?.recip()?;
    let v2 = a2.sum_keepdim(D::Minus1)?.maximum(tiny)?.recip()?;
    let (y1, y2) = (a1.broadcast_mul(&v1)?, a2.broadcast_mul(&v2)?);
    let dx = (&x1 - &x2)?;
    let moved = |d: &Tensor| d.abs()?.gt(1e-6);
    let a_mult = moved(&dx)?.where_cond(&((&a1 - &a2)? / &dx)?, &a2)?;
    let dlog_v = (v1.log()? - v2.log()?)?;
    let dlog_y = dx.broadcast_add(&dlog_v)?;
    let d_mult = moved(&dlog_y)?.where_cond(&((&y1 - &y2)? / &dlog_y)?, &y2)?;
    let dv = (&v1 - &v2)?;
    let v_mult = moved(&dv)?.where_cond(&(&dlog_v / &dv)?, &v2.recip()?)?;
    let b_mult = d_mult
        .broadcast_mul(&v_mult)?
        .broadcast_mul(&(&v1 * &v2)?.neg()?)?;
    let (a_mult, b_mult, d_mult) = (both(&a_mult)?, both(&b_mult)?, both(&d_mult)?);
    let delta = (x - x.detach())?;
    let through_sum = (&a_mult * &delta)?.sum_keepdim(D::Minus1)?;
    let mapped = ((&d_mult * &delta)? + b_mult.broadcast_mul(&through_sum)?)?;
    probs.detach() + mapped
}

/// `a ⊙ b` (broadcasting); the midpoint rule inside a [`Scope`].
pub fn product(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    if !active() {
        return a.broadcast_mul(b);
    }
    let value = a.detach().broadcast_mul(&b.detach())?;
    let da = (a - a.detach())?.broadcast_mul(&midpoint(b)?)?;
    let db = midpoint(a)?.broadcast_mul(&(b - b.detach())?)?;
    (value + da)?.broadcast_add(&db)
}

/// Batched `a · b` ([`super::batched_matmul`]); the midpoint rule inside a [`Scope`].
pub fn matmul(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    if !active() {
        return super::batched_matmul(a, b);
    }
    let value = super::batched_matmul(&a.detach(), &b.detach())?;
    let da = super::batched_matmul(&(a - a.detach())?, &midpoint(b)?)?;
    let db = super::batched_matmul(&midpoint(a)?, &(b - b.detach())?)?;
    (value + da)? + db
}

/// The statistics of one half for the layer-norm rule: centred input a and v = (σ² + ε)^−½.
fn norm_stats(x: &Tensor, eps: f64) -> Result<(Tensor, Tensor)> {
    let a = x.broadcast_sub(&x.mean_keepdim(D::Minus1)?)?;
    let v = (a.sqr()?.mean_keepdim(D::Minus1)? + eps)?.powf(-0.5)?;
    Ok((a, v))
}

/// Normalisation of the last dimension (zero mean, unit variance, no affine) under DeepLIFT's
/// layer-norm rule; `normalized` is its ordinary value. The multiplier from input j to output i
/// is v̄(δᵢⱼ − 1/D) + r·sᵢsⱼ/(2D), with v̄ the mean of the pair's v, s = a + a_ref and
/// r = Δv/Δσ² = −v²·v_ref²/(2v̄) (tangermeme's `_layer_normalization_helper`): symmetric, so the
/// forward map below is also its own transpose.
pub fn normalize_last_dim(x: &Tensor, normalized: &Tensor, eps: f64) -> Result<Tensor> {
    let (x1, x2) = halves(&x.detach())?;
    let (a1, v1) = norm_stats(&x1, eps)?;
    let (a2, v2) = norm_stats(&x2, eps)?;
    let d = x.dim(D::Minus1)? as f64;
    let v_avg = ((&v1 + &v2)? * 0.5)?;
    let s = (a1 + a2)?;
    let ratio = ((v1.sqr()? * v2.sqr()?)?.neg()? / (&v_avg * 2.0)?)?;
    let variance_term = s.broadcast_mul(&ratio)?.affine(1.0 / (2.0 * d), 0.0)?;
    let (v_avg, s, variance_term) = (both(&v_avg)?, both(&s)?, both(&variance_term)?);
    let delta = (x - x.detach())?;
    let centred = delta.broadcast_sub(&delta.mean_keepdim(D::Minus1)?)?;
    let along = (&s * &delta)?.sum_keepdim(D::Minus1)?;
    let mapped = (centred.broadcast_mul(&v_avg)? + variance_term.broadcast_mul(&along)?)?;
    normalized.detach() + mapped
}

/// Max over dimension 1 of `[B, L, D]` with padded positions excluded (the value of
/// [`super::masked_max`]) under the max-pooling rule: for the pair's maxima o, o_ref at
/// positions i, i_ref and m = max(o, o_ref), position i carries m − o_ref and i_ref carries
/// o − m, each divided by that position's Δh (the ordinary max gradient where |Δh| < 1e-7).
pub fn masked_max(h: &Tensor, mask: &Tensor, pooled: &Tensor) -> Result<Tensor> {
    let (_, l, _) = h.dims3()?;
    let hd = h.detach();
    let bias = ((mask.to_dtype(h.dtype())?.unsqueeze(2)? - 1.0)? * (-super::MASK_BIAS))?;
    let winner = hd.broadcast_add(&bias)?.argmax_keepdim(1)?; // [B, 1, D]
    let positions = Tensor::arange(0u32, l as u32, h.device())?.reshape((1, l, 1))?;
    let at_winner = positions.broadcast_eq(&winner)?.to_dtype(h.dtype())?; // [B, L, D]
    let (o1, o2) = halves(&pooled.detach())?;
    let m = o1.maximum(&o2)?;
    let (w1, w2) = halves(&at_winner)?;
    let carried = (w1.broadcast_mul(&(&m - &o2)?.unsqueeze(1)?)?
        + w2.broadcast_mul(&(&o1 - &m)?.unsqueeze(1)?)?)?;
    let (h1, h2) = halves(&hd)?;
    let dh = (h1 - h2)?;
    let small = both(&dh.abs()?.lt(1e-7)?)?;
    let ratio = both(&(carried / dh)?)?;
    let mult = small.where_cond(&at_winner, &ratio)?;
    let moved = (h - &hd)?.mul(&mult)?.sum(1)?;
    pooled.detach() + moved
}

/// Whether `t`'s dtype can hold the rules' ratios (f32 or f64).
pub fn supported_dtype(t: &Tensor) -> bool {
    matches!(t.dtype(), DType::F32 | DType::F64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{Device, Var};

    /// Pairs of random rows: the explained half and the reference half, f64.
    fn pairs(shape: &[usize], seed: u64) -> Tensor {
        crate::nn::kernels::test_support::randn(shape, seed)
    }

    /// Σ over the first half of (x − x_ref)·∂f/∂x under the rules, and Σ f(x) − f(x_ref), for
    /// an f that maps each row to a scalar.
    fn completeness(x: &Tensor, f: impl Fn(&Tensor) -> Result<Tensor>) -> (f64, f64) {
        let var = Var::from_tensor(x).unwrap();
        let _scope = Scope::enter();
        let y = f(var.as_tensor()).unwrap();
        let grads = y.sum_all().unwrap().backward().unwrap();
        let g = grads.get(var.as_tensor()).unwrap();
        let (g1, _) = halves(g).unwrap();
        let (x1, x2) = halves(x).unwrap();
        let attributed = ((x1 - x2).unwrap() * g1)
            .unwrap()
            .sum_all()
            .unwrap()
            .to_scalar::<f64>()
            .unwrap();
        let (y1, y2) = halves(&y).unwrap();
        let change = (y1 - y2)
            .unwrap()
            .sum_all()
            .unwrap()
            .to_scalar::<f64>()
            .unwrap();
        (attributed, change)
    }

    fn assert_complete(name: &str, (attributed, change): (f64, f64)) {
        assert!(
            (attributed - change).abs() < 1e-9 * (1.0 + change.abs()),
            "{name}: attributions sum to {attributed}, the output changed by {change}"
        );
        assert!(
            change.abs() > 1e-3,
            "{name}: the test's output did not move"
        );
    }

    #[test]
    fn every_rule_is_complete_on_its_own_and_chained() {
        let x = pairs(&[6, 5, 4], 3);
        let w = pairs(&[1, 1, 4], 4).squeeze(0).unwrap();
        let per_row = |y: Tensor| -> Result<Tensor> { y.flatten_from(1)?.sum(1) };
        assert_complete("relu", completeness(&x, |x| per_row(relu(x)?)));
        assert_complete("sigmoid", completeness(&x, |x| per_row(sigmoid(x)?)));
        assert_complete(
            "layer norm",
            completeness(&x, |x| {
                let n = crate::nn::normalize_last_dim(x, 1e-5)?;
                per_row(normalize_last_dim(x, &n, 1e-5)?.broadcast_mul(&w)?)
            }),
        );
        let mask = Tensor::new(&[[1f64, 1., 1., 0., 0.]; 6], &Device::Cpu).unwrap();
        assert_complete(
            "masked max",
            completeness(&x, |x| {
                let pooled = crate::nn::masked_max(x, &mask)?;
                per_row(masked_max(x, &mask, &pooled)?)
            }),
        );
        assert_complete("gelu", completeness(&x, |x| per_row(gelu(x)?)));
        assert_complete(
            "softmax",
            completeness(&x, |x| {
                let p = crate::nn::softmax_last_dim(x)?;
                per_row(softmax_last_dim(x, &p)?.broadcast_mul(&w)?)
            }),
        );
        assert_complete(
            "product and matmul",
            completeness(&x, |x| {
                let s = sigmoid(x)?;
                let p = product(x, &s.narrow(2, 0, 1)?)?;
                per_row(matmul(&p, &x.transpose(1, 2)?.contiguous()?)?)
            }),
        );
        // A chain: relu → norm → gated product → max, as the CNN and its adapters use them.
        assert_complete(
            "chain",
            completeness(&x, |x| {
                let h = relu(x)?;
                let n = normalize_last_dim(&h, &crate::nn::normalize_last_dim(&h, 1e-5)?, 1e-5)?;
                let g = product(&sigmoid(&n)?, &n)?;
                per_row(masked_max(&g, &mask, &crate::nn::masked_max(&g, &mask)?)?)
            }),
        );
    }

    #[test]
    fn outside_a_scope_the_operations_are_the_ordinary_ones() {
        let x = pairs(&[2, 3, 4], 5);
        assert!(!active());
        let same = |a: &Tensor, b: &Tensor| {
            assert_eq!(
                a.flatten_all().unwrap().to_vec1::<f64>().unwrap(),
                b.flatten_all().unwrap().to_vec1::<f64>().unwrap()
            )
        };
        same(&relu(&x).unwrap(), &x.relu().unwrap());
        same(&sigmoid(&x).unwrap(), &candle_nn::ops::sigmoid(&x).unwrap());
        {
            let _scope = Scope::enter();
            assert!(active());
            // Inside, the forward values are still the operation's own.
            same(&relu(&x).unwrap(), &x.relu().unwrap());
        }
        assert!(!active());
    }
}
