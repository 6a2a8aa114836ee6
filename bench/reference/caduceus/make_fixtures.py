#!/usr/bin/env python3
"""Generate Caduceus / PlantCaduceus reference fixtures from the authors' PyTorch code.

This is our own driver script: it imports the authors' `caduceus` package (from a
checkout kept OUTSIDE this repository, see --caduceus-src) and mamba_ssm 2.2.2
(installed without CUDA kernels), builds tiny random CaduceusForMaskedLM models,
saves them with `save_pretrained`, and writes expected outputs next to them.

CPU-only execution needs three substitutions (implemented in cpu_patches.py), all made with mamba_ssm's OWN
pure-PyTorch reference code (nothing of ours enters the numerics):
  * `selective_scan_fn` (CUDA) -> `mamba_ssm.ops.selective_scan_interface.selective_scan_ref`,
    patched in `mamba_ssm.modules.mamba_simple` (where Mamba.forward looks it up);
    every Mamba is built with use_fast_path=False (ssm_cfg) and causal_conv1d is
    not installed, so Mamba.forward takes its torch conv1d + selective_scan_fn path.
  * `rms_norm_fn` / `layer_norm_fn` (Triton) -> thin wrappers around
    `rms_norm_ref` / `layer_norm_ref` reproducing the Triton functions' return
    convention (out, or (out, residual_out) with prenorm=True; residual_out = x + residual,
    fp32 when residual_in_fp32 and no residual was given, else residual's dtype).
    Patched in every namespace that imported them. fused_add_norm stays ON.
  * `selective_scan_cuda` (the compiled extension, imported at module load by
    selective_scan_interface.py) is replaced by an empty stub module; the Triton
    and CUDA entry points are additionally replaced by traps that raise if called.

Run (see tests/fixtures/caduceus/README.md):
  nice /work/venvs/caduceus-ref/bin/python bench/reference/caduceus/make_fixtures.py
"""

import argparse
import json
import os
import sys
from collections import OrderedDict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# the CPU patches (and the parameter perturbation) live in cpu_patches.py, shared with
# make_variant_scores.py and bench/caduceus/*.py
from cpu_patches import CALLS, EMBED_STD, install_cpu_patches, perturb, selftest_norm_wrappers  # noqa: E402,F401

DEFAULT_SRC = "/work/venvs/caduceus-src"
REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
DEFAULT_OUT = os.path.join(REPO_ROOT, "tools", "luminome-engine", "tests", "fixtures", "caduceus")

SEQ_LEN = 41
BATCH = 4
MASK_POS = 20


# ----------------------------------------------------------------------------------------------
# Tokenizers / vocabularies
# ----------------------------------------------------------------------------------------------
GPN_VOCAB = OrderedDict([("[PAD]", 0), ("[MASK]", 1), ("[UNK]", 2), ("a", 3), ("c", 4), ("g", 5), ("t", 6)])


def build_gpn_tokenizer(out_dir):
    """Stand-in for gonzalobenegas/tokenizer-dna-mlm built to the same layout."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, Regex
    from transformers import PreTrainedTokenizerFast
    tok = Tokenizer(models.WordLevel(vocab=dict(GPN_VOCAB), unk_token="[UNK]"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]", mask_token="[MASK]",
                                   unk_token="[UNK]")
    fast.save_pretrained(out_dir)
    # no special tokens are added around sequences
    enc = fast("ACGTacgtN")["input_ids"]
    assert enc == [3, 4, 5, 6, 3, 4, 5, 6, 2], enc
    from transformers import AutoTokenizer
    again = AutoTokenizer.from_pretrained(out_dir)
    assert type(again).__name__ == "PreTrainedTokenizerFast"
    assert again("ACGTacgtN")["input_ids"] == enc and again.mask_token_id == 1 and again.pad_token_id == 0
    # complement map as PlantCaduceus' pretrain code computes it (pretrain/llmlib/.../caduceus.py)
    comp = {"A": "T", "C": "G", "G": "C", "T": "A", "a": "t", "c": "g", "g": "c", "t": "a"}
    vocab = fast.get_vocab()
    cmap = {}
    for k, v in sorted(vocab.items(), key=lambda kv: kv[1]):
        cmap[vocab[k]] = vocab[comp[k]] if k in comp else v
    return fast, cmap


def build_char_tokenizer(out_dir):
    from caduceus.tokenization_caduceus import CaduceusTokenizer
    tok = CaduceusTokenizer(model_max_length=131072, characters=("A", "C", "G", "T", "N"))
    note = "CaduceusTokenizer.save_pretrained"
    try:
        tok.save_pretrained(out_dir)
    except Exception as e:  # pragma: no cover - recorded in README if it happens
        note = f"save_pretrained failed ({e!r}); tokenizer_config.json written by hand"
        with open(os.path.join(out_dir, "tokenizer_config.json"), "w") as f:
            json.dump({"tokenizer_class": "CaduceusTokenizer", "model_max_length": 131072,
                       "characters": ["A", "C", "G", "T", "N"]}, f, indent=2)
    enc = tok("ACGTN")["input_ids"]
    assert enc == [7, 8, 9, 10, 11, 1], enc  # build_inputs_with_special_tokens appends [SEP]
    again = CaduceusTokenizer.from_pretrained(out_dir)  # characters default to ACGTN
    assert again("acgtnX")["input_ids"] == [7, 8, 9, 10, 11, 6, 1] and again.complement_map == tok.complement_map
    return tok, dict(tok.complement_map), note


# ----------------------------------------------------------------------------------------------
# Fixtures
# ----------------------------------------------------------------------------------------------
FIXTURES = [
    dict(name="ps_rcps_fused", seed=1001, vocab="gpn",
         cfg=dict(d_model=16, n_layer=3, rcps=True, bidirectional=True, bidirectional_strategy="add",
                  bidirectional_weight_tie=True, fused_add_norm=True, rms_norm=True,
                  residual_in_fp32=False, d_state=8)),
    dict(name="ph_fused", seed=1002, vocab="char",
         cfg=dict(d_model=16, n_layer=2, rcps=False, bidirectional=True, bidirectional_strategy="add",
                  bidirectional_weight_tie=True, fused_add_norm=True, rms_norm=True,
                  residual_in_fp32=True, d_state=8)),
    dict(name="rcps_unfused_layernorm_untied", seed=1003, vocab="char",
         cfg=dict(d_model=8, n_layer=4, rcps=True, bidirectional=True, bidirectional_strategy="ew_multiply",
                  bidirectional_weight_tie=False, fused_add_norm=False, rms_norm=False,
                  residual_in_fp32=True, d_state=4)),
    dict(name="unidirectional", seed=1004, vocab="char",
         cfg=dict(d_model=8, n_layer=2, rcps=False, bidirectional=False, bidirectional_strategy="add",
                  bidirectional_weight_tie=True, fused_add_norm=True, rms_norm=True,
                  residual_in_fp32=True, d_state=4)),
]



def check_ties(model, cfg):
    emb = model.get_input_embeddings().weight
    head = model.lm_head.weight
    assert head is emb, "lm_head not tied to embedding"
    for layer in model.caduceus.backbone.layers:
        mixer = layer.mixer.submodule if cfg["rcps"] else layer.mixer
        assert mixer.mamba_fwd.use_fast_path is False
        if mixer.mamba_rev is not None:
            assert mixer.mamba_rev.use_fast_path is False
            tied = mixer.mamba_rev.in_proj.weight is mixer.mamba_fwd.in_proj.weight
            assert tied == cfg["bidirectional_weight_tie"]
            assert (mixer.mamba_rev.out_proj.weight is mixer.mamba_fwd.out_proj.weight) == tied


def make_inputs(kind, gen, cmap, tokenizer):
    """Row0 random bases; row1 = reverse complement of row0; rows 2,3 random. Mask at 20 in rows 0,2."""
    import torch
    if kind == "gpn":
        letters, n_bases, sep, mask_id = "acgt", SEQ_LEN, None, GPN_VOCAB["[MASK]"]
    else:
        letters, n_bases, sep, mask_id = "ACGTN", SEQ_LEN - 1, 1, 3
    probs = torch.tensor([0.24, 0.24, 0.24, 0.24, 0.04][: len(letters)])
    seqs = []
    for _ in range(3):
        idx = torch.multinomial(probs, n_bases, replacement=True, generator=gen).tolist()
        seqs.append("".join(letters[i] for i in idx))
    comp = {"A": "T", "C": "G", "G": "C", "T": "A", "N": "N", "a": "t", "c": "g", "g": "c", "t": "a"}
    rc0 = "".join(comp[c] for c in reversed(seqs[0]))
    strings = [seqs[0], rc0, seqs[1], seqs[2]]
    rows = []
    for s in strings:
        ids = tokenizer(s)["input_ids"]
        assert len(ids) == SEQ_LEN, (len(ids), s)
        rows.append(ids)
    ids = torch.tensor(rows, dtype=torch.long)
    cm = torch.tensor([cmap[i] for i in range(len(cmap))])
    # tokenizer(RC string) == id-level reverse complement of tokenizer(string)
    assert torch.equal(ids[1, :n_bases], cm[ids[0, :n_bases].flip(0)])
    ids[0, MASK_POS] = mask_id
    ids[2, MASK_POS] = mask_id
    # row 1 = id-level reverse complement of the masked row 0 ([MASK] is its own complement, so
    # row 1 carries a mask at n_bases-1-MASK_POS); SEP (if any) stays last
    ids[1, :n_bases] = cm[ids[0, :n_bases].flip(0)]
    if sep is not None:
        assert (ids[:, -1] == sep).all()
    return ids, strings, n_bases


def tensor_listing(path):
    from safetensors import safe_open
    out = []
    with safe_open(path, "pt") as f:
        for k in sorted(f.keys()):
            t = f.get_tensor(k)
            out.append((k, str(t.dtype).replace("torch.", ""), list(t.shape)))
    return out


def diagnose_fused_half_exchange(model, ids):
    """Informative only (rcps + fused_add_norm models): compare the authors' fused path with
    (a) the authors' unfused path (RCPSAddNormWrapper) on identical weights and (b) our variant
    of the fused RCPSMambaBlock.forward that does NOT exchange the two channel halves."""
    import copy
    import torch
    import caduceus.modeling_rcps as mr
    from caduceus.modeling_caduceus import CaduceusForMaskedLM
    cfg = copy.deepcopy(model.config)
    cfg.fused_add_norm = False
    unf = CaduceusForMaskedLM(cfg).eval()
    sd = {k.replace(".norm.weight", ".norm.submodule.weight").replace("norm_f.weight", "norm_f.submodule.weight"): v
          for k, v in model.state_dict().items()}
    unf.load_state_dict(sd, strict=True)

    def fused_no_exchange(self, hidden_states, residual=None, inference_params=None):
        d = hidden_states.shape[-1] // 2
        fn = mr.rms_norm_fn if isinstance(self.norm, mr.RMSNorm) else mr.layer_norm_fn
        kw = dict(prenorm=True, residual_in_fp32=self.residual_in_fp32, eps=self.norm.eps)
        hf, rf = fn(hidden_states[..., :d], self.norm.weight, self.norm.bias,
                    residual=None if residual is None else residual[..., :d], **kw)
        hr, rr = fn(hidden_states[..., d:].flip(dims=[-2, -1]), self.norm.weight, self.norm.bias,
                    residual=None if residual is None else residual[..., d:].flip(dims=[-2, -1]), **kw)
        h = torch.cat([hf, hr.flip(dims=[-2, -1])], dim=-1)
        r = torch.cat([rf, rr.flip(dims=[-2, -1])], dim=-1)
        return self.mixer(h, inference_params=inference_params), r

    with torch.no_grad():
        lf = model(input_ids=ids).logits
        lu = unf(input_ids=ids).logits
        orig = mr.RCPSMambaBlock.forward
        mr.RCPSMambaBlock.forward = fused_no_exchange
        try:
            ln = model(input_ids=ids).logits
        finally:
            mr.RCPSMambaBlock.forward = orig
    return {"fused_vs_unfused_logits_maxdiff": (lf - lu).abs().max().item(),
            "fused_without_half_exchange_vs_unfused_logits_maxdiff": (ln - lu).abs().max().item()}


def run_fixture(spec, out_root, summary):
    import torch
    from safetensors.torch import save_file
    from transformers import AutoModelForMaskedLM
    from caduceus.configuration_caduceus import CaduceusConfig
    from caduceus.modeling_caduceus import CaduceusForMaskedLM

    name, c = spec["name"], dict(spec["cfg"])
    out_dir = os.path.join(out_root, name)
    os.makedirs(out_dir, exist_ok=True)
    for f in os.listdir(out_dir):
        os.remove(os.path.join(out_dir, f))

    if spec["vocab"] == "gpn":
        tokenizer, cmap = build_gpn_tokenizer(out_dir)
        tok_note = "PreTrainedTokenizerFast.save_pretrained (stand-in for gonzalobenegas/tokenizer-dna-mlm)"
        vocab_size, pad_id, mask_id = 7, 0, 1
    else:
        tokenizer, cmap, tok_note = build_char_tokenizer(out_dir)
        vocab_size, pad_id, mask_id = 12, 4, 3

    torch.manual_seed(spec["seed"])
    ssm_cfg = dict(d_state=c.pop("d_state"), d_conv=4, expand=2, dt_rank="auto", use_fast_path=False)
    config = CaduceusConfig(vocab_size=vocab_size, ssm_cfg=ssm_cfg, norm_epsilon=1e-5,
                            pad_vocab_size_multiple=8, complement_map=dict(cmap),
                            pad_token_id=pad_id, **c)
    model = CaduceusForMaskedLM(config)
    gen = torch.Generator().manual_seed(spec["seed"] + 1)
    perturb(model, gen)
    model.tie_weights()
    check_ties(model, c)
    model.eval()
    padded_vocab = model.config.vocab_size
    assert padded_vocab % 8 == 0

    ids, strings, n_bases = make_inputs(spec["vocab"], gen, cmap, tokenizer)

    with torch.no_grad():
        CALLS.clear()
        out = model(input_ids=ids, output_hidden_states=True, return_dict=True)
        calls = dict(CALLS)
        back = model.caduceus(input_ids=ids, output_hidden_states=True, return_dict=True)
    logits = out.logits
    hidden = back.last_hidden_state
    assert torch.equal(out.hidden_states[0], back.hidden_states[0])
    assert torch.isfinite(logits).all() and torch.isfinite(hidden).all()
    H = 2 * model.config.d_model if model.config.rcps else model.config.d_model
    assert logits.shape == (BATCH, SEQ_LEN, padded_vocab) and hidden.shape == (BATCH, SEQ_LEN, H)

    model.save_pretrained(out_dir, safe_serialization=True)

    # reload from the folder alone
    reloaded, info = AutoModelForMaskedLM.from_pretrained(out_dir, output_loading_info=True)
    reloaded.eval()
    assert type(reloaded) is CaduceusForMaskedLM
    check_ties(reloaded, c)
    with torch.no_grad():
        out2 = reloaded(input_ids=ids, output_hidden_states=True, return_dict=True)
        hid2 = reloaded.caduceus(input_ids=ids, return_dict=True).last_hidden_state
    reload_diff = max((out2.logits - logits).abs().max().item(), (hid2 - hidden).abs().max().item())
    assert reload_diff == 0.0 or reload_diff < 1e-6, reload_diff

    expected = {
        "input_ids": ids.contiguous(),
        "logits": logits.float().contiguous(),
        "hidden": hidden.float().contiguous(),
        "hidden_states_layer0": out.hidden_states[0].float().contiguous(),
    }
    meta = {f"seq_row{i}": s for i, s in enumerate(strings)}
    meta.update(mask_pos=str(MASK_POS), mask_rows="0,2", mask_id=str(mask_id), n_bases=str(n_bases),
                note="row1 = reverse complement of row0 bases; seq_rowN are the unmasked base strings")
    save_file(expected, os.path.join(out_dir, "expected.safetensors"), metadata=meta)

    # informative: RC equivariance of rcps models
    rc = {}
    if model.config.rcps:
        cm = reloaded.caduceus.backbone.embeddings.word_embeddings.complement_map
        with torch.no_grad():
            ids_rc = reloaded.caduceus.backbone.embeddings.word_embeddings.rc(ids)
            lg_rc = reloaded(input_ids=ids_rc).logits
            hd_rc = reloaded.caduceus(input_ids=ids_rc, return_dict=True).last_hidden_state
        # exact full-sequence RC: logits(rc x)[t, v] == logits(x)[L-1-t, cm[v]]
        rc["full_rc_logits_maxdiff"] = (lg_rc - logits.flip(1)[..., cm]).abs().max().item()
        rc["full_rc_hidden_maxdiff"] = (hd_rc - hidden.flip(1, 2)).abs().max().item()
        # row-based: row1 (bases RC'd, SEP kept last) vs row0
        nb = n_bases
        a = logits[1, :nb]
        b = logits[0, :nb].flip(0)[..., cm]
        rc["row1_vs_row0_logits_maxdiff"] = (a - b).abs().max().item()
        rc["logits_absmax"] = logits.abs().max().item()
        if model.config.fused_add_norm:
            rc.update(diagnose_fused_half_exchange(reloaded, ids))

    summary[name] = dict(
        config=json.load(open(os.path.join(out_dir, "config.json"))),
        model_tensors=tensor_listing(os.path.join(out_dir, "model.safetensors")),
        expected_tensors=tensor_listing(os.path.join(out_dir, "expected.safetensors")),
        missing_keys_on_reload=sorted(info["missing_keys"]),
        unexpected_keys_on_reload=sorted(info["unexpected_keys"]),
        reload_max_abs_diff=reload_diff,
        kernel_calls_per_forward=calls,
        rc=rc,
        tokenizer=tok_note,
        files={f: os.path.getsize(os.path.join(out_dir, f)) for f in sorted(os.listdir(out_dir))},
        logits_absmax=logits.abs().max().item(),
        hidden_absmax=hidden.abs().max().item(),
    )
    print(f"[{name}] reload diff {reload_diff:g}; calls {calls}; rc {rc}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--caduceus-src", default=os.environ.get("CADUCEUS_SRC", DEFAULT_SRC),
                    help="directory holding the authors' `caduceus` package (outside this repo)")
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--summary", default=None, help="optionally write a JSON summary (tensor lists, call counts, checks) to this path")
    ap.add_argument("--only", nargs="*", default=None)
    args = ap.parse_args()

    sys.path.insert(0, os.path.abspath(args.caduceus_src))
    import torch
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    patched = install_cpu_patches()
    selftest_norm_wrappers(patched)

    from transformers import AutoConfig, AutoModelForMaskedLM
    from caduceus.configuration_caduceus import CaduceusConfig
    from caduceus.modeling_caduceus import CaduceusForMaskedLM
    AutoConfig.register("caduceus", CaduceusConfig)
    AutoModelForMaskedLM.register(CaduceusConfig, CaduceusForMaskedLM)

    summary = {}
    for spec in FIXTURES:
        if args.only and spec["name"] not in args.only:
            continue
        run_fixture(spec, args.out, summary)
    if args.summary:
        with open(args.summary, "w") as f:
            json.dump(summary, f, indent=1, default=str)


if __name__ == "__main__":
    main()
