//! The vendored candle-core's copy of broadcast layouts (vendor/README.md, "Broadcast copies"):
//! a tensor whose innermost dimensions are broadcast (stride 0), made contiguous, holds the
//! values an element-by-element read gives, for every shape of broadcast a model makes, and the
//! gradient of a sum (a broadcast scalar) is all ones.

use candle_core::{DType, Device, IndexOp, Tensor, Var};

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

#[test]
fn broadcast_layouts_made_contiguous_hold_every_value() {
    let dev = Device::Cpu;
    let base = Tensor::arange(0f32, 24.0, &dev).unwrap();
    let cases: Vec<Tensor> = vec![
        // A scalar to a whole tensor (a sum's gradient).
        base.i(5).unwrap().broadcast_as((3, 4, 5)).unwrap(),
        // Per row, along the last dimension (a mean over it).
        base.i(0..3)
            .unwrap()
            .reshape((3, 1))
            .unwrap()
            .broadcast_as((3, 7))
            .unwrap(),
        // The two innermost broadcast, behind a real one.
        base.i(0..2)
            .unwrap()
            .reshape((2, 1, 1))
            .unwrap()
            .broadcast_as((2, 3, 4))
            .unwrap(),
        // Broadcast in the middle only (not a run: the other path).
        base.i(0..4)
            .unwrap()
            .reshape((1, 4))
            .unwrap()
            .broadcast_as((3, 4))
            .unwrap(),
        // From an offset and a stride (a narrowed, transposed source).
        base.reshape((4, 6))
            .unwrap()
            .t()
            .unwrap()
            .i((1..4, 2))
            .unwrap()
            .reshape((3, 1))
            .unwrap()
            .broadcast_as((3, 5))
            .unwrap(),
    ];
    for t in cases {
        let flat = t
            .contiguous()
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1::<f32>()
            .unwrap();
        assert_eq!(flat, values_by_index(&t), "{:?} {:?}", t.dims(), t.stride());
    }
}

#[test]
fn the_gradient_of_a_sum_and_of_a_mean_is_filled_whole() {
    let dev = Device::Cpu;
    let x = Var::from_tensor(&Tensor::ones((4, 6, 5), DType::F32, &dev).unwrap()).unwrap();
    let grads = x.as_tensor().sum_all().unwrap().backward().unwrap();
    let g = grads.get(x.as_tensor()).unwrap().flatten_all().unwrap();
    assert_eq!(g.to_vec1::<f32>().unwrap(), vec![1.0; 120]);
    let grads = x
        .as_tensor()
        .mean_keepdim(2)
        .unwrap()
        .sum_all()
        .unwrap()
        .backward()
        .unwrap();
    let g = grads.get(x.as_tensor()).unwrap().flatten_all().unwrap();
    assert_eq!(g.to_vec1::<f32>().unwrap(), vec![0.2; 120]);
}
