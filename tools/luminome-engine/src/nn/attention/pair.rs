//! What one (batch, head) task works with: matrices as views into the buffers, the
//! single-threaded gemm call, the queries scaled, and the thread-kept scratch.

use super::Heads;

/// Bytes per element.
pub(super) const F32: usize = std::mem::size_of::<f32>();

/// A matrix inside a buffer: its first element's address and its row and column strides.
#[derive(Clone, Copy)]
pub(super) struct View {
    pub(super) addr: usize,
    pub(super) rs: usize,
    pub(super) cs: usize,
}

impl View {
    pub(super) fn of(s: &[f32], offset: usize, rs: usize, cs: usize) -> Self {
        Self {
            addr: s.as_ptr() as usize + offset * F32,
            rs,
            cs,
        }
    }

    /// A destination: its address taken from a mutable borrow.
    pub(super) fn of_mut(s: &mut [f32], rs: usize, cs: usize) -> Self {
        Self {
            addr: s.as_mut_ptr() as usize,
            rs,
            cs,
        }
    }

    pub(super) fn transposed(self) -> Self {
        Self {
            rs: self.cs,
            cs: self.rs,
            ..self
        }
    }
}

/// `dst` (m × n) = `lhs` (m × k) · `rhs` (k × n), one single-threaded gemm call, `dst` written
/// (not read): the call `nn::matmul::products` makes for one batch element.
///
/// SAFETY (the callers'): every view lies inside a live buffer of f32 for the extents given,
/// and no other thread reads or writes `dst`'s elements during the call.
#[allow(unsafe_code)]
pub(super) unsafe fn gemm_into(m: usize, n: usize, k: usize, dst: View, lhs: View, rhs: View) {
    gemm::gemm(
        m,
        n,
        k,
        dst.addr as *mut f32,
        dst.cs as isize,
        dst.rs as isize,
        false,
        lhs.addr as *const f32,
        lhs.cs as isize,
        lhs.rs as isize,
        rhs.addr as *const f32,
        rhs.cs as isize,
        rhs.rs as isize,
        0.0,
        1.0,
        false,
        false,
        false,
        gemm::Parallelism::None,
    )
}

/// Writes the `len` × `head_dim` queries of one head, scaled as candle's affine op computes
/// `q * scale` (`x · scale + 0`), into `dst`.
pub(super) fn scaled_queries(x: &[f32], s: Heads, b: usize, h: usize, scale: f32, dst: &mut [f32]) {
    let (dh, row) = (s.head_dim, 3 * s.d());
    let base = s.qkv_offset(b, h);
    for (i, out) in dst.chunks_exact_mut(dh).take(s.len).enumerate() {
        for (o, &v) in out.iter_mut().zip(&x[base + i * row..][..dh]) {
            *o = v * scale + 0.0;
        }
    }
}

/// A thread's working buffers, kept for the life of the thread (rayon's threads live as long
/// as the process): allocating them per call had every call fault fresh, kernel-zeroed pages in
/// (a quarter of the op's time at L 512). At L 512 they hold 3 MB per thread.
#[derive(Default)]
pub(super) struct Scratch {
    a: Vec<f32>,
    b: Vec<f32>,
    c: Vec<f32>,
    q: Vec<f32>,
    m: Vec<f32>,
    w: Vec<u32>,
    k: Vec<u8>,
}

thread_local! {
    pub(super) static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch::default());
}

/// One pair's buffers: `a`, `b`, `c` L × L (scores or probabilities, dropped probabilities,
/// their gradients), `q` L × Dh (scaled queries). Their contents are
/// whatever an earlier pair left: every use writes before it reads.
pub(super) struct Buffers<'a> {
    pub(super) a: &'a mut [f32],
    pub(super) b: &'a mut [f32],
    pub(super) c: &'a mut [f32],
    pub(super) q: &'a mut [f32],
    /// L × L dropout mask values (1/(1 − p) or 0).
    pub(super) m: &'a mut [f32],
    /// L × L dropout words and decisions (a dropping forward pass).
    pub(super) w: &'a mut [u32],
    pub(super) k: &'a mut [u8],
}

impl Scratch {
    /// `dropout`: a forward pass that drops probabilities; `backward`: the backward pass.
    pub(super) fn buffers(&mut self, s: Heads, dropout: bool, backward: bool) -> Buffers<'_> {
        fn fit<T: Copy + Default>(v: &mut Vec<T>, n: usize) -> &mut [T] {
            if v.len() < n {
                v.resize(n, T::default());
            }
            &mut v[..n]
        }
        let (ll, ld) = (s.len * s.len, s.len * s.head_dim);
        let when = |n: usize, needed: bool| if needed { n } else { 0 };
        Buffers {
            a: fit(&mut self.a, ll),
            b: fit(&mut self.b, when(ll, dropout || backward)),
            c: fit(&mut self.c, when(ll, backward)),
            q: fit(&mut self.q, ld),
            m: fit(&mut self.m, when(ll, dropout)),
            w: fit(&mut self.w, when(ll, dropout && !backward)),
            k: fit(&mut self.k, when(ll, dropout && !backward)),
        }
    }
}
