//! A 1-D convolution over the positions of `[B, L, C]` hidden states ("same" output length,
//! zero outside the row), written as shifted copies of the input side by side and one matrix
//! product: `y[b, t] = W · [x[b, t − r·d]; …; x[b, t + r·d]] + bias` with r = (k − 1)/2 and
//! dilation d. One large matrix product keeps both CPU threads busy where a per-tap loop would
//! not. Building the window is one fused op on the CPU (its backward one pass too; through
//! pad, narrow and concatenation autograd made several copies of every activation, which cost
//! more than the matrix product) and candle primitives on other devices.

use candle_core::{CpuStorage, Layout, Result, Shape, Tensor};
use candle_nn::VarBuilder;
use rayon::prelude::*;

use crate::nn::kernels::{contiguous_slice, cpu_fused, num_traits_float::Float};
use crate::nn::Linear;

/// Parameters: `weight` `[out, k·in]` (tap-major: columns `j·in .. (j+1)·in` are tap j, offset
/// `(j − r)·d`) and `bias` `[out]`.
#[derive(Debug, Clone)]
pub struct DilatedConv1d {
    linear: Linear,
    kernel: usize,
    dilation: usize,
}

impl DilatedConv1d {
    /// `kernel` must be odd (a centred window).
    pub fn new(
        in_dim: usize,
        out_dim: usize,
        kernel: usize,
        dilation: usize,
        vb: VarBuilder,
    ) -> Result<Self> {
        if kernel.is_multiple_of(2) || dilation == 0 {
            candle_core::bail!("a centred convolution needs an odd kernel and a positive dilation (kernel {kernel}, dilation {dilation})");
        }
        Ok(Self {
            linear: Linear::new(kernel * in_dim, out_dim, vb)?,
            kernel,
            dilation,
        })
    }

    /// `x` `[B, L, in]` → `[B, L, out]`. Positions outside `0..L` read as zero, so a row's
    /// padding must already be zero for the output at real positions not to depend on it.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.linear
            .forward(&shift_window(x, self.kernel, self.dilation)?)
    }
}

/// `[B, L, C]` → `[B, L, k·C]`: position t holds `x[t + (j − r)·d]` (zero outside the row) in
/// columns `j·C .. (j + 1)·C`, r = (k − 1)/2. On the CPU one fused op each way (the backward
/// adds each tap's gradient back at its source, rows in parallel); elsewhere
/// [`shift_window_primitive`].
pub fn shift_window(x: &Tensor, kernel: usize, dilation: usize) -> Result<Tensor> {
    if cpu_fused(x) {
        x.contiguous()?.apply_op1(ShiftWindow {
            kernel,
            dilation,
            backward: false,
        })
    } else {
        shift_window_primitive(x, kernel, dilation)
    }
}

/// The same window from pad, narrow and concatenation (other devices; the reference in tests).
pub fn shift_window_primitive(x: &Tensor, kernel: usize, dilation: usize) -> Result<Tensor> {
    let (_, l, _) = x.dims3()?;
    // Taps that reach past the row read only zeros: pad by at most the row length.
    let pad = ((kernel / 2) * dilation).min(l);
    let padded = x.pad_with_zeros(1, pad, pad)?;
    let taps = (0..kernel)
        .map(|j| match tap_offset(j, kernel, dilation) {
            o if o.unsigned_abs() >= l => x.zeros_like(),
            o => padded.narrow(1, (pad as isize + o) as usize, l),
        })
        .collect::<Result<Vec<_>>>()?;
    Tensor::cat(&taps, 2)
}

/// The offset of tap `j`: `(j − r)·d`.
fn tap_offset(j: usize, kernel: usize, dilation: usize) -> isize {
    (j as isize - (kernel / 2) as isize) * dilation as isize
}

/// Forward: gather the taps of every position. Backward (the same struct with `backward`):
/// scatter each tap's gradient back to the position it read.
struct ShiftWindow {
    kernel: usize,
    dilation: usize,
    backward: bool,
}

impl ShiftWindow {
    /// Forward: `x` rows `[L, C]` → `[L, k·C]`; backward: `g` rows `[L, k·C]` → `[L, C]`.
    fn run<T: Float>(&self, src: &[T], b: usize, l: usize, c: usize) -> Vec<T> {
        let k = self.kernel;
        let (in_row, out_row) = if self.backward {
            (l * k * c, l * c)
        } else {
            (l * c, l * k * c)
        };
        let mut out = vec![T::zero(); b * out_row];
        out.par_chunks_mut(out_row)
            .zip(src.par_chunks(in_row))
            .for_each(|(o, x)| {
                for t in 0..l {
                    for j in 0..k {
                        let s = t as isize + tap_offset(j, k, self.dilation);
                        if s < 0 || s >= l as isize {
                            continue;
                        }
                        let s = s as usize;
                        let wide = (t * k + j) * c;
                        if self.backward {
                            let dst = &mut o[s * c..(s + 1) * c];
                            for (d, &g) in dst.iter_mut().zip(&x[wide..wide + c]) {
                                *d = *d + g;
                            }
                        } else {
                            o[wide..wide + c].copy_from_slice(&x[s * c..(s + 1) * c]);
                        }
                    }
                }
            });
        out
    }
}

impl candle_core::CustomOp1 for ShiftWindow {
    fn name(&self) -> &'static str {
        if self.backward {
            "luminome-shift-window-backward"
        } else {
            "luminome-shift-window"
        }
    }

    fn cpu_fwd(&self, s: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        let (b, l, w) = layout.shape().dims3()?;
        let k = self.kernel;
        let (c, shape) = if self.backward {
            (w / k, Shape::from((b, l, w / k)))
        } else {
            (w, Shape::from((b, l, w * k)))
        };
        let storage = match s {
            CpuStorage::F32(v) => {
                CpuStorage::F32(self.run(contiguous_slice(v, layout, "shift window")?, b, l, c))
            }
            CpuStorage::F64(v) => {
                CpuStorage::F64(self.run(contiguous_slice(v, layout, "shift window")?, b, l, c))
            }
            _ => candle_core::bail!("shift window: f32 or f64 only"),
        };
        Ok((storage, shape))
    }

    fn bwd(&self, _x: &Tensor, _y: &Tensor, g: &Tensor) -> Result<Option<Tensor>> {
        if self.backward {
            // Only the forward window is ever differentiated.
            return Ok(None);
        }
        Ok(Some(g.contiguous()?.apply_op1(ShiftWindow {
            kernel: self.kernel,
            dilation: self.dilation,
            backward: true,
        })?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{DType, Device};
    use candle_nn::VarMap;

    /// The same convolution as candle's conv1d (channels-first, weight `[out, in, k]`), which
    /// is the reference; and the gradient against finite differences.
    #[test]
    fn matches_conv1d_and_its_gradient() {
        for d in [1, 2, 8, 16] {
            check_dilation(d);
        }
    }

    fn max_abs_diff(a: &Tensor, b: &Tensor) -> f64 {
        (a - b)
            .and_then(|d| d.abs()?.max_all()?.to_scalar::<f64>())
            .unwrap()
    }

    fn check_dilation(d: usize) {
        let dev = Device::Cpu;
        let (b, l, cin, cout, k) = (2, 9, 3, 4, 3);
        let vm = VarMap::new();
        let vb = VarBuilder::from_varmap(&vm, DType::F64, &dev);
        let conv = DilatedConv1d::new(cin, cout, k, d, vb).unwrap();
        let x = Tensor::randn(0f64, 1.0, (b, l, cin), &dev).unwrap();
        let y = conv.forward(&x).unwrap();
        // weight [out, k·in] → [out, k, in] → [out, in, k]
        let w = conv
            .linear
            .weight()
            .reshape((cout, k, cin))
            .unwrap()
            .transpose(1, 2)
            .unwrap()
            .contiguous()
            .unwrap();
        let reference = x
            .transpose(1, 2)
            .unwrap()
            .contiguous()
            .unwrap()
            .conv1d(&w, (k / 2) * d, 1, d, 1)
            .unwrap()
            .transpose(1, 2)
            .unwrap()
            .broadcast_add(conv.linear.bias().unwrap())
            .unwrap();
        let diff = max_abs_diff(&y, &reference);
        assert!(diff < 1e-12, "dilation {d}: {diff}");
        let err =
            crate::nn::gradcheck::max_grad_error(&x, 1e-5, &|x| conv.forward(x)?.sqr()?.sum_all())
                .unwrap();
        assert!(err < 1e-6, "dilation {d}: {err}");
        // The fused window equals the one from candle primitives.
        let fused = shift_window(&x, k, d).unwrap();
        let plain = shift_window_primitive(&x, k, d).unwrap();
        assert_eq!(max_abs_diff(&fused, &plain), 0.0, "dilation {d}");
        let err = crate::nn::gradcheck::max_grad_error(&x, 1e-5, &|x| {
            shift_window(x, 5, d)?.sqr()?.sum_all()
        })
        .unwrap();
        assert!(err < 1e-6, "dilation {d}, kernel 5: {err}");
    }
}
