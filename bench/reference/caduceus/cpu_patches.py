#!/usr/bin/env python3
"""CPU patches for running the authors' Caduceus code (mamba_ssm 2.2.2 built without CUDA).

Shared by make_fixtures.py, make_variant_scores.py and bench/caduceus/*.py (our own code).
It substitutes mamba_ssm's OWN pure-PyTorch reference code for the CUDA / Triton kernels:
  * selective_scan_fn (CUDA) -> mamba_ssm's selective_scan_ref, patched in
    mamba_ssm.modules.mamba_simple (where Mamba.forward looks it up) and in
    selective_scan_interface. `install_cpu_patches(scan_fn=...)` can put another scan
    (same signature) in that same place; the default is selective_scan_ref.
  * rms_norm_fn / layer_norm_fn (Triton) -> wrappers around rms_norm_ref / layer_norm_ref that
    reproduce the Triton return convention; fused_add_norm stays ON.
  * selective_scan_cuda -> empty stub module; Triton / CUDA entry points -> traps that raise.
See tools/luminome-engine/tests/fixtures/caduceus/README.md for how they were checked.
"""

import os
import sys
import types
from collections import Counter

DEFAULT_SRC = "/work/venvs/caduceus-src"

CALLS = Counter()


# ----------------------------------------------------------------------------------------------
# CPU patches (mamba_ssm reference implementations in place of CUDA / Triton kernels)
# ----------------------------------------------------------------------------------------------
def install_cpu_patches(scan_fn=None):
    if "selective_scan_cuda" not in sys.modules:
        sys.modules["selective_scan_cuda"] = types.ModuleType("selective_scan_cuda")  # empty stub

    import torch
    import mamba_ssm.ops.selective_scan_interface as ssi
    import mamba_ssm.ops.triton.layer_norm as tln
    import mamba_ssm.modules.mamba_simple as ms
    import mamba_ssm.modules.block as mblock

    assert ms.causal_conv1d_fn is None, "causal_conv1d must not be installed (slow path uses nn.Conv1d)"

    if scan_fn is None:
        def selective_scan_patched(*args, **kwargs):
            CALLS["selective_scan_ref"] += 1
            return ssi.selective_scan_ref(*args, **kwargs)
    else:
        def selective_scan_patched(*args, **kwargs):
            CALLS["selective_scan:" + getattr(scan_fn, "__name__", "custom")] += 1
            return scan_fn(*args, **kwargs)

    def _ref_add_norm(x, weight, bias, residual=None, x1=None, weight1=None, bias1=None, eps=1e-6,
                      dropout_p=0.0, rowscale=None, prenorm=False, residual_in_fp32=False,
                      is_rms_norm=False, return_dropout_mask=False):
        assert x1 is None and weight1 is None and bias1 is None and rowscale is None
        assert dropout_p == 0.0 and not return_dropout_mask
        # Triton LayerNormFn: residual_out dtype = residual.dtype if residual given,
        # else fp32 if residual_in_fp32, else x.dtype; y has x.dtype; math in fp32.
        residual_dtype = residual.dtype if residual is not None else (
            torch.float32 if residual_in_fp32 else x.dtype)
        ref = tln.rms_norm_ref if is_rms_norm else tln.layer_norm_ref
        out, pre = ref(x, weight, bias, residual=residual, eps=eps, prenorm=True, upcast=True)
        if not prenorm:
            return out
        return out, pre.to(residual_dtype)

    def layer_norm_fn_patched(x, weight, bias, residual=None, x1=None, weight1=None, bias1=None,
                              eps=1e-6, dropout_p=0.0, rowscale=None, prenorm=False,
                              residual_in_fp32=False, is_rms_norm=False, return_dropout_mask=False):
        CALLS["layer_norm_fn(is_rms_norm=%s)" % bool(is_rms_norm)] += 1
        return _ref_add_norm(x, weight, bias, residual, x1, weight1, bias1, eps, dropout_p, rowscale,
                             prenorm, residual_in_fp32, is_rms_norm, return_dropout_mask)

    def rms_norm_fn_patched(x, weight, bias, residual=None, x1=None, weight1=None, bias1=None,
                            eps=1e-6, dropout_p=0.0, rowscale=None, prenorm=False,
                            residual_in_fp32=False, return_dropout_mask=False):
        CALLS["rms_norm_fn"] += 1
        return _ref_add_norm(x, weight, bias, residual, x1, weight1, bias1, eps, dropout_p, rowscale,
                             prenorm, residual_in_fp32, True, return_dropout_mask)

    def rmsnorm_forward_patched(self, x, residual=None, prenorm=False, residual_in_fp32=False):
        CALLS["RMSNorm.forward"] += 1
        assert self.drop is None or not self.training
        return rms_norm_fn_patched(x, self.weight, self.bias, residual=residual, eps=self.eps,
                                   prenorm=prenorm, residual_in_fp32=residual_in_fp32)

    def trap(name):
        def _f(*a, **k):
            raise RuntimeError(f"unpatched kernel called: {name}")
        return _f

    # traps on the originals (they would need CUDA/Triton anyway)
    ssi.SelectiveScanFn.apply = trap("SelectiveScanFn")
    ssi.MambaInnerFn.apply = trap("MambaInnerFn")
    tln.LayerNormFn.apply = trap("LayerNormFn")
    ms.mamba_inner_fn = trap("mamba_inner_fn")

    ms.selective_scan_fn = selective_scan_patched
    ssi.selective_scan_fn = selective_scan_patched
    tln.layer_norm_fn = layer_norm_fn_patched
    tln.rms_norm_fn = rms_norm_fn_patched
    tln.RMSNorm.forward = rmsnorm_forward_patched
    mblock.layer_norm_fn = layer_norm_fn_patched
    ms.layer_norm_fn = layer_norm_fn_patched
    ms.rms_norm_fn = rms_norm_fn_patched

    import caduceus.modeling_caduceus as mc
    import caduceus.modeling_rcps as mr
    for mod in (mc, mr):
        assert mod.RMSNorm is tln.RMSNorm
        mod.layer_norm_fn = layer_norm_fn_patched
        mod.rms_norm_fn = rms_norm_fn_patched
    assert mc.Block is mblock.Block and mc.Mamba is ms.Mamba

    return dict(layer_norm_fn=layer_norm_fn_patched, rms_norm_fn=rms_norm_fn_patched)


def selftest_norm_wrappers(patched):
    """The wrappers must reproduce the Triton semantics: (out, x+residual) with prenorm."""
    import torch
    import torch.nn.functional as F
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 5, 6, generator=g)
    r = torch.randn(2, 5, 6, generator=g)
    w = 1 + 0.1 * torch.randn(6, generator=g)
    b = 0.1 * torch.randn(6, generator=g)
    s = x + r
    exp_rms = s * torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + 1e-5) * w
    exp_ln = F.layer_norm(s, (6,), w, b, 1e-5)
    o, res = patched["rms_norm_fn"](x, w, None, residual=r, prenorm=True, eps=1e-5)
    assert torch.allclose(o, exp_rms, atol=1e-6) and torch.equal(res, s)
    o, res = patched["layer_norm_fn"](x, w, b, residual=r, prenorm=True, eps=1e-5)
    assert torch.allclose(o, exp_ln, atol=1e-6) and torch.equal(res, s)
    o, res = patched["layer_norm_fn"](x, w, None, residual=None, prenorm=True, eps=1e-5, is_rms_norm=True,
                                      residual_in_fp32=True)
    assert torch.equal(res, x) and res.dtype == torch.float32
    xh = x.to(torch.float16)
    o, res = patched["rms_norm_fn"](xh, w, None, residual=None, prenorm=True, residual_in_fp32=True)
    assert o.dtype == torch.float16 and res.dtype == torch.float32
    o = patched["rms_norm_fn"](x, w, None, residual=r, prenorm=False, eps=1e-5)
    assert torch.allclose(o, exp_rms, atol=1e-6)
    CALLS.clear()


EMBED_STD = 0.5  # embeddings re-drawn N(0, 0.5^2) so logits (tied head) are O(1)


def perturb(model, gen):
    import torch
    done = []
    with torch.no_grad():
        for name, p in model.named_parameters():  # shared (tied) tensors appear once
            n = lambda: torch.randn(p.shape, generator=gen, dtype=p.dtype)
            if "word_embeddings" in name:
                p.copy_(EMBED_STD * n())
            elif "norm" in name and name.endswith("weight"):
                p.copy_(1.0 + 0.1 * n())
            elif "norm" in name and name.endswith("bias"):
                p.copy_(0.1 * n())
            elif name.endswith("A_log") or name.endswith(".D"):
                p.add_(0.1 * n())
            elif "dt_proj" in name:
                p.add_(0.1 * n())
            elif name.endswith("bias"):
                p.add_(0.1 * n())
            elif name.endswith("weight"):
                p.add_(0.05 * n())
            else:
                raise AssertionError(f"unhandled parameter {name}")
            done.append(name)
    return done


def load_authors_package(caduceus_src=None, scan_fn=None, register_auto=True, selftest=True):
    """Put the authors' `caduceus` package on sys.path, install the CPU patches, optionally run
    the norm-wrapper self-test and register CaduceusConfig / CaduceusForMaskedLM with the Auto
    classes (the fixtures' config.json has no auto_map). Returns the patched-function dict."""
    src = os.path.abspath(caduceus_src or os.environ.get("CADUCEUS_SRC", DEFAULT_SRC))
    if src not in sys.path:
        sys.path.insert(0, src)
    patched = install_cpu_patches(scan_fn=scan_fn)
    if selftest:
        selftest_norm_wrappers(patched)
    if register_auto:
        from transformers import AutoConfig, AutoModelForMaskedLM
        from caduceus.configuration_caduceus import CaduceusConfig
        from caduceus.modeling_caduceus import CaduceusForMaskedLM
        try:
            AutoConfig.register("caduceus", CaduceusConfig)
            AutoModelForMaskedLM.register(CaduceusConfig, CaduceusForMaskedLM)
        except ValueError:
            pass  # already registered
    return patched
