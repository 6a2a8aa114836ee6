//! Seeded dropout.

use std::sync::Arc;

use candle_core::{CpuStorage, DType, Layout, Result, Shape, Tensor};

use rayon::prelude::*;

use super::kernels::{contiguous_slice, f32_operands, written_by};

/// Dropout whose masks come from a seeded RNG, so a seed fixes every mask (candle's own dropout
/// draws from an unseedable generator).
pub struct DropoutRng {
    rng: std::cell::RefCell<rand_chacha::ChaCha8Rng>,
}

impl DropoutRng {
    pub fn new(seed: u64) -> Self {
        use rand::SeedableRng;
        Self {
            rng: std::cell::RefCell::new(rand_chacha::ChaCha8Rng::seed_from_u64(seed)),
        }
    }

    /// The keep-mask of `n` elements: 1 / (1 − p) where kept, 0 where dropped — the definition
    /// the fused ops and other devices' path are tested against.
    #[cfg(test)]
    pub(crate) fn mask(&self, n: usize, p: f64) -> Vec<f32> {
        use rand::Rng;
        let scale = (1.0 / (1.0 - p)) as f32;
        let threshold = (p * u32::MAX as f64) as u32;
        // One bulk fill: the same words, in the same order, as one draw per element (the
        // generator hands out its block buffer word by word either way).
        let mut words = vec![0u32; n];
        self.rng.borrow_mut().fill(&mut words[..]);
        words
            .iter()
            .map(|&r| if r >= threshold { scale } else { 0.0 })
            .collect()
    }

    /// The next `n` words of the stream, for a caller that draws them itself in pieces (in
    /// parallel, or where they are used, instead of one mask in memory): each piece comes from a
    /// copy of the generator seeked to its first word, so element i gets the word, and the
    /// decision, that one bulk draw (`DropoutRng::mask`, the tests' reference) would give it.
    /// The generator moves past all `n`.
    pub(crate) fn reserve(&self, n: usize, p: f64) -> KeepWords {
        let mut rng = self.rng.borrow_mut();
        let start = rng.get_word_pos();
        rng.set_word_pos(start + n as u128);
        KeepWords {
            rng: rng.clone(),
            start,
            threshold: (p * u32::MAX as f64) as u32,
            scale: (1.0 / (1.0 - p)) as f32,
        }
    }

    /// Zeroes each element with probability `p` and scales the rest by 1 / (1 − p).
    pub fn dropout(&self, x: &Tensor, p: f64) -> Result<Tensor> {
        if p <= 0.0 {
            return Ok(x.clone());
        }
        if fused_f32(x) {
            let keep = self.reserve(x.elem_count(), p);
            x.contiguous()?.apply_op1(DrawnDropout::new(keep))
        } else {
            // Other devices (CUDA, Metal): the same decisions, drawn on the host in parallel
            // pieces and sent a byte per element (a quarter of an f32 mask); the scale is applied
            // there. The first GPU run drew an f32 mask on one host thread: at the large
            // benchmark size that was most of a training step.
            let keep = self.reserve(x.elem_count(), p);
            let kept = keep.decisions(x.elem_count());
            let mask = Tensor::from_vec(kept, x.shape(), x.device())?
                .to_dtype(x.dtype())?
                .affine(f64::from(keep.scale), 0.0)?;
            x.mul(&mask)
        }
    }

    /// `x + dropout(h)`: the residual connection of a transformer block, one op each way on
    /// the CPU.
    pub fn residual_dropout(&self, x: &Tensor, h: &Tensor, p: f64) -> Result<Tensor> {
        if p <= 0.0 {
            return residual_sum(x, h);
        }
        if fused_f32(x) && fused_f32(h) && x.shape() == h.shape() {
            let keep = self.reserve(h.elem_count(), p);
            x.contiguous()?
                .apply_op2(&h.contiguous()?, DrawnDropout::new(keep))
        } else {
            x + self.dropout(h, p)?
        }
    }
}

/// Words of the dropout stream reserved by [`DropoutRng::reserve`].
#[derive(Clone)]
pub(crate) struct KeepWords {
    rng: rand_chacha::ChaCha8Rng,
    start: u128,
    /// A word at or above it keeps its element.
    pub threshold: u32,
    /// 1 / (1 − p): what a kept element is multiplied by.
    pub scale: f32,
}

impl KeepWords {
    /// Words `offset..offset + out.len()` of the reservation into `out`.
    pub fn draw(&self, offset: usize, out: &mut [u32]) {
        use rand::Rng;
        let mut rng = self.rng.clone();
        rng.set_word_pos(self.start + offset as u128);
        rng.fill(out);
    }

    /// The decisions of the first `n` reserved words, a byte each (1 = kept), drawn in parallel
    /// pieces: the same as `DropoutRng::mask`'s non-zero elements.
    pub(crate) fn decisions(&self, n: usize) -> Vec<u8> {
        let mut kept = vec![0u8; n];
        kept.par_chunks_mut(PIECE)
            .enumerate()
            .for_each(|(i, piece)| {
                let mut words = vec![0u32; piece.len()];
                self.draw(i * PIECE, &mut words);
                for (k, &w) in piece.iter_mut().zip(&words) {
                    *k = u8::from(w >= self.threshold);
                }
            });
        kept
    }
}

/// Whether the fused dropout ops run: f32 on the CPU (not with the fallbacks forced).
fn fused_f32(x: &Tensor) -> bool {
    super::kernels::cpu_fast_path(x.device()) && x.dtype() == DType::F32
}

// Why fused: `x.mul(&mask)` makes the mask a tensor in the graph, and candle's backward of a
// product computes the gradient of both factors — of the mask too (a product, a zero-filled
// buffer and a sum, each the size of the activation, all thrown away) — and the residual sum
// adds two more full passes. These ops draw their mask themselves and keep its decisions; their
// outputs and gradients are the same floating-point products and sums, in the same order, so
// every bit is as before (tests below compare against the unfused graph).
//
// The words are drawn piece by piece where they are used, the pieces in parallel (each from
// the stream seeked to its first word: the same words as one bulk fill), and the decisions
// kept, a byte each, for the backward pass: no f32 mask the size of the activation is written
// and read back, and the generator — serial on the calling thread before — runs on every thread.

/// Elements per parallel piece.
const PIECE: usize = 1 << 14;

/// One piece's random words and mask values, kept for the life of the thread.
#[derive(Default)]
struct PieceScratch {
    words: Vec<u32>,
    mask: Vec<f32>,
}

thread_local! {
    static PIECE_SCRATCH: std::cell::RefCell<PieceScratch> =
        std::cell::RefCell::new(PieceScratch::default());
}

/// The decisions of one dropout, a byte per element (1 = kept): a quarter of the f32 mask's
/// memory, and unlike bits both ways vectorise.
#[derive(Clone)]
struct Kept {
    bytes: Arc<Vec<u8>>,
    scale: f32,
}

/// The element loops, each a function of its slices (so the compiler knows they do not
/// overlap) with AVX-512 and AVX2 clones chosen at run time: mask values from words or kept
/// decisions, and the products. No fused multiply-add: every clone gives the same bits.
// multiversion's dispatcher calls a clone only after detecting its features at run time; the
// unsafe it generates is that call.
#[allow(unsafe_code)]
pub(crate) mod loops {
    #[multiversion::multiversion(targets(
        "x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl+avx2+fma",
        "x86_64+avx2+fma"
    ))]
    pub(crate) fn decide(
        words: &[u32],
        threshold: u32,
        scale: f32,
        kept: &mut [u8],
        mask: &mut [f32],
    ) {
        for ((m, k), &w) in mask.iter_mut().zip(kept.iter_mut()).zip(words) {
            let keep = w >= threshold;
            *k = u8::from(keep);
            *m = if keep { scale } else { 0.0 };
        }
    }

    #[multiversion::multiversion(targets(
        "x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl+avx2+fma",
        "x86_64+avx2+fma"
    ))]
    pub(crate) fn mask_of(kept: &[u8], scale: f32, mask: &mut [f32]) {
        for (m, &k) in mask.iter_mut().zip(kept) {
            *m = if k != 0 { scale } else { 0.0 };
        }
    }

    /// o = x ⊙ m.
    #[multiversion::multiversion(targets(
        "x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl+avx2+fma",
        "x86_64+avx2+fma"
    ))]
    pub(crate) fn product(x: &[f32], m: &[f32], o: &mut [f32]) {
        for ((o, &x), &m) in o.iter_mut().zip(x).zip(m) {
            *o = x * m;
        }
    }

    /// o = x + h.
    #[multiversion::multiversion(targets(
        "x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl+avx2+fma",
        "x86_64+avx2+fma"
    ))]
    pub(crate) fn sum(x: &[f32], h: &[f32], o: &mut [f32]) {
        for ((o, &x), &h) in o.iter_mut().zip(x).zip(h) {
            *o = x + h;
        }
    }

    /// o = x + h ⊙ m.
    #[multiversion::multiversion(targets(
        "x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl+avx2+fma",
        "x86_64+avx2+fma"
    ))]
    pub(crate) fn residual(x: &[f32], h: &[f32], m: &[f32], o: &mut [f32]) {
        for (((o, &x), &h), &m) in o.iter_mut().zip(x).zip(h).zip(m) {
            *o = x + h * m;
        }
    }
}

/// Where a piece's mask values come from.
enum Decisions<'a> {
    /// Drawn from the reserved words, the decisions written into the bytes (1 = kept).
    Draw(&'a KeepWords, &'a mut [u8]),
    /// Read from decisions kept by a forward pass, with 1/(1 − p).
    Kept(&'a [u8], f32),
}

/// `f(range, m, out)` for each piece of `out`, in parallel, `m` the piece's mask values
/// (1/(1 − p) or 0).
fn by_pieces(
    decisions: Decisions,
    out: &mut [f32],
    f: impl Fn(std::ops::Range<usize>, &[f32], &mut [f32]) + Sync,
) {
    // The piece's mask values (and words) in the thread's scratch, filled by `fill`, then `f`.
    let piece = |c: usize, o: &mut [f32], fill: &mut dyn FnMut(&mut [f32], &mut [u32])| {
        PIECE_SCRATCH.with_borrow_mut(|sc| {
            let n = o.len();
            if sc.mask.len() < n {
                sc.mask.resize(n, 0.0);
                sc.words.resize(n, 0);
            }
            fill(&mut sc.mask[..n], &mut sc.words[..n]);
            f(c * PIECE..c * PIECE + n, &sc.mask[..n], o);
        })
    };
    match decisions {
        Decisions::Draw(keep, kept) => out
            .par_chunks_mut(PIECE)
            .zip(kept.par_chunks_mut(PIECE))
            .enumerate()
            .for_each(|(c, (o, kept))| {
                piece(c, o, &mut |mask, words| {
                    keep.draw(c * PIECE, words);
                    loops::decide(words, keep.threshold, keep.scale, kept, mask);
                })
            }),
        Decisions::Kept(kept, scale) => out.par_chunks_mut(PIECE).enumerate().for_each(|(c, o)| {
            piece(c, o, &mut |mask, _| {
                let n = mask.len();
                loops::mask_of(&kept[c * PIECE..][..n], scale, mask);
            })
        }),
    }
}

/// Dropout whose mask is drawn when the op runs: `x ⊙ m` (one input) or `x + h ⊙ m` (two:
/// the residual connection), m_i = 1/(1 − p) or 0; gradients `g ⊙ m`, and `g` for `x`.
struct DrawnDropout {
    keep: KeepWords,
    kept: std::sync::Mutex<Option<Kept>>,
}

impl DrawnDropout {
    fn new(keep: KeepWords) -> Self {
        Self {
            keep,
            kept: std::sync::Mutex::new(None),
        }
    }

    fn run(
        &self,
        n: usize,
        f: impl Fn(std::ops::Range<usize>, &[f32], &mut [f32]) + Sync,
    ) -> Result<Vec<f32>> {
        let mut kept = vec![0u8; n];
        let scale = self.keep.scale;
        let out = written_by(n, |o: &mut [f32]| {
            by_pieces(Decisions::Draw(&self.keep, &mut kept), o, f)
        });
        *self.locked()? = Some(Kept {
            bytes: Arc::new(kept),
            scale,
        });
        Ok(out)
    }

    fn locked(&self) -> Result<std::sync::MutexGuard<'_, Option<Kept>>> {
        self.kept
            .lock()
            .map_err(|_| candle_core::Error::Msg("dropout: a thread panicked".into()))
    }

    /// `g ⊙ m` from the kept decisions.
    fn masked_gradient(&self, g: &Tensor) -> Result<Tensor> {
        let Some(kept) = self.locked()?.clone() else {
            candle_core::bail!("dropout: backward pass before the forward pass")
        };
        g.contiguous()?.apply_op1_no_bwd(&KeptMul(kept))
    }
}

impl candle_core::CustomOp1 for DrawnDropout {
    fn name(&self) -> &'static str {
        "luminome-dropout"
    }

    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> Result<(CpuStorage, Shape)> {
        let CpuStorage::F32(x) = s else {
            candle_core::bail!("dropout: f32 only")
        };
        let x = contiguous_slice(x, l, "dropout")?;
        let y = self.run(x.len(), |r, m, o| loops::product(&x[r], m, o))?;
        Ok((CpuStorage::F32(y), l.shape().clone()))
    }

    fn bwd(&self, _x: &Tensor, _y: &Tensor, g: &Tensor) -> Result<Option<Tensor>> {
        Ok(Some(self.masked_gradient(g)?))
    }
}

impl candle_core::CustomOp2 for DrawnDropout {
    fn name(&self) -> &'static str {
        "luminome-residual-dropout"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let (x, h) = f32_operands((s1, l1), (s2, l2), "residual dropout")?;
        let y = self.run(x.len(), |r, m, o| {
            loops::residual(&x[r.clone()], &h[r], m, o)
        })?;
        Ok((CpuStorage::F32(y), l1.shape().clone()))
    }

    fn bwd(
        &self,
        _x: &Tensor,
        _h: &Tensor,
        _y: &Tensor,
        g: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>)> {
        Ok((Some(g.clone()), Some(self.masked_gradient(g)?)))
    }
}

/// `g ⊙ m` from kept decisions.
struct KeptMul(Kept);

impl candle_core::CustomOp1 for KeptMul {
    fn name(&self) -> &'static str {
        "luminome-dropout-backward"
    }

    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> Result<(CpuStorage, Shape)> {
        let CpuStorage::F32(g) = s else {
            candle_core::bail!("dropout backward: f32 only")
        };
        let g = contiguous_slice(g, l, "dropout backward")?;
        if self.0.bytes.len() != g.len() {
            candle_core::bail!("dropout backward: the mask does not fit the gradient")
        }
        let y = written_by(g.len(), |o: &mut [f32]| {
            by_pieces(
                Decisions::Kept(&self.0.bytes, self.0.scale),
                o,
                |r, m, o| loops::product(&g[r], m, o),
            )
        });
        Ok((CpuStorage::F32(y), l.shape().clone()))
    }
}

/// `x + h` of two tensors of one shape: on the CPU (f32) one vectorised op whose blocks run on
/// the rayon threads (candle's add runs on the calling thread alone: its own pool is off,
/// `luminome_cli::candle_elementwise_on_caller`), gradient `g` to both; elsewhere candle's add.
/// The same sums.
pub fn residual_sum(x: &Tensor, h: &Tensor) -> Result<Tensor> {
    if fused_f32(x) && fused_f32(h) && x.shape() == h.shape() {
        x.contiguous()?.apply_op2(&h.contiguous()?, ResidualSum)
    } else {
        x + h
    }
}

struct ResidualSum;

impl candle_core::CustomOp2 for ResidualSum {
    fn name(&self) -> &'static str {
        "luminome-residual-sum"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let (x, h) = f32_operands((s1, l1), (s2, l2), "residual sum")?;
        let y = written_by(x.len(), |o: &mut [f32]| {
            o.par_chunks_mut(PIECE)
                .zip(x.par_chunks(PIECE).zip(h.par_chunks(PIECE)))
                .for_each(|(o, (x, h))| loops::sum(x, h, o))
        });
        Ok((CpuStorage::F32(y), l1.shape().clone()))
    }

    fn bwd(
        &self,
        x: &Tensor,
        h: &Tensor,
        _y: &Tensor,
        g: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>)> {
        Ok((
            x.track_op().then(|| g.clone()),
            h.track_op().then(|| g.clone()),
        ))
    }
}

/// Applies dropout when training (an RNG is given), passes through otherwise.
pub fn maybe_dropout(x: &Tensor, p: f64, rng: Option<&DropoutRng>) -> Result<Tensor> {
    match rng {
        Some(r) => r.dropout(x, p),
        None => Ok(x.clone()),
    }
}

/// `x + maybe_dropout(h)`: a residual connection with dropout when training.
pub fn residual_dropout(
    x: &Tensor,
    h: &Tensor,
    p: f64,
    rng: Option<&DropoutRng>,
) -> Result<Tensor> {
    match rng {
        Some(r) => r.residual_dropout(x, h, p),
        None => residual_sum(x, h),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{DType, Device};

    #[test]
    fn bulk_masks_are_the_masks_of_one_draw_per_element() {
        // The masks every earlier checkpoint was trained with: element i kept when the i-th
        // u32 drawn from ChaCha8(seed) is at least p × u32::MAX. Two calls, to cover the
        // generator's state carrying over (and a length that is not a multiple of its block).
        use rand::{Rng, SeedableRng};
        let p = 0.1;
        let threshold = (p * u32::MAX as f64) as u32;
        let mut reference = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let d = DropoutRng::new(11);
        // 40,001: three parallel pieces, the last one shorter.
        for n in [1000usize, 77, 40_001] {
            let x = Tensor::ones(n, DType::F32, &Device::Cpu).unwrap();
            let got: Vec<f32> = d.dropout(&x, p).unwrap().to_vec1().unwrap();
            for (i, g) in got.iter().enumerate() {
                let kept = reference.random::<u32>() >= threshold;
                assert_eq!(*g > 0.0, kept, "n {n}, element {i}");
            }
        }
    }

    #[test]
    fn other_devices_draw_the_same_masks() {
        // The path CUDA and Metal take (on the CPU through f64, which the fused ops leave to
        // it): decisions drawn in parallel pieces on the host, sent as bytes, scaled on the
        // device — the same values as the one-draw-per-element mask, call after call.
        let p = 0.3;
        let (d, reference) = (DropoutRng::new(13), DropoutRng::new(13));
        for n in [40_001usize, 77, 16_384] {
            let x = Tensor::ones(n, DType::F64, &Device::Cpu).unwrap();
            let got: Vec<f64> = d.dropout(&x, p).unwrap().to_vec1().unwrap();
            let want: Vec<f64> = reference.mask(n, p).into_iter().map(f64::from).collect();
            assert_eq!(got, want, "n {n}");
        }
    }

    #[test]
    fn seeded_dropout_is_reproducible_and_scales() {
        let x = Tensor::ones((64, 64), DType::F32, &Device::Cpu).unwrap();
        let a: Vec<f32> = DropoutRng::new(5)
            .dropout(&x, 0.25)
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1()
            .unwrap();
        let b: Vec<f32> = DropoutRng::new(5)
            .dropout(&x, 0.25)
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1()
            .unwrap();
        assert_eq!(a, b);
        let kept = a.iter().filter(|&&v| v > 0.0).count() as f64 / a.len() as f64;
        assert!((kept - 0.75).abs() < 0.03, "{kept}");
        assert!(a.iter().all(|&v| v == 0.0 || (v - 1.0 / 0.75).abs() < 1e-6));
    }

    #[test]
    fn fused_dropout_ops_are_bit_identical_to_the_mask_product_graph() {
        use crate::nn::kernels::test_support::{randn, value_and_grad_bits as bits};
        // 42,042 elements: three parallel pieces, the last not a multiple of 64.
        let shape = [6, 7, 1001];
        let f32s = |t: Tensor| t.to_dtype(DType::F32).unwrap();
        let x = candle_core::Var::from_tensor(&f32s(randn(&shape, 1))).unwrap();
        let h = candle_core::Var::from_tensor(&f32s(randn(&shape, 2))).unwrap();
        let w = f32s(randn(&shape, 3));
        let p = 0.3;
        let n: usize = shape.iter().product();
        let mask = Tensor::from_vec(DropoutRng::new(9).mask(n, p), &shape, &Device::Cpu).unwrap();

        let fused = DropoutRng::new(9).dropout(h.as_tensor(), p).unwrap();
        let graph = h.as_tensor().mul(&mask).unwrap();
        assert_eq!(bits(&fused, &w, &[&h]), bits(&graph, &w, &[&h]));

        let fused = DropoutRng::new(9)
            .residual_dropout(x.as_tensor(), h.as_tensor(), p)
            .unwrap();
        let graph = (x.as_tensor() + h.as_tensor().mul(&mask).unwrap()).unwrap();
        let (a, b) = (bits(&fused, &w, &[&x, &h]), bits(&graph, &w, &[&x, &h]));
        assert_eq!(a.len(), 3 * n);
        assert_eq!(a, b);
        // Some elements were dropped, some kept.
        let m: Vec<f32> = mask.flatten_all().unwrap().to_vec1().unwrap();
        assert!(m.contains(&0.0) && m.iter().any(|&v| v > 1.0));
    }

    #[test]
    fn the_residual_sum_is_candles_add_bit_for_bit_with_its_gradients() {
        use crate::nn::kernels::test_support::{randn, value_and_grad_bits as bits};
        let shape = [6, 7, 1001];
        let f32s = |t: Tensor| t.to_dtype(DType::F32).unwrap();
        let x = candle_core::Var::from_tensor(&f32s(randn(&shape, 1))).unwrap();
        let h = candle_core::Var::from_tensor(&f32s(randn(&shape, 2))).unwrap();
        let w = f32s(randn(&shape, 3));
        let ours = residual_sum(x.as_tensor(), h.as_tensor()).unwrap();
        let candles = (x.as_tensor() + h.as_tensor()).unwrap();
        assert_eq!(bits(&ours, &w, &[&x, &h]), bits(&candles, &w, &[&x, &h]));
        // An input outside the graph gets no gradient; the other still does.
        let plain = f32s(randn(&shape, 4));
        let y = residual_sum(&plain, h.as_tensor()).unwrap();
        let g = (&y * &w).unwrap().sum_all().unwrap().backward().unwrap();
        assert!(g.get(&plain).is_none() && g.get(h.as_tensor()).is_some());
    }
}
