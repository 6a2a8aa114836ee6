#!/usr/bin/env python3
"""Generate Nucleotide Transformer v2 (InstaDeepAI, ESM-style encoder with rotary positions and a
SwiGLU feed-forward) reference fixtures.

This is our own driver script. It imports the authors' remote code of the hub repository
InstaDeepAI/nucleotide-transformer-v2-50m-multi-species (modeling_esm.py, esm_config.py, hub revision
81b29e5786726d891dbf929404ef20adca5b36f1), which is kept OUTSIDE this repository as a package `ntv2/`
under --src (with our own empty __init__.py). The published tokenizer/config data files are read from
--hub (default <src>/hub). Every one of these files is checked against the byte size and sha256 that
were pinned for that hub revision (see PUBLISHED below and tests/fixtures/nt_v2/README.md).

It builds tiny random models from the authors' EsmConfig / EsmForMaskedLM in float32 on the CPU
(eval mode), saves them with `save_pretrained(safe_serialization=True)`, writes the published config
key set with only the sizes replaced, and stores the expected outputs of the authors' forward pass.
An independent float64 NumPy re-implementation that reads nothing but model.safetensors and
config.json must agree with the authors' outputs to 1e-5 (see reference_forward); it documents the
exact math a port has to follow.

Run (see tests/fixtures/nt_v2/README.md):
  nice /work/venvs/dnabert2-ref/bin/python bench/reference/nt_v2/make_fixtures.py
"""

import argparse
import csv
import hashlib
import itertools
import json
import math
import os
import shutil
import sys
import warnings
from collections import OrderedDict

DEFAULT_SRC = "/work/venvs/ntv2-src"
REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
DEFAULT_OUT = os.path.join(REPO_ROOT, "tools", "luminome-engine", "tests", "fixtures", "nt_v2")
DEFAULT_DATA = os.path.join(REPO_ROOT, "test-data", "gue_prom_core_all")

# Byte size and sha256 of the hub files at revision 81b29e57, as pinned by an independent project
# (kurtvalcorza/nucleotide-transformer-genomics-pipeline, weights/nt-v2-50m-multi-species/
# dimer-base-manifest.json). Our copies must be these exact bytes.
PUBLISHED = OrderedDict([
    ("modeling_esm.py", (58205, "f2b003f45d2fa4f94e92d8bbef927b719dfdd7ab7c7a95743daa2b10ab140cb3")),
    ("esm_config.py", (14876, "a44e859baa08465ecdcd76b0a73f6e4fe011245a212931c403de1149ae9613ec")),
    ("config.json", (1064, "e20f497248c7cb264c7cd4582dbcfd52dc4cbf74a97fc711559b8c8f71c635db")),
    ("vocab.txt", (28718, "c00e0ad166d6ab3f7540ebc92270392e581bb3106763412f29034b49323e1052")),
    ("tokenizer_config.json", (129, "253d338919eba938e50b776f3243cc739462c207fe64e3d2e81cc5e681bee45b")),
    ("special_tokens_map.json", (101, "d6dc30bf018166daab248b0abf7efda6fd1b1e0a2d1bee5b31b23db2ebdaee77")),
])
TOKENIZER_FILES = ("vocab.txt", "tokenizer_config.json", "special_tokens_map.json")

UNK_ID, PAD_ID, MASK_ID, CLS_ID, EOS_ID, BOS_ID = 0, 1, 2, 3, 4, 5
VOCAB_SIZE = 4107
PERTURB_STD = 0.1

# Size keys a fixture may change; every other config.json key keeps its published value.
SIZE_KEYS = ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
             "add_bias_fnn", "max_position_embeddings")

FIXTURES = [
    # tiny: published config with only the sizes replaced (add_bias_fnn false and
    # max_position_embeddings 2050 as published). Rows 0-3 right-padded; row 2 has an N, row 0 a <mask>.
    dict(name="tiny", seed=3001, seq_len=20,
         rows=[dict(bases=114, mask_at=[5]),             # 1 + 19 6-mers = 20 tokens
               dict(bases=70),                           # 1 + 11 + 4 singles = 16
               dict(bases=41, n_at=[20]),                # 20 bases, N, 20 bases: 1 + (3+2) + 1 + (3+2) = 12
               dict(bases=9)],                           # 1 + 1 + 3 = 5
         left_pad=[],
         sizes=dict(hidden_size=16, num_hidden_layers=2, num_attention_heads=4, intermediate_size=32),
         logit_positions=[(0, 0), (0, 5), (0, 19), (1, 15), (2, 6), (3, 4)]),
    # bias_long: add_bias_fnn true (biases in the SwiGLU), head dim 4 with 6 heads, 3 layers,
    # L = 70; row 1 has an N-run, row 2 is LEFT-padded. max_position_embeddings is 128 (the table is
    # unused with rotary positions but stored; the published 2050 would not fit the size budget).
    dict(name="bias_long", seed=3002, seq_len=70,
         rows=[dict(bases=414, mask_at=[10, 40]),        # 1 + 69 = 70 tokens
               dict(bases=303, n_at=[150, 151, 152]),    # 1 + (25) + 3 N + (25) = 54
               dict(bases=251)],                         # 1 + 41 + 5 singles = 47 (left-padded)
         left_pad=[2],
         sizes=dict(hidden_size=24, num_hidden_layers=3, num_attention_heads=6, intermediate_size=40,
                    add_bias_fnn=True, max_position_embeddings=128),
         logit_positions=[(0, 10), (0, 69), (1, 26), (2, 23)]),
]


# ----------------------------------------------------------------------------------------------
# Provenance
# ----------------------------------------------------------------------------------------------
def sha256_bytes(b):
    return hashlib.sha256(b).hexdigest()


def check_published(path, name):
    data = open(path, "rb").read()
    want = PUBLISHED[name]
    got = (len(data), sha256_bytes(data))
    assert got == want, f"{path}: {got} is not the published {want}"
    return got[1]


def import_authors(src, hub):
    if src not in sys.path:
        sys.path.insert(0, src)
    hashes = OrderedDict()
    for f in ("modeling_esm.py", "esm_config.py"):
        hashes[f] = check_published(os.path.join(src, "ntv2", f), f)
    for f in ("config.json",) + TOKENIZER_FILES:
        hashes[f] = check_published(os.path.join(hub, f), f)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import ntv2.modeling_esm as M  # noqa: E402
        from ntv2.esm_config import EsmConfig  # noqa: E402
    return M, EsmConfig, hashes


# ----------------------------------------------------------------------------------------------
# Tokenizer
# ----------------------------------------------------------------------------------------------
def read_sequences(path):
    with open(path) as f:
        return [row["sequence"] for row in csv.DictReader(f)]


def load_tokenizer(tok_dir):
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(tok_dir)
    assert type(tok).__name__ == "EsmTokenizer", type(tok)
    assert len(tok) == VOCAB_SIZE
    assert (tok.unk_token_id, tok.pad_token_id, tok.mask_token_id, tok.cls_token_id) == \
        (UNK_ID, PAD_ID, MASK_ID, CLS_ID)
    # tokenizer_config.json sets "eos_token": null, so EsmTokenizer appends nothing
    assert tok.eos_token is None and tok.eos_token_id is None, (tok.eos_token, tok.eos_token_id)
    assert tok.bos_token is None
    assert tok.convert_tokens_to_ids(["<eos>", "<bos>"]) == [EOS_ID, BOS_ID]
    return tok


def published_vocab():
    toks = ["<unk>", "<pad>", "<mask>", "<cls>", "<eos>", "<bos>"]
    toks += ["".join(p) for p in itertools.product("ATCG", repeat=6)] + list("ATCGN")
    return toks


def reference_tokenize(seq, vocab_index):
    """Our own statement of the published tokenizer on uppercase ACGTN input: <cls>, then left to
    right: an N is its own token; in a run without N, non-overlapping 6-mers from the run's start,
    and the last (run length mod 6) bases one token each. No <eos>."""
    assert set(seq) <= set("ACGTN"), seq
    ids = [CLS_ID]
    for i, run in enumerate(seq.split("N")):
        if i > 0:
            ids.append(vocab_index["N"])
        k = len(run) // 6 * 6
        ids += [vocab_index[run[j:j + 6]] for j in range(0, k, 6)]
        ids += [vocab_index[c] for c in run[k:]]
    return ids


EDGE_ROWS = [
    ("edge_len_13", "ACGTACGTACGTA"),
    ("edge_len_6", "TTTTTT"),
    ("edge_len_12", "GATTACAGATTA"),
    ("edge_len_5", "ACGTA"),
    ("edge_len_1", "G"),
    ("edge_empty", ""),
    ("edge_N_middle", "ACGTNACGTACGTAC"),
    ("edge_N_leading_run", "NNNNNNNACGTAC"),
    ("edge_run_then_N", "AAAAAAAN"),
    ("edge_N_only", "N"),
    ("edge_N_six", "NNNNNN"),
    ("edge_N_after_6mer", "ACGTAANACGTAA"),
    ("edge_N_at_5", "ACGTANCCCCCCG"),
    ("edge_N_trailing", "ACGTACN"),
    ("edge_N_two_runs", "CCCCCCCNNGGGGGGGGNT"),
    ("edge_all_A_13", "AAAAAAAAAAAAA"),
]

RAW_ROWS = [
    ("raw_lowercase", "acgtacgtaacc"),
    ("raw_mixed_case", "ACGTACgtacGTACGT"),
    ("raw_iupac_R", "ACRGT"),
    ("raw_iupac_Y_run", "ACGTYYACGTAC"),
    ("raw_lowercase_n", "ACGTACnACGTAC"),
    ("raw_space", "ACGTAC GTACGT"),
    ("raw_U", "ACGUACGTACGT"),
    ("raw_gap", "ACGTAC-GTACGT"),
]


def write_expected_ids(path, rows):
    with open(path, "w", newline="") as f:
        f.write("row\tsequence\tids\n")
        for r, seq, ids in rows:
            f.write(f"{r}\t{seq}\t{','.join(str(i) for i in ids)}\n")


def tokenizer_fixture(hub, out_dir, test_seqs):
    if os.path.isdir(out_dir):
        shutil.rmtree(out_dir)
    os.makedirs(out_dir)
    for f in TOKENIZER_FILES:
        shutil.copyfile(os.path.join(hub, f), os.path.join(out_dir, f))
    tok = load_tokenizer(out_dir)
    vocab = [line for line in open(os.path.join(out_dir, "vocab.txt")).read().split("\n")]
    assert vocab == published_vocab(), "vocab.txt order"
    vocab_index = {t: i for i, t in enumerate(vocab)}

    rows = [(str(i), s) for i, s in enumerate(test_seqs[:40])] + EDGE_ROWS
    # one long row: 6 test sequences joined (420 bases -> 70 6-mers)
    rows.append(("long_420", "".join(test_seqs[40:46])))
    out = []
    for name, seq in rows:
        ids = tok(seq, add_special_tokens=True)["input_ids"]
        assert ids == reference_tokenize(seq, vocab_index), (name, seq, ids)
        assert tok.encode(seq) == ids
        out.append((name, seq, ids))
    write_expected_ids(os.path.join(out_dir, "expected_ids.tsv"), out)

    raw = []
    for name, seq in RAW_ROWS:
        ids = tok(seq, add_special_tokens=True)["input_ids"]
        raw.append((name, seq, ids))
    write_expected_ids(os.path.join(out_dir, "expected_ids_raw.tsv"), raw)
    return tok, OrderedDict(
        rows=len(out), raw_rows=len(raw),
        edges={n: (ids, tok.convert_ids_to_tokens(ids)) for n, _, ids in out if n.startswith("edge")},
        raw={n: (seq, ids, tok.convert_ids_to_tokens(ids)) for n, seq, ids in raw},
        ids={t: vocab_index[t] for t in ["<unk>", "<pad>", "<mask>", "<cls>", "<eos>", "<bos>", "AAAAAA",
                                        "AAAAAT", "AAAAAC", "AAAAAG", "AAAATA", "GGGGGG", "A", "T", "C", "G", "N"]})


# ----------------------------------------------------------------------------------------------
# Models
# ----------------------------------------------------------------------------------------------
def published_config(hub, **sizes):
    cfg = json.load(open(os.path.join(hub, "config.json")), object_pairs_hook=OrderedDict)
    for k, v in sizes.items():
        assert k in SIZE_KEYS and k in cfg, f"not a size key of the published config: {k}"
        cfg[k] = v
    return cfg


def perturb(model, seed):
    """Add N(0, PERTURB_STD^2) to every parameter (sorted by name, one seeded generator), so that
    LayerNorm weights/biases and all biases are non-trivial. Buffers (rotary inv_freq) are untouched."""
    import torch
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _, p in sorted(model.named_parameters(), key=lambda kv: kv[0]):
            p.add_(PERTURB_STD * torch.randn(p.shape, generator=gen, dtype=p.dtype))


def make_inputs(fx, tok, seqs):
    """Real promoter sequences (test.csv, concatenated as needed), cut to `bases`, with N inserted at
    the given base offsets, tokenized by the published tokenizer (<cls> + tokens, no <eos>). Padded
    with <pad>=1 / attention 0 on the right, or on the left for rows in left_pad. mask_at positions
    get <mask>=2."""
    import torch
    B, L = len(fx["rows"]), fx["seq_len"]
    ids = torch.full((B, L), PAD_ID, dtype=torch.long)
    am = torch.zeros((B, L), dtype=torch.long)
    k = 0
    texts = []
    for b, row in enumerate(fx["rows"]):
        text = ""
        while len(text) < row["bases"]:
            text += seqs[k]
            k += 1
        text = list(text[:row["bases"]])
        for p in row.get("n_at", []):
            text[p] = "N"
        text = "".join(text)
        texts.append(text)
        toks = tok(text, add_special_tokens=True)["input_ids"]
        assert len(toks) <= L, (fx["name"], b, len(toks))
        for p in row.get("mask_at", []):
            assert 0 < p < len(toks)
            toks[p] = MASK_ID
        n = len(toks)
        start = L - n if b in fx["left_pad"] else 0
        ids[b, start:start + n] = torch.tensor(toks)
        am[b, start:start + n] = 1
    return ids, am, texts


def run_fixture(M, EsmConfig, fx, tok, hub, seqs, out_root, versions, hashes):
    import numpy as np
    import torch
    from safetensors.numpy import load_file as load_np
    from safetensors.torch import load_file, save_file

    name = fx["name"]
    out = os.path.join(out_root, name)
    if os.path.isdir(out):
        shutil.rmtree(out)
    os.makedirs(out)
    cfg_dict = published_config(hub, **fx["sizes"])
    kwargs = {k: v for k, v in cfg_dict.items() if k not in ("transformers_version", "torch_dtype")}
    cfg = EsmConfig(**kwargs)
    assert cfg.position_embedding_type == "rotary" and not cfg.token_dropout
    assert not cfg.emb_layer_norm_before and not cfg.tie_word_embeddings and not cfg.is_decoder

    torch.manual_seed(fx["seed"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = M.EsmForMaskedLM(cfg)
    model.eval()
    perturb(model, fx["seed"] + 1)
    esm = model.esm
    assert esm.pooler is None and esm.embeddings.layer_norm is None
    assert model.lm_head.decoder.weight is not esm.embeddings.word_embeddings.weight  # untied

    input_ids, attention_mask = make_inputs(fx, tok, seqs)[:2]
    B, L = input_ids.shape

    # raw per-layer outputs (before emb_layer_norm_after) through forward hooks
    layer_out = {}
    hooks = [layer.register_forward_hook(lambda m, i, o, k=k: layer_out.__setitem__(k, o[0].detach().clone()))
             for k, layer in enumerate(esm.encoder.layer)]
    with torch.no_grad():
        base = esm(input_ids, attention_mask=attention_mask, output_hidden_states=True, return_dict=True)
        mlm = model(input_ids=input_ids, attention_mask=attention_mask, return_dict=True).logits
    for h in hooks:
        h.remove()
    hidden = base.last_hidden_state
    hs = base.hidden_states
    n_layers = cfg.num_hidden_layers
    assert len(hs) == n_layers + 1
    # HF's tuple: [embeddings, out(layer 0), ..., out(layer n-2), emb_layer_norm_after(out(layer n-1))]
    for k in range(n_layers - 1):
        assert torch.equal(hs[k + 1], layer_out[k])
    assert torch.equal(hs[-1], hidden)
    assert torch.equal(esm.encoder.emb_layer_norm_after(layer_out[n_layers - 1]), hidden)
    with torch.no_grad():
        assert torch.equal(model.lm_head(hidden), mlm)
    emb = hs[0]
    # the embeddings are word_embeddings[ids] * attention_mask: exactly 0 at padding
    assert torch.count_nonzero(emb[attention_mask == 0]) == 0
    with torch.no_grad():
        assert torch.equal(emb, esm.embeddings.word_embeddings(input_ids) * attention_mask[..., None])

    # padding does not change the tokens' outputs: each row alone, unpadded (rotary is relative, so a
    # left-padded row differs only by rounding)
    pad_shift = 0.0
    with torch.no_grad():
        for b in range(B):
            valid = attention_mask[b].bool()
            alone = esm(input_ids[b:b + 1, valid], return_dict=True).last_hidden_state[0]
            pad_shift = max(pad_shift, float((alone - hidden[b, valid]).abs().max()))
    assert pad_shift < 1e-5, pad_shift

    # save the checkpoint in the hub layout; config.json = the published key set, our sizes
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.save_pretrained(out, safe_serialization=True)
    saved_cfg = json.load(open(os.path.join(out, "config.json")))
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg_dict, f, indent=2)
        f.write("\n")
    for f in TOKENIZER_FILES:
        shutil.copyfile(os.path.join(hub, f), os.path.join(out, f))

    # reload through the authors' classes from the written folder: bitwise equal
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cfg2 = EsmConfig.from_pretrained(out)
        model2 = M.EsmForMaskedLM.from_pretrained(out, config=cfg2).eval()
        with torch.no_grad():
            mlm2 = model2(input_ids=input_ids, attention_mask=attention_mask).logits
            hidden2 = model2.esm(input_ids, attention_mask=attention_mask).last_hidden_state
    assert torch.equal(mlm2, mlm) and torch.equal(hidden2, hidden), "reload mismatch"

    pos = torch.tensor(fx["logit_positions"], dtype=torch.long)
    tensors = OrderedDict()
    tensors["input_ids"] = input_ids.contiguous()
    tensors["attention_mask"] = attention_mask.contiguous()
    tensors["embedding_output"] = emb.contiguous()
    for k in range(n_layers):
        tensors[f"hidden_layer_{k}"] = layer_out[k].contiguous()
    tensors["hidden_states"] = hidden.contiguous()
    tensors["mlm_logits_positions"] = pos.contiguous()
    tensors["mlm_logits"] = mlm[pos[:, 0], pos[:, 1]].contiguous()
    tensors["rotary_inv_freq"] = esm.encoder.layer[0].attention.self.rotary_embeddings.inv_freq.clone()

    # independent float64 re-implementation from model.safetensors + config.json only
    ckpt_np = load_np(os.path.join(out, "model.safetensors"))
    ref = reference_forward(ckpt_np, json.load(open(os.path.join(out, "config.json"))),
                            input_ids.numpy(), attention_mask.numpy(), pos.numpy())
    ref_err = OrderedDict()
    checks = [("embedding_output", "embedding_output"), ("hidden_states", "hidden_states"),
              ("mlm_logits", "mlm_logits")] + [(f"hidden_layer_{k}", f"hidden_layer_{k}") for k in range(n_layers)]
    for ours, theirs in checks:
        ref_err[ours] = float(np.abs(ref[ours] - tensors[theirs].double().numpy()).max())
    assert max(ref_err.values()) <= 1e-5, ref_err

    meta = OrderedDict()
    meta["fixture"] = name
    meta["model_class"] = "EsmForMaskedLM (authors' modeling_esm.py)"
    meta["config"] = json.dumps(cfg_dict)  # = config.json
    meta["seed"] = str(fx["seed"])
    meta["perturb"] = (f"every parameter += {PERTURB_STD}*N(0,1), torch.Generator seed {fx['seed'] + 1}, "
                       "sorted by name (buffers untouched)")
    meta["inputs"] = ("published tokenizer on test-data/gue_prom_core_all/test.csv sequences (rows 100+), "
                      "<cls> + tokens, no <eos>; <pad>=1 / attention 0; <mask>=2 at some tokens; "
                      f"left-padded rows: {fx['left_pad']}")
    meta["hidden_layer_k"] = ("output of encoder.layer[k] (raw residual stream, before emb_layer_norm_after); "
                              "hidden_states = emb_layer_norm_after(hidden_layer_{n-1}) = last_hidden_state")
    meta["mlm_logits"] = "lm_head logits at the (b, l) pairs in mlm_logits_positions only, [P, 4107]"
    meta["padding"] = ("embedding_output is exactly 0 where attention_mask == 0; later tensors at padded "
                       "positions are what the layers compute there (queries at padding attend to the "
                       "unmasked keys)")
    meta["reference_max_abs_err"] = json.dumps(ref_err)
    meta["padding_vs_unpadded_max_abs"] = repr(pad_shift)
    meta["versions"] = json.dumps(versions, sort_keys=True)
    meta["authors_files_sha256"] = json.dumps(hashes, sort_keys=True)
    save_file(tensors, os.path.join(out, "expected.safetensors"), metadata=dict(meta))
    again = load_file(os.path.join(out, "expected.safetensors"))
    assert all(torch.equal(again[k], v) for k, v in tensors.items())

    ckpt = load_file(os.path.join(out, "model.safetensors"))
    summary = OrderedDict()
    summary["name"] = name
    summary["B,L"] = [B, L]
    summary["lengths"] = attention_mask.sum(1).tolist()
    summary["saved_config_by_save_pretrained"] = saved_cfg
    summary["checkpoint"] = {k: [str(v.dtype).replace("torch.", "")] + list(v.shape) for k, v in ckpt.items()}
    summary["checkpoint_order"] = list(ckpt.keys())
    summary["expected"] = {k: [str(v.dtype).replace("torch.", "")] + list(v.shape) for k, v in tensors.items()}
    summary["reference_max_abs_err"] = ref_err
    summary["padding_vs_unpadded_max_abs"] = pad_shift
    summary["hidden_at_padding_max_abs"] = float(hidden[attention_mask == 0].abs().max()) if (attention_mask == 0).any() else 0.0
    summary["bytes"] = {f: os.path.getsize(os.path.join(out, f)) for f in sorted(os.listdir(out))}
    summary["folder_bytes"] = sum(summary["bytes"].values())
    summary["max_abs"] = {k: float(v.abs().max()) for k, v in tensors.items() if v.is_floating_point()}
    return summary


# ----------------------------------------------------------------------------------------------
# Independent float64 re-implementation (NumPy; model.safetensors + config.json only)
# ----------------------------------------------------------------------------------------------
def reference_forward(w, cfg, ids, mask, logit_pos):
    """The math, as observed in the authors' modeling_esm.py, written out independently:
      x0   = word_embeddings[ids] * mask            (no position embedding: rotary; no embedding LN;
                                                     no token-dropout scaling; position_embeddings unused)
      per layer (pre-LN):
        h  = LN_attn(x)                             (attention.LayerNorm)
        q  = (h Wq^T + bq) * head_dim^-0.5          (scaled BEFORE rotary)
        k  =  h Wk^T + bk ;  v = h Wv^T + bv
        q, k <- rotary(q), rotary(k): positions t = 0..L-1 of the PADDED row; inv_freq =
              1/10000^(arange(0, hd, 2)/hd) in float32; freqs = t (x) inv_freq in float32;
              emb = cat(freqs, freqs); x*cos(emb) + rotate_half(x)*sin(emb),
              rotate_half(x) = cat(-x[hd/2:], x[:hd/2])
        s  = q k^T + (1 - mask_key) * finfo(f32).min ; p = softmax(s) ; c = p v (heads concatenated)
        a  = c Wo^T + bo + x                        (attention.output.dense)
        g  = LN_ffn(a)                              (layer.LayerNorm)
        u  = g W1^T (+ b1)  -> [x1 | x2] halves     (intermediate.dense, 2*intermediate rows)
        x  = (silu(x1) * x2) W2^T (+ b2) + a        (output.dense; biases only if add_bias_fnn)
      out = LN_final(x)                             (encoder.emb_layer_norm_after)
      logits = LN_head(gelu_erf(out Wd^T + bd)) Wdec^T + lm_head.bias
    All LayerNorms use config layer_norm_eps."""
    import numpy as np
    f64 = {k: v.astype(np.float64) for k, v in w.items() if v.dtype.kind == "f"}
    D, H = cfg["hidden_size"], cfg["num_attention_heads"]
    hd = D // H
    eps = cfg["layer_norm_eps"]
    B, L = ids.shape

    def ln(x, p):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + eps) * f64[p + ".weight"] + f64[p + ".bias"]

    def lin(x, p, bias=True):
        y = x @ f64[p + ".weight"].T
        return y + f64[p + ".bias"] if bias else y

    inv32 = (1.0 / (10000 ** (np.arange(0, hd, 2, dtype=np.float32) / np.float32(hd)))).astype(np.float32)
    t32 = np.arange(L, dtype=np.float32)
    freqs32 = np.outer(t32, inv32).astype(np.float32)
    emb32 = np.concatenate([freqs32, freqs32], -1)
    cos, sin = np.cos(emb32).astype(np.float64), np.sin(emb32).astype(np.float64)

    def rot(x):  # [B, H, L, hd]
        half = hd // 2
        return x * cos + np.concatenate([-x[..., half:], x[..., :half]], -1) * sin

    out = OrderedDict()
    x = f64["esm.embeddings.word_embeddings.weight"][ids] * mask[..., None]
    out["embedding_output"] = x
    add = (1.0 - mask.astype(np.float64))[:, None, None, :] * float(np.finfo(np.float32).min)
    bias_fnn = cfg["add_bias_fnn"]
    for i in range(cfg["num_hidden_layers"]):
        p = f"esm.encoder.layer.{i}."
        stored = w[p + "attention.self.rotary_embeddings.inv_freq"] if (
            p + "attention.self.rotary_embeddings.inv_freq") in w else None
        if stored is not None:
            assert np.array_equal(stored, inv32), (stored, inv32)
        h = ln(x, p + "attention.LayerNorm")
        split = lambda y: y.reshape(B, L, H, hd).transpose(0, 2, 1, 3)  # noqa: E731
        q = split(lin(h, p + "attention.self.query")) * hd ** -0.5
        k = split(lin(h, p + "attention.self.key"))
        v = split(lin(h, p + "attention.self.value"))
        q, k = rot(q), rot(k)
        s = q @ k.transpose(0, 1, 3, 2) + add
        s = s - s.max(-1, keepdims=True)
        e = np.exp(s)
        pr = e / e.sum(-1, keepdims=True)
        c = (pr @ v).transpose(0, 2, 1, 3).reshape(B, L, D)
        a = lin(c, p + "attention.output.dense") + x
        g = ln(a, p + "LayerNorm")
        u = lin(g, p + "intermediate.dense", bias_fnn)
        I = u.shape[-1] // 2
        assert I == cfg["intermediate_size"]
        x1, x2 = u[..., :I], u[..., I:]
        act = x1 / (1.0 + np.exp(-x1)) * x2
        x = lin(act, p + "output.dense", bias_fnn) + a
        out[f"hidden_layer_{i}"] = x
    hfin = ln(x, "esm.encoder.emb_layer_norm_after")
    out["hidden_states"] = hfin
    sel = hfin[logit_pos[:, 0], logit_pos[:, 1]]
    z = lin(sel, "lm_head.dense")
    z = z * 0.5 * (1.0 + np.vectorize(math.erf)(z / math.sqrt(2.0)))
    z = ln(z, "lm_head.layer_norm")
    out["mlm_logits"] = z @ f64["lm_head.decoder.weight"].T + f64["lm_head.bias"]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--src", default=DEFAULT_SRC, help="folder holding the authors' package ntv2/")
    ap.add_argument("--hub", default=None, help="folder with the published config.json, vocab.txt, "
                    "tokenizer_config.json, special_tokens_map.json (default: <src>/hub)")
    ap.add_argument("--data", default=DEFAULT_DATA, help="folder with test.csv")
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--only", nargs="*", default=None, help="fixture names (default: all + tokenizer)")
    ap.add_argument("--summary", default=None, help="also write the summary as JSON here")
    args = ap.parse_args()
    hub = args.hub or os.path.join(args.src, "hub")

    import numpy
    import safetensors
    import tokenizers
    import torch
    import transformers
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    versions = OrderedDict(python=sys.version.split()[0], torch=torch.__version__,
                           transformers=transformers.__version__, tokenizers=tokenizers.__version__,
                           numpy=numpy.__version__, safetensors=safetensors.__version__)
    M, EsmConfig, hashes = import_authors(args.src, hub)
    os.makedirs(args.out, exist_ok=True)
    summary = OrderedDict(versions=versions, authors_files_sha256=hashes)
    test_seqs = read_sequences(os.path.join(args.data, "test.csv"))

    tdir = os.path.join(args.out, "tokenizer")
    if args.only is None or "tokenizer" in args.only:
        tok, summary["tokenizer"] = tokenizer_fixture(hub, tdir, test_seqs)
    else:
        tok = load_tokenizer(hub)

    fixtures = [fx for fx in FIXTURES if args.only is None or fx["name"] in args.only]
    summary["fixtures"] = [run_fixture(M, EsmConfig, fx, tok, hub, test_seqs[100:], args.out, versions, hashes)
                           for fx in fixtures]

    text = json.dumps(summary, indent=1)
    print(text)
    if args.summary:
        with open(args.summary, "w") as f:
            f.write(text + "\n")
    total = 0
    for root, _, files in os.walk(args.out):
        for f in files:
            total += os.path.getsize(os.path.join(root, f))
    print(f"total fixture bytes under {args.out}: {total}")


if __name__ == "__main__":
    main()
