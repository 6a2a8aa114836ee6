#!/usr/bin/env python3
"""PyTorch peer for the Caduceus zero-shot SNV speed benchmark (CPU, float32).

Our own script. Loads a Caduceus checkpoint folder (Hugging Face layout) with the authors'
`caduceus` package plus the CPU patches of bench/reference/caduceus/cpu_patches.py, and scores
N random SNV windows zero-shot:
  * N random windows of --window (512) bases (seeded), tokenized by the checkpoint's own
    tokenizer (PlantCaduceus layout: GPN-style vocabulary, no special tokens), the site at
    index 256 replaced by [MASK]; a random ALT != REF per window;
  * batches of --batch windows; with `--strands both` (default, like the Rust tool) every batch
    is run forward AND as its reverse complement (site then at index window-1-256); with
    `--strands forward` one pass;
  * log_softmax over the logits of the four base tokens at the site; llr = logp[ALT] - logp[REF]
    (averaged over the two strands, RC side uses complemented bases);
  * torch.set_num_threads(--threads), torch.inference_mode().
Prints one JSON line: SNVs/s, wall time (tokenization + forward passes + scoring, model load
excluded and reported separately), peak RSS (getrusage ru_maxrss).

Scan modes (`--scan`), patched where cpu_patches patches selective_scan_fn:
  ref         mamba_ssm's selective_scan_ref (a Python loop over positions; the authors' CPU path)
  vectorised  our scan without a Python loop over positions: chunks of --chunk positions, inside a
              chunk a Hillis-Steele parallel prefix over the affine maps h -> a*h + b
              (log2(chunk) doubling steps), a loop over chunks only to carry the state.
              `--vec-algo heinsen` instead uses log-space cumulative sums inside a chunk
              (h_t = exp(S_t) * cumsum_r exp(-S_r) * x_r done with logcumsumexp, signs split).
`--check` compares the vectorised scan with selective_scan_ref on random inputs of the real
sizes (batch, 2*d_model, window, d_state from the checkpoint) and on the model's site
log-probabilities, and exits non-zero if the scan differs by more than 1e-4 relative.

  nice -n 10 /work/venvs/caduceus-ref/bin/python bench/caduceus/torch_peer.py \
      --checkpoint /work/bench-data/plantcad_l20_random --n 16 --batch 8 --threads 1 --scan ref
"""

import argparse
import json
import os
import random
import resource
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO_ROOT, "bench", "reference", "caduceus"))
from cpu_patches import CALLS, DEFAULT_SRC, load_authors_package  # noqa: E402

COMP = {"A": "T", "C": "G", "G": "C", "T": "A"}
SITE = 256


# ----------------------------------------------------------------------------------------------
# Vectorised selective scan (same signature and semantics as mamba_ssm's selective_scan_ref,
# real A, variable B and C of shape (batch, d_state, L))
# ----------------------------------------------------------------------------------------------
def _prepare(u, delta, A, B, C, delta_bias, delta_softplus):
    import torch.nn.functional as F
    assert not A.is_complex() and B.dim() == 3 and C.dim() == 3, "only the Mamba-1 real, variable B/C case"
    u = u.float()
    delta = delta.float()
    if delta_bias is not None:
        delta = delta + delta_bias[..., None].float()
    if delta_softplus:
        delta = F.softplus(delta)
    return u, delta, B.float(), C.float()


def _finish(y, u, D, z, dtype_in, last, return_last_state):
    import torch.nn.functional as F
    out = y if D is None else y + u * D[:, None]
    if z is not None:
        out = out * F.silu(z)
    out = out.to(dtype=dtype_in)
    return out if not return_last_state else (out, last)


def make_vectorised_scan(chunk=64, algo="prefix"):
    import torch

    def selective_scan_vectorised(u, delta, A, B, C, D=None, z=None, delta_bias=None,
                                  delta_softplus=False, return_last_state=False):
        dtype_in = u.dtype
        u, delta, B, C = _prepare(u, delta, A, B, C, delta_bias, delta_softplus)
        batch, dim, L = u.shape
        n = A.shape[1]
        # layout (batch, dim, L, n) like selective_scan_ref
        dA = delta.unsqueeze(-1) * A.unsqueeze(1)                              # log(deltaA) <= 0
        Bt = B.transpose(1, 2)                                                 # (b, L, n)
        Ct = C.transpose(1, 2)
        x = (delta * u).unsqueeze(-1) * Bt.unsqueeze(1)                        # deltaB_u
        h = u.new_zeros((batch, dim, n))
        ys = []
        for s in range(0, L, chunk):
            e = min(s + chunk, L)
            if algo == "prefix":
                a = torch.exp(dA[:, :, s:e])                                   # (b, d, T, n)
                b = x[:, :, s:e].clone()
                k, T = 1, e - s
                while k < T:  # Hillis-Steele: compose (a2,b2)o(a1,b1) = (a2*a1, a2*b1 + b2)
                    b[:, :, k:] = b[:, :, k:] + a[:, :, k:] * b[:, :, :-k]
                    a[:, :, k:] = a[:, :, k:] * a[:, :, :-k]
                    k *= 2
                H = b + a * h.unsqueeze(2)
            else:  # heinsen: log-space cumulative sums, positive and negative parts separately
                S = torch.cumsum(dA[:, :, s:e], dim=2)
                xc = x[:, :, s:e]
                lp = torch.logcumsumexp(torch.log(torch.clamp(xc, min=0)) - S, dim=2)
                ln = torch.logcumsumexp(torch.log(torch.clamp(-xc, min=0)) - S, dim=2)
                H = torch.exp(S + lp) - torch.exp(S + ln) + torch.exp(S) * h.unsqueeze(2)
            h = H[:, :, -1]
            ys.append(torch.einsum("bdtn,btn->bdt", H, Ct[:, s:e]))
        y = torch.cat(ys, dim=2)
        return _finish(y, u, D, z, dtype_in, h, return_last_state)

    selective_scan_vectorised.__name__ = f"selective_scan_vectorised_{algo}{chunk}"
    return selective_scan_vectorised


# ----------------------------------------------------------------------------------------------
# Inputs
# ----------------------------------------------------------------------------------------------
def make_windows(n, window, seed):
    rng = random.Random(seed)
    seqs, refs, alts = [], [], []
    for _ in range(n):
        s = "".join(rng.choice("ACGT") for _ in range(window))
        seqs.append(s)
        refs.append(s[SITE])
        alts.append(rng.choice([b for b in "ACGT" if b != s[SITE]]))
    return seqs, refs, alts


def revcomp(s):
    return "".join(COMP[c] for c in reversed(s))


def load(checkpoint):
    import torch
    from transformers import AutoModelForMaskedLM, AutoTokenizer
    model = AutoModelForMaskedLM.from_pretrained(checkpoint, torch_dtype=torch.float32).eval()
    tok = AutoTokenizer.from_pretrained(checkpoint)
    base_ids = [tok.convert_tokens_to_ids(b.lower()) for b in "ACGT"]
    assert base_ids == [3, 4, 5, 6] and tok.mask_token_id == 1, (base_ids, tok.mask_token_id)
    assert tok("ACGT")["input_ids"] == [3, 4, 5, 6], "expected the GPN-style tokenizer (no special tokens)"
    return model, tok, base_ids


def tokenize(tok, seqs, site):
    import torch
    ids = torch.tensor(tok(seqs)["input_ids"], dtype=torch.long)
    assert ids.shape == (len(seqs), len(seqs[0]))
    ids[:, site] = tok.mask_token_id
    return ids


def score(model, tok, base_ids, seqs, refs, alts, batch, strands):
    import torch
    idx = {b: i for i, b in enumerate("ACGT")}
    L = len(seqs[0])
    llrs = []
    for s in range(0, len(seqs), batch):
        chunk = seqs[s:s + batch]
        r = torch.tensor([idx[c] for c in refs[s:s + batch]])
        a = torch.tensor([idx[c] for c in alts[s:s + batch]])
        ids = tokenize(tok, chunk, SITE)
        lp = torch.log_softmax(model(input_ids=ids).logits[:, SITE, base_ids].float(), dim=-1)
        llr = lp.gather(1, a[:, None])[:, 0] - lp.gather(1, r[:, None])[:, 0]
        if strands == "both":
            site_rc = L - 1 - SITE
            ids = tokenize(tok, [revcomp(c) for c in chunk], site_rc)
            lp = torch.log_softmax(model(input_ids=ids).logits[:, site_rc, base_ids].float(), dim=-1)
            comp = torch.tensor([3, 2, 1, 0])  # A<->T, C<->G in ACGT order
            llr_rc = lp.gather(1, comp[a][:, None])[:, 0] - lp.gather(1, comp[r][:, None])[:, 0]
            llr = (llr + llr_rc) / 2
        llrs.append(llr)
    return torch.cat(llrs)


# ----------------------------------------------------------------------------------------------
# Check: vectorised scan against selective_scan_ref
# ----------------------------------------------------------------------------------------------
def run_check(args, vec_scan):
    import torch
    import mamba_ssm.ops.selective_scan_interface as ssi
    from transformers import AutoConfig
    cfg = AutoConfig.from_pretrained(args.checkpoint)
    d_state = cfg.ssm_cfg.get("d_state", 16)
    dim = cfg.ssm_cfg.get("expand", 2) * cfg.d_model
    g = torch.Generator().manual_seed(args.seed + 7)
    bsz, L = args.batch, args.window
    results = []
    # A and dt bias as Mamba initialises them (A_log = log(1..d_state), dt in [1e-3, 1e-1]);
    # "strong" scales delta up so that per-step decays reach about exp(-16*3).
    A = -torch.arange(1, d_state + 1, dtype=torch.float32).repeat(dim, 1) * torch.exp(0.1 * torch.randn(dim, d_state, generator=g))
    dt = torch.exp(torch.rand(dim, generator=g) * (torch.log(torch.tensor(0.1)) - torch.log(torch.tensor(1e-3))) + torch.log(torch.tensor(1e-3)))
    dt_bias = dt + torch.log(-torch.expm1(-dt))  # inverse softplus, as Mamba does
    for label, dscale, dshift in (("mamba-init", 0.5, 0.0), ("strong-decay", 1.0, 3.0)):
        u = torch.randn(bsz, dim, L, generator=g)
        delta = dscale * torch.randn(bsz, dim, L, generator=g) + dshift
        B = torch.randn(bsz, d_state, L, generator=g)
        C = torch.randn(bsz, d_state, L, generator=g)
        D = 1 + 0.1 * torch.randn(dim, generator=g)
        z = torch.randn(bsz, dim, L, generator=g)
        kw = dict(D=D, z=z, delta_bias=dt_bias, delta_softplus=True, return_last_state=True)
        t0 = time.perf_counter()
        ref, ref_last = ssi.selective_scan_ref(u, delta, A, B, C, **kw)
        t1 = time.perf_counter()
        vec, vec_last = vec_scan(u, delta, A, B, C, **kw)
        t2 = time.perf_counter()
        diff = (vec - ref).abs()
        scale = ref.abs().max().item()
        rel_max = diff.max().item() / scale
        # elementwise: |vec-ref| <= 1e-4*|ref| + 1e-6*max|ref|
        elem_ok = bool((diff <= 1e-4 * ref.abs() + 1e-6 * scale).all())
        last_rel = ((vec_last - ref_last).abs().max() / ref_last.abs().max()).item()
        results.append(dict(inputs=label, shape=[bsz, dim, L, d_state], max_abs_diff=diff.max().item(),
                            max_abs_ref=scale, rel_to_max=rel_max, elementwise_ok=elem_ok,
                            last_state_rel=last_rel, ref_s=round(t1 - t0, 3), vec_s=round(t2 - t1, 3),
                            passed=bool(rel_max <= 1e-4 and last_rel <= 1e-4)))
    # model-level: site log-probs with both scans on two windows (both strands)
    import mamba_ssm.modules.mamba_simple as ms
    model, tok, base_ids = load(args.checkpoint)
    seqs, refs, alts = make_windows(2, args.window, args.seed)
    patched = ms.selective_scan_fn
    out = {}
    with torch.inference_mode():
        for name, fn in (("ref", ssi.selective_scan_ref), ("vectorised", vec_scan)):
            ms.selective_scan_fn = fn
            ids = tokenize(tok, seqs, SITE)
            out[name] = torch.log_softmax(model(input_ids=ids).logits[:, SITE, base_ids].float(), dim=-1)
    ms.selective_scan_fn = patched
    model_diff = (out["ref"] - out["vectorised"]).abs().max().item()
    ok = all(r["passed"] for r in results)
    print(json.dumps(dict(check="vectorised_vs_selective_scan_ref", scan=vec_scan.__name__, passed=ok,
                          tolerance="max|vec-ref| <= 1e-4 * max|ref| (output and last state)",
                          cases=results, model_site_logp_max_abs_diff=model_diff,
                          model_site_logp_ref=out["ref"].tolist())))
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", default="/work/bench-data/plantcad_l20_random")
    ap.add_argument("--n", type=int, default=16, help="number of SNV windows")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--window", type=int, default=512)
    ap.add_argument("--strands", choices=["both", "forward"], default="both")
    ap.add_argument("--scan", choices=["ref", "vectorised"], default="ref")
    ap.add_argument("--vec-algo", choices=["prefix", "heinsen"], default="prefix")
    ap.add_argument("--chunk", type=int, default=64, help="chunk length of the vectorised scan")
    ap.add_argument("--seed", type=int, default=12345)
    ap.add_argument("--check", action="store_true", help="check the vectorised scan against selective_scan_ref and exit")
    ap.add_argument("--caduceus-src", default=os.environ.get("CADUCEUS_SRC", DEFAULT_SRC))
    args = ap.parse_args()
    assert args.window > SITE

    import torch
    torch.set_num_threads(args.threads)
    vec_scan = make_vectorised_scan(args.chunk, args.vec_algo)
    if args.check:
        load_authors_package(args.caduceus_src)  # selective_scan_ref in place; the check swaps scans itself
        with torch.inference_mode():
            sys.exit(0 if run_check(args, vec_scan) else 1)

    load_authors_package(args.caduceus_src, scan_fn=vec_scan if args.scan == "vectorised" else None)
    t0 = time.perf_counter()
    model, tok, base_ids = load(args.checkpoint)
    load_s = time.perf_counter() - t0
    seqs, refs, alts = make_windows(args.n, args.window, args.seed)
    CALLS.clear()
    with torch.inference_mode():
        t0 = time.perf_counter()
        llr = score(model, tok, base_ids, seqs, refs, alts, args.batch, args.strands)
        wall = time.perf_counter() - t0
    assert torch.isfinite(llr).all()
    scan_calls = {k: v for k, v in CALLS.items() if k.startswith("selective_scan")}
    print(json.dumps(dict(
        peer="torch", scan=args.scan + (f"({args.vec_algo},chunk={args.chunk})" if args.scan == "vectorised" else ""),
        strands=args.strands, n=args.n, batch=args.batch, threads=args.threads, window=args.window,
        wall_s=round(wall, 3), snvs_per_s=round(args.n / wall, 4), load_s=round(load_s, 3),
        peak_rss_mib=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        scan_calls=scan_calls, llr_mean=llr.mean().item(), llr_first=llr[:4].tolist(),
        checkpoint=os.path.abspath(args.checkpoint), d_model=model.config.d_model,
        n_layer=model.config.n_layer, torch=torch.__version__)))


if __name__ == "__main__":
    main()
