use super::*;
use crate::nn::gradcheck::max_grad_error;
use crate::nn::kernels::test_support::{randn, value_and_grad_bits, weights};
use candle_core::DType;
use candle_core::Var;

/// Inputs of a small scan in f64: x, Δ > 0, A < 0, B, C, D.
fn inputs(b: usize, l: usize, e: usize, n: usize) -> [Tensor; 6] {
    let x = randn(&[b, l, e], 1);
    let delta = randn(&[b, l, e], 2)
        .abs()
        .unwrap()
        .affine(0.3, 0.05)
        .unwrap();
    let a = randn(&[e, n], 3).abs().unwrap().affine(-1.0, -0.1).unwrap();
    let bm = randn(&[b, l, n], 4);
    let cm = randn(&[b, l, n], 5);
    let d = randn(&[e], 6);
    [x, delta, a, bm, cm, d]
}

fn max_diff(a: &Tensor, b: &Tensor) -> f64 {
    (a - b)
        .unwrap()
        .abs()
        .unwrap()
        .flatten_all()
        .unwrap()
        .max(0)
        .unwrap()
        .to_dtype(DType::F64)
        .unwrap()
        .to_scalar::<f64>()
        .unwrap()
}

#[test]
fn the_fused_scan_equals_the_recurrence_written_with_primitives() {
    // 77 channels: a full block of 64 and a partial one; both directions.
    let [x, dl, a, bm, cm, d] = inputs(2, 9, 77, 5);
    for reverse in [false, true] {
        let fused = selective_scan(&x, &dl, &a, &bm, &cm, &d, reverse).unwrap();
        let slow = selective_scan_primitive(&x, &dl, &a, &bm, &cm, &d, reverse).unwrap();
        assert!(max_diff(&fused, &slow) < 1e-12);
        let f32 = |t: &Tensor| t.to_dtype(DType::F32).unwrap();
        let fused32 = selective_scan(
            &f32(&x),
            &f32(&dl),
            &f32(&a),
            &f32(&bm),
            &f32(&cm),
            &f32(&d),
            reverse,
        )
        .unwrap();
        assert!(max_diff(&fused32, &f32(&slow)) < 1e-4);
    }
    // The reverse scan is the forward scan of the flipped sequence, flipped back.
    let flip = |t: &Tensor| t.flip(&[1]).unwrap();
    let rev = selective_scan(&x, &dl, &a, &bm, &cm, &d, true).unwrap();
    let via_flip = flip(
        &selective_scan(&flip(&x), &flip(&dl), &a, &flip(&bm), &flip(&cm), &d, false).unwrap(),
    );
    assert!(max_diff(&rev, &via_flip) < 1e-12);
}

#[test]
fn every_input_gradient_matches_finite_differences() {
    let [x, dl, a, bm, cm, d] = inputs(2, 6, 3, 4);
    let w = randn(&[2, 6, 3], 99);
    for reverse in [false, true] {
        let loss = |x: &Tensor, dl: &Tensor, a: &Tensor, bm: &Tensor, cm: &Tensor, d: &Tensor| {
            selective_scan(x, dl, a, bm, cm, d, reverse)?
                .mul(&w)?
                .sum_all()
        };
        let checks = [
            max_grad_error(&x, 1e-6, &|v| loss(v, &dl, &a, &bm, &cm, &d)).unwrap(),
            max_grad_error(&dl, 1e-6, &|v| loss(&x, v, &a, &bm, &cm, &d)).unwrap(),
            max_grad_error(&a, 1e-6, &|v| loss(&x, &dl, v, &bm, &cm, &d)).unwrap(),
            max_grad_error(&bm, 1e-6, &|v| loss(&x, &dl, &a, v, &cm, &d)).unwrap(),
            max_grad_error(&cm, 1e-6, &|v| loss(&x, &dl, &a, &bm, v, &d)).unwrap(),
            max_grad_error(&d, 1e-6, &|v| loss(&x, &dl, &a, &bm, &cm, v)).unwrap(),
        ];
        for (name, err) in ["x", "delta", "A", "B", "C", "D"].iter().zip(checks) {
            assert!(
                err < 1e-6,
                "reverse {reverse}: gradient of {name}: relative error {err}"
            );
        }
    }
}

#[test]
fn the_f32_kernels_give_the_f64_gradients() {
    // The f32 kernels are their own build (AVX-512 or AVX2 where the CPU has them): checked
    // against the f64 gradients above, on 77 channels (chunks of 16 and a partial one, a block of
    // 64 and a partial one) and a sequence long enough for the adjoint to carry.
    let [x, dl, a, bm, cm, d] = inputs(2, 40, 77, 6);
    let w = randn(&[2, 40, 77], 98);
    let f32 = |t: &Tensor| t.to_dtype(DType::F32).unwrap();
    for reverse in [false, true] {
        let grads = |ts: [Tensor; 6], w: &Tensor| {
            let vars: Vec<candle_core::Var> = ts
                .iter()
                .map(|t| candle_core::Var::from_tensor(t).unwrap())
                .collect();
            let t = |i: usize| vars[i].as_tensor();
            let y = selective_scan(t(0), t(1), t(2), t(3), t(4), t(5), reverse).unwrap();
            let g = y.mul(w).unwrap().sum_all().unwrap().backward().unwrap();
            let out: Vec<Tensor> = vars.iter().map(|v| g.get(v).unwrap().clone()).collect();
            out
        };
        let exact = grads([&x, &dl, &a, &bm, &cm, &d].map(|t| t.clone()), &w);
        let single = grads([&x, &dl, &a, &bm, &cm, &d].map(f32), &f32(&w));
        for ((name, e), s) in ["x", "delta", "A", "B", "C", "D"]
            .iter()
            .zip(&exact)
            .zip(&single)
        {
            let scale = max_diff(e, &e.zeros_like().unwrap());
            let err = max_diff(&s.to_dtype(DType::F64).unwrap(), e) / scale;
            assert!(
                err < 1e-5,
                "reverse {reverse}: f32 gradient of {name}: relative error {err}"
            );
        }
    }
}

/// `inputs(b, l, e, n)` as f32 variables, and f32 weights for a loss Σ w·y over `[b, l, e]`.
fn f32_variables((b, l, e, n): (usize, usize, usize, usize)) -> (Vec<Var>, Tensor) {
    let vars = inputs(b, l, e, n)
        .iter()
        .map(|t| Var::from_tensor(&t.to_dtype(DType::F32).unwrap()).unwrap())
        .collect();
    (vars, weights(&[b, l, e]).to_dtype(DType::F32).unwrap())
}

#[test]
fn the_cpu_op_is_the_packed_op_bit_for_bit() {
    // The CPU's op (x and Δ read in place) and the op CUDA runs (x‖Δ stacked), both on the CPU:
    // the same output and gradients, bit for bit, in f32 (77 channels, both directions).
    use candle_core::D;
    let (vars, w) = f32_variables((2, 9, 77, 5));
    let [x, dl, a, bm, cm, d] = [0, 1, 2, 3, 4, 5].map(|i| vars[i].as_tensor());
    let refs: Vec<&Var> = vars.iter().collect();
    for reverse in [false, true] {
        let cpu = selective_scan(x, dl, a, bm, cm, d, reverse).unwrap();
        let xd = Tensor::stack(&[x, dl], 0).unwrap();
        let bc = Tensor::cat(&[bm, cm], D::Minus1).unwrap();
        let ad = Tensor::cat(&[a, &d.unsqueeze(1).unwrap()], 1).unwrap();
        let packed = xd.apply_op3(&bc, &ad, SelectiveScan { reverse }).unwrap();
        assert_eq!(
            value_and_grad_bits(&cpu, &w, &refs),
            value_and_grad_bits(&packed, &w, &refs)
        );
    }
}

#[test]
fn the_op_and_its_gradients_have_the_same_bits_by_rows_and_by_blocks_of_channels() {
    // 3 rows: one job per row with 3 threads (each block writing its dx and dΔ into the
    // output), blocks of channels with 2 (3 is not a multiple; each block into its own buffer,
    // copied); 77 channels: a full block of 64 and a partial one.
    let (vars, w) = f32_variables((3, 9, 77, 16));
    let [x, dl, a, bm, cm, d] = [0, 1, 2, 3, 4, 5].map(|i| vars[i].as_tensor());
    let refs: Vec<&Var> = vars.iter().collect();
    assert!(!(rows_fill_the_pool_with(3, 2)) && rows_fill_the_pool_with(3, 3));
    let with_threads = |threads: usize, reverse: bool| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            let y = selective_scan(x, dl, a, bm, cm, d, reverse).unwrap();
            value_and_grad_bits(&y, &w, &refs)
        })
    };
    for reverse in [false, true] {
        assert_eq!(with_threads(3, reverse), with_threads(2, reverse));
    }
}
