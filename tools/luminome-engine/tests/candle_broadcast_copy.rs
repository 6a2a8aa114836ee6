//! The vendored candle-core's copy of broadcast layouts (vendor/README.md, "Broadcast copies"):
//! a tensor whose innermost dimensions are broadcast (stride 0), made contiguous, holds the
//! values an element-by-element read gives, for every shape of broadcast a model makes, and the
//! gradient of a sum (a broadcast scalar) is all ones.

use candle_core::{DType, Device, IndexOp, Result, Tensor, Var};

/// `t`'s values read one index at a time through its layout (no copy routine involved).
fn values_by_index(t: &Tensor) -> Vec<f32> {
    let dims = t.dims().to_vec();
    let count: usize = dims.iter().product();
    (0..count)
        .map(|flat| {
            let mut rest = flat;
            let mut index = vec![0; dims.len()];
            for (i, &d) in dims.iter().enumerate().rev() {
                index[i] = rest % d;
                rest /= d;
            }
            let mut at = t.clone();
            for &i in &index {
                at = at.i(i).unwrap();
            }
            at.to_scalar::<f32>().unwrap()
        })
        .collect()
}

/// `values` `[len]` as a column `[len, 1, …]` (`column_dims`), broadcast to `shape`.
fn broadcast_column(values: &Tensor, column_dims: &[usize], shape: &[usize]) -> Result<Tensor> {
    values.reshape(column_dims)?.broadcast_as(shape)
}

#[test]
fn broadcast_layouts_made_contiguous_hold_every_value() -> Result<()> {
    let dev = Device::Cpu;
    let base = Tensor::arange(0f32, 24.0, &dev)?;
    let cases: Vec<Tensor> = vec![
        // A scalar to a whole tensor (a sum's gradient).
        base.i(5)?.broadcast_as((3, 4, 5))?,
        // Per row, along the last dimension (a mean over it).
        broadcast_column(&base.i(0..3)?, &[3, 1], &[3, 7])?,
        // The two innermost broadcast, behind a real one.
        broadcast_column(&base.i(0..2)?, &[2, 1, 1], &[2, 3, 4])?,
        // Broadcast in the middle only (not a run: the other path).
        broadcast_column(&base.i(0..4)?, &[1, 4], &[3, 4])?,
        // From an offset and a stride (a narrowed, transposed source).
        broadcast_column(&base.reshape((4, 6))?.t()?.i((1..4, 2))?, &[3, 1], &[3, 5])?,
    ];
    for t in cases {
        let flat = t.contiguous()?.flatten_all()?.to_vec1::<f32>()?;
        assert_eq!(flat, values_by_index(&t), "{:?} {:?}", t.dims(), t.stride());
    }
    Ok(())
}

#[test]
fn the_gradient_of_a_sum_and_of_a_mean_is_filled_whole() -> Result<()> {
    let dev = Device::Cpu;
    let x = Var::from_tensor(&Tensor::ones((4, 6, 5), DType::F32, &dev)?)?;
    let grads = x.as_tensor().sum_all()?.backward()?;
    let g = grads.get(x.as_tensor()).unwrap().flatten_all()?;
    assert_eq!(g.to_vec1::<f32>()?, vec![1.0; 120]);
    let grads = x.as_tensor().mean_keepdim(2)?.sum_all()?.backward()?;
    let g = grads.get(x.as_tensor()).unwrap().flatten_all()?;
    assert_eq!(g.to_vec1::<f32>()?, vec![0.2; 120]);
    Ok(())
}
