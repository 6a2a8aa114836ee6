//! The fused op against the graph it replaces, bit for bit.

use super::*;
use crate::nn::kernels::test_support::{randn, value_and_grad_bits};
use crate::nn::{attention_bias, batched_matmul, maybe_dropout, softmax_last_dim_biased};
use candle_core::{Device, Var};

/// The graph `SelfAttention` runs without the fused op (backbones/transformer/attention.rs).
fn graph(qkv: &Tensor, bias: &Tensor, heads: usize, p: f64, rng: Option<&DropoutRng>) -> Tensor {
    let (b, l, three_d) = qkv.dims3().unwrap();
    let dh = three_d / 3 / heads;
    let qkv = qkv
        .reshape((b, l, 3, heads, dh))
        .unwrap()
        .permute((2, 0, 3, 1, 4))
        .unwrap()
        .contiguous()
        .unwrap();
    let q = (qkv.get(0).unwrap() * (1.0 / (dh as f64).sqrt())).unwrap();
    let (k, v) = (qkv.get(1).unwrap(), qkv.get(2).unwrap());
    let s = batched_matmul(&q, &k.t().unwrap()).unwrap();
    let y = softmax_last_dim_biased(&s, bias).unwrap();
    let y = maybe_dropout(&y, p, rng).unwrap();
    batched_matmul(&y, &v)
        .unwrap()
        .transpose(1, 2)
        .unwrap()
        .reshape((b, l, three_d / 3))
        .unwrap()
}

#[test]
fn fused_attention_is_the_graph_bit_for_bit_values_and_gradients() {
    // Sizes around gemm's blocks and the softmax's eight lanes; padding; with and without
    // dropout.
    for (b, l, heads, dh, p) in [
        (2, 7, 3, 5, 0.0),
        (2, 9, 2, 2, 0.2),
        (3, 72, 4, 32, 0.1),
        (1, 130, 2, 16, 0.3),
    ] {
        let d = heads * dh;
        let x = randn(&[b, l, 3 * d], 1).to_dtype(DType::F32).unwrap();
        let qkv = Var::from_tensor(&x).unwrap();
        let mut m = vec![1f32; b * l];
        m[l - l / 3..l].fill(0.0); // the first sample ends in padding
        let mask = Tensor::from_vec(m, (b, l), &Device::Cpu).unwrap();
        let bias = attention_bias(&mask, DType::F32).unwrap();
        let w = randn(&[b, l, d], 2).to_dtype(DType::F32).unwrap();
        let r1 = DropoutRng::new(4);
        let r2 = DropoutRng::new(4);
        let want = graph(qkv.as_tensor(), &bias, heads, p, Some(&r1));
        let got = fused_self_attention(qkv.as_tensor(), &bias, heads, p, Some(&r2)).unwrap();
        assert_eq!(
            value_and_grad_bits(&got, &w, &[&qkv]),
            value_and_grad_bits(&want, &w, &[&qkv]),
            "b {b} l {l} heads {heads} dh {dh} p {p}"
        );
        // The stream moved past the same words: the next dropout draws the same mask.
        assert_eq!(r1.mask(100, 0.5), r2.mask(100, 0.5));
        // Inference (nothing tracked, nothing kept): the same values.
        let plain = fused_self_attention(&x, &bias, heads, p, None).unwrap();
        let want = graph(&x, &bias, heads, p, None);
        let bits = |t: &Tensor| -> Vec<u32> {
            let v: Vec<f32> = t.flatten_all().unwrap().to_vec1().unwrap();
            v.iter().map(|v| v.to_bits()).collect()
        };
        assert_eq!(bits(&plain), bits(&want));
    }
}

#[test]
fn shapes_the_fused_op_cannot_keep_bits_for_are_left_to_the_graph() {
    let t = |dims: &[usize]| Tensor::zeros(dims, DType::F32, &Device::Cpu).unwrap();
    assert!(fused_attention_applies(&t(&[2, 8, 24]), 4));
    assert!(!fused_attention_applies(&t(&[2, 8, 24]), 8)); // one feature per head
    assert!(!fused_attention_applies(&t(&[2, 1, 24]), 4)); // one position
    assert!(!fused_attention_applies(&t(&[2, 8, 25]), 4)); // not 3 · heads · Dh
    let f64s = Tensor::zeros((2, 8, 24), DType::F64, &Device::Cpu).unwrap();
    assert!(!fused_attention_applies(&f64s, 4));
}
