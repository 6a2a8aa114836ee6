//! The generic backward pass of the selective scan over a block of channels: the states
//! recomputed chunk by chunk, then the adjoints carried back from the last position, with the
//! scratch memory and the outputs they write (the AVX-512 kernels, `avx512.rs`, do the same
//! operations in the same order).

use super::{
    chunk_inputs, lane_sum, lanes_at, position_ahead, prefetch, state_step, store_lanes,
    ChunkParams, Dims, Float, Inputs, Lanes, LANES,
};

/// Where a block writes its dx and dΔ, every value of its channels at every position: rows of
/// `stride` values, one per position, its first channel at column `col` — a block's own `[L, w]`
/// (`stride` w, `col` 0), or its batch row of the op's `[B, L, E]` output (`stride` E, `col` e0),
/// which saves a copy of both (`scan_backward`).
pub(in crate::nn::scan) struct ChannelRows<'a, T> {
    pub(in crate::nn::scan) dx: &'a mut [T],
    pub(in crate::nn::scan) ddelta: &'a mut [T],
    pub(in crate::nn::scan) stride: usize,
    pub(in crate::nn::scan) col: usize,
}

/// What a chunk's backward pass writes: its block's gradients (`BlockGrads`), its dx and dΔ
/// rows, its scratch, and the chunk's column in the block (the generic and AVX-512
/// `backward_chunk`s alike).
pub(in crate::nn::scan) type ChunkTargets<'a, 'o, T> = (
    &'a mut BlockGrads<T>,
    &'a mut ChannelRows<'o, T>,
    &'a mut Scratch<T>,
    usize,
);

impl<T> ChannelRows<'_, T> {
    /// The index of position `t`, column `col` of the block.
    #[inline(always)]
    pub(in crate::nn::scan) fn at(&self, t: usize, col: usize) -> usize {
        t * self.stride + self.col + col
    }

    /// Panics unless every row has room for the block's `w` channels.
    pub(in crate::nn::scan) fn check(&self, l: usize, w: usize) {
        let need = (l.max(1) - 1) * self.stride + self.col + w;
        assert!(
            self.stride >= self.col + w && self.dx.len() >= need && self.ddelta.len() >= need,
            "scan kernel: dx/dΔ rows shorter than the block"
        );
    }
}

/// Gradients of one block besides dx and dΔ (written into [`ChannelRows`]): dB‖dC `[L, 2N]`
/// (this block's share), dA‖dD `[w, N+1]`.
pub(in crate::nn::scan) struct BlockGrads<T> {
    pub(in crate::nn::scan) dbc: Vec<T>,
    pub(in crate::nn::scan) dad: Vec<T>,
}

impl<T: Float> BlockGrads<T> {
    pub(super) fn zeros(dims: &Dims, w: usize) -> Self {
        let Dims { l, n, .. } = *dims;
        Self {
            dbc: vec![T::zero(); l * 2 * n],
            dad: vec![T::zero(); w * (n + 1)],
        }
    }

    /// dB‖dC from the block's lane sums.
    fn sum_dbc_lanes(&mut self, scratch: &Scratch<T>) {
        for (o, v) in self.dbc.iter_mut().zip(&scratch.dbc_lanes) {
            *o = lane_sum(v);
        }
    }
}

/// The backward pass's working memory, allocated once per parallel job and reused by every
/// block and chunk it runs (zero-filling it per block was most of the memset that took a tenth
/// of the scan's profile).
pub(in crate::nn::scan) struct Scratch<T> {
    /// A chunk's states h_t and decays exp(Δ_t A) at every step, `[step][state]` (recomputed:
    /// the forward keeps only the running state); every entry rewritten by each chunk. Only the
    /// generic kernels keep the decays (allocated on their first use): the AVX-512 kernels
    /// compute them again in the backward pass, which costs them less than the memory traffic
    /// (forward + backward 0.93x, Zen 5), where on the AVX2 path the exps cost more (1.12x).
    pub(super) hs: Vec<Lanes<T>>,
    pub(super) decays: Vec<Lanes<T>>,
    /// dB‖dC per step and state, still per lane: set by a block's first chunk, summed across
    /// its others lane by lane, and across lanes once at the end (a horizontal sum per state and
    /// step in the inner loop cost more than the rest of it).
    pub(super) dbc_lanes: Vec<Lanes<T>>,
}

impl<T: Float> Scratch<T> {
    pub(in crate::nn::scan) fn new(dims: &Dims) -> Self {
        let (l, n) = (dims.l, dims.n);
        Self {
            hs: vec![[T::zero(); LANES]; l * n],
            decays: Vec::new(),
            dbc_lanes: vec![[T::zero(); LANES]; l * 2 * n],
        }
    }
}

/// `acc` ← u·v for a block's first chunk, u·v + `acc` (fused) lane by lane after.
#[inline(always)]
fn accumulate_products<T: Float>(acc: &mut Lanes<T>, (u, v): (&Lanes<T>, &Lanes<T>), first: bool) {
    for k in 0..LANES {
        acc[k] = if first {
            u[k] * v[k]
        } else {
            u[k].mul_add(v[k], acc[k])
        };
    }
}

/// Fills `hs` and `decays` for one chunk, and adds dC's terms (which need h_t and dy_t only)
/// into `dbc_lanes` on the way (sets them, for the block's `first` chunk).
#[inline(always)]
fn recompute_states<T: Float>(
    dims: Dims,
    (row, c0, c1): (usize, usize, usize),
    inp: Inputs<T>,
    (p, first): (&ChunkParams<T>, bool),
    scratch: &mut Scratch<T>,
) {
    let Dims { l, n, .. } = dims;
    let Inputs {
        x, delta, dy, bc, ..
    } = inp;
    let Scratch {
        hs,
        decays,
        dbc_lanes,
    } = scratch;
    decays.resize(l * n, [T::zero(); LANES]);
    let mut h = vec![[T::zero(); LANES]; n];
    for step in 0..l {
        let t = dims.position(step);
        let (_, dr, dvx) = chunk_inputs(&dims, (row, t), (c0, c1), x, delta);
        let dyr = lanes_at(&dims, (row, t), (c0, c1), dy);
        let (bt, ct) = bc[(row * l + t) * 2 * n..][..2 * n].split_at(n);
        let dct = &mut dbc_lanes[t * 2 * n + n..][..n];
        // The forward's step with its output left unread (the compiler drops that work): a step
        // without the output, C·h added in a loop of its own, made the forward 10–15 % slower.
        let mut unused = [T::zero(); LANES];
        for j in 0..n {
            decays[step * n + j] = state_step(
                &mut h[j],
                &mut unused,
                (&dr, &p.a_log2e[j], &dvx),
                (bt[j], ct[j]),
            );
            hs[step * n + j] = h[j];
            accumulate_products(&mut dct[j], (&dyr, &h[j]), first);
        }
    }
}

/// One state's backward step at one position, every channel of the chunk: the adjoint dh_t,
/// and its shares of the sums it updates: the adjoint carried to t − 1 (`next`), dA, and the
/// position's Σ_n dh·B (which gives dx_t and dΔ_t's B·x part after the states) and
/// Σ_n dh·A·exp(Δ_t A)·h_{t−1} (dΔ_t's decay part); adds dB_t's terms into `db` (sets them, for
/// a block's `first` chunk). The caller passes local copies of the running sums: through
/// references into its vectors the compiler kept a scalar copy of the loop for overlapping
/// slices, and through a struct of them taken and returned by value it kept them on the stack
/// and read them back lane by lane (the AVX2 build, Zen 5). The AVX-512 kernel does these
/// operations in this order.
#[inline(always)]
fn adjoint_step<T: Float>(
    (next, da, dh_b, ddt): (&mut Lanes<T>, &mut Lanes<T>, &mut Lanes<T>, &mut Lanes<T>),
    (dyr, dr, dvx): (&Lanes<T>, &Lanes<T>, &Lanes<T>),
    (a, decay, h_prev): (&Lanes<T>, &Lanes<T>, &Lanes<T>),
    (b, c): (T, T),
    (db, first): (&mut Lanes<T>, bool),
) {
    for k in 0..LANES {
        let dh = dyr[k].mul_add(c, next[k]);
        next[k] = dh * decay[k];
        let g_prev = next[k] * h_prev[k];
        dh_b[k] = dh.mul_add(b, dh_b[k]);
        ddt[k] = g_prev.mul_add(a[k], ddt[k]);
        da[k] = g_prev.mul_add(dr[k], da[k]);
        db[k] = if first {
            dh * dvx[k]
        } else {
            dh.mul_add(dvx[k], db[k])
        };
    }
}

/// One chunk's running sums of the backward pass.
struct ChunkGrads<T> {
    /// dh_{t+1} · exp(Δ_{t+1} A) per state: the adjoint carried to the step before.
    next: Vec<Lanes<T>>,
    da: Vec<Lanes<T>>,
    dd: Lanes<T>,
}

/// The backward pass of the channels `c0..c1`, added into `g` and written into `out` (column
/// `col` of the block is channel c0).
#[inline(always)]
fn backward_chunk<T: Float>(
    dims: Dims,
    (row, c0, c1): (usize, usize, usize),
    inp: Inputs<T>,
    (g, out, scratch, col): ChunkTargets<T>,
) {
    let Dims { l, n, .. } = dims;
    let Inputs {
        x,
        delta,
        dy,
        bc,
        ad,
    } = inp;
    let cw = c1 - c0;
    let p = ChunkParams::of(ad, (c0, c1), n);
    let first = col == 0;
    recompute_states(dims, (row, c0, c1), inp, (&p, first), scratch);
    let Scratch {
        hs,
        decays,
        dbc_lanes,
    } = scratch;
    let zeros = vec![[T::zero(); LANES]; n];
    let mut run = ChunkGrads {
        next: vec![[T::zero(); LANES]; n],
        da: vec![[T::zero(); LANES]; n],
        dd: [T::zero(); LANES],
    };
    for step in (0..l).rev() {
        // The lines of dx and dΔ it will write: in a batch row of the op's new output they are
        // in no cache. Without this, forward + backward on the AVX2 path took 1.26x the time it
        // took with zero-filled block buffers copied afterwards; with it, 0.90x (Zen 5,
        // `LUMINOME_SCAN_AVX512=0`). The forward's output, written the same way, ran no faster
        // with it there (unlike the AVX-512 kernel's).
        if let Some(ahead) = position_ahead(&dims, step, false) {
            let at = out.at(ahead, col);
            prefetch(out.dx, (at, cw), true);
            prefetch(out.ddelta, (at, cw), true);
        }
        let t = dims.position(step);
        let (xr, dr, dvx) = chunk_inputs(&dims, (row, t), (c0, c1), x, delta);
        let dyr = lanes_at(&dims, (row, t), (c0, c1), dy);
        let bt = &bc[(row * l + t) * 2 * n..][..n];
        let ct = &bc[(row * l + t) * 2 * n + n..][..n];
        for k in 0..LANES {
            run.dd[k] = dyr[k].mul_add(xr[k], run.dd[k]);
        }
        let prev = if step > 0 {
            &hs[(step - 1) * n..step * n]
        } else {
            &zeros[..]
        };
        let db = &mut dbc_lanes[t * 2 * n..][..n];
        let mut dh_b = [T::zero(); LANES];
        let mut ddt = [T::zero(); LANES];
        for j in 0..n {
            let (mut next, mut da) = (run.next[j], run.da[j]);
            adjoint_step(
                (&mut next, &mut da, &mut dh_b, &mut ddt),
                (&dyr, &dr, &dvx),
                (&p.a[j], &decays[step * n + j], &prev[j]),
                (bt[j], ct[j]),
                (&mut db[j], first),
            );
            (run.next[j], run.da[j]) = (next, da);
        }
        // dΔ_t = Σ dh·A·exp(Δ_t A)·h_{t−1} + x_t·Σ dh·B;  dx_t = dy_t·D + Δ_t·Σ dh·B.
        let mut dxt = [T::zero(); LANES];
        for k in 0..LANES {
            ddt[k] = dh_b[k].mul_add(xr[k], ddt[k]);
            dxt[k] = dh_b[k].mul_add(dr[k], dyr[k] * p.d[k]);
        }
        let at = out.at(t, col);
        store_lanes(&mut out.dx[at..][..cw], &dxt);
        store_lanes(&mut out.ddelta[at..][..cw], &ddt);
    }
    for k in 0..cw {
        for j in 0..n {
            g.dad[(col + k) * (n + 1) + j] = run.da[j][k];
        }
        g.dad[(col + k) * (n + 1) + n] = run.dd[k];
    }
}

#[inline(always)]
pub(super) fn backward_block<T: Float>(
    dims: Dims,
    (row, e0, e1): (usize, usize, usize),
    inp: Inputs<T>,
    scratch: &mut Scratch<T>,
    mut out: ChannelRows<T>,
) -> BlockGrads<T> {
    let w = e1 - e0;
    out.check(dims.l, w);
    let mut g = BlockGrads::zeros(&dims, w);
    for c0 in (e0..e1).step_by(LANES) {
        let c1 = (c0 + LANES).min(e1);
        let at = (&mut g, &mut out, &mut *scratch, c0 - e0);
        backward_chunk(dims, (row, c0, c1), inp, at);
    }
    g.sum_dbc_lanes(scratch);
    g
}
