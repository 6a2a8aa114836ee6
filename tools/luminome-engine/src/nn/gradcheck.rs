//! Finite-difference gradient checking (used by the tests of every op written here).

use candle_core::{DType, Result, Tensor, Var};

/// Largest relative difference between the autograd gradient of the scalar `f(x)` and central
/// finite differences (step `h`), over every element of `x` (f64). The relative difference of an
/// element is |a − n| / max(1, |a|, |n|).
pub fn max_grad_error(x: &Tensor, h: f64, f: &dyn Fn(&Tensor) -> Result<Tensor>) -> Result<f64> {
    let x = x.to_dtype(DType::F64)?;
    let var = Var::from_tensor(&x)?;
    let y = f(var.as_tensor())?;
    let grads = y.backward()?;
    let analytic: Vec<f64> = match grads.get(var.as_tensor()) {
        Some(g) => g.flatten_all()?.to_vec1()?,
        None => vec![0.0; x.elem_count()],
    };
    let base: Vec<f64> = x.flatten_all()?.to_vec1()?;
    let mut worst = 0f64;
    for i in 0..base.len() {
        let eval = |delta: f64| -> Result<f64> {
            let mut v = base.clone();
            v[i] += delta;
            let t = Tensor::from_vec(v, x.shape(), x.device())?;
            f(&t)?.to_scalar::<f64>()
        };
        let numeric = (eval(h)? - eval(-h)?) / (2.0 * h);
        let a = analytic[i];
        let err = (a - numeric).abs() / 1f64.max(a.abs()).max(numeric.abs());
        worst = worst.max(err);
    }
    Ok(worst)
}
