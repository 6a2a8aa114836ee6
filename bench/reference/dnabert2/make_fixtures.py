#!/usr/bin/env python3
"""Generate DNABERT-2 (MosaicBERT: ALiBi attention, GEGLU feed-forward) reference fixtures.

This is our own driver script. It imports the authors' modeling code (the hub repo
zhihan1996/DNABERT-2-117M: bert_layers.py, bert_padding.py, configuration_bert.py), which is kept
OUTSIDE this repository as a package `dnabert2/` under --src. It builds tiny random models from the
authors' BertConfig in float32 on the CPU, saves them with `save_pretrained(safe_serialization=True)`
and writes the expected outputs of the authors' forward pass next to them.

Attention path: `flash_attn_triton.py` is NOT part of the package under --src, and
`sys.modules["dnabert2.flash_attn_triton"]` is set to None before bert_layers is imported, so the
authors' own `try: from .flash_attn_triton import ... except ImportError: ... = None` (bert_layers.py
lines 28-31) leaves `flash_attn_qkvpacked_func = None`, and BertUnpadSelfAttention.forward takes its
pure-PyTorch branch (lines 161-172). This is asserted.

The published tokenizer.json (read from --hub, a copy of the hub files kept outside this repository)
is copied into tests/fixtures/dnabert2/tokenizer/ together with expected token ids. The tiny models
use a 64-token stand-in BPE tokenizer with the same structure (see build_small_tokenizer), because a
4096-row vocabulary would not fit the fixture size budget.

Run (see tests/fixtures/dnabert2/README.md):
  nice /work/venvs/dnabert2-ref/bin/python bench/reference/dnabert2/make_fixtures.py
"""

import argparse
import csv
import hashlib
import json
import os
import shutil
import sys
import warnings
from collections import OrderedDict

DEFAULT_SRC = "/work/venvs/dnabert2-src"
REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
DEFAULT_OUT = os.path.join(REPO_ROOT, "tools", "luminome-engine", "tests", "fixtures", "dnabert2")
DEFAULT_DATA = os.path.join(REPO_ROOT, "test-data", "gue_prom_core_all")

SPECIALS = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"]  # ids 0..4, as published
PAD_ID, CLS_ID, SEP_ID, MASK_ID = 3, 1, 2, 4

# The published config.json (hub commit d064dece, 2024-02-22 "Update config.json"), key order kept.
# Only the size-related values are replaced per fixture. It has no "architectures", no "model_type"
# and no "pad_token_id" (the first upload, 634202c, had "architectures": ["BertForMaskedLM"] and
# "model_type": "bert"; both were dropped on 2024-02-22).
PUBLISHED_AUTO_MAP = OrderedDict([
    ("AutoConfig", "configuration_bert.BertConfig"),
    ("AutoModel", "bert_layers.BertModel"),
    ("AutoModelForMaskedLM", "bert_layers.BertForMaskedLM"),
    ("AutoModelForSequenceClassification", "bert_layers.BertForSequenceClassification"),
])


def published_config(**sizes):
    cfg = OrderedDict([
        ("_name_or_path", "zhihan1996/DNABERT-2-117M"),
        ("alibi_starting_size", 512),
        ("attention_probs_dropout_prob", 0.0),
        ("auto_map", OrderedDict(PUBLISHED_AUTO_MAP)),
        ("classifier_dropout", None),
        ("gradient_checkpointing", False),
        ("hidden_act", "gelu"),
        ("hidden_dropout_prob", 0.1),
        ("hidden_size", 768),
        ("initializer_range", 0.02),
        ("intermediate_size", 3072),
        ("layer_norm_eps", 1e-12),
        ("max_position_embeddings", 512),
        ("num_attention_heads", 12),
        ("num_hidden_layers", 12),
        ("position_embedding_type", "absolute"),
        ("torch_dtype", "float32"),
        ("transformers_version", "4.28.0"),
        ("type_vocab_size", 2),
        ("use_cache", True),
        ("vocab_size", 4096),
    ])
    for k, v in sizes.items():
        assert k in cfg, f"not a published config key: {k}"
        cfg[k] = v
    return cfg


FIXTURES = [
    # tiny: 4 heads (power of two: plain ALiBi slopes), L = 24 < alibi_starting_size = 64
    dict(name="tiny", kind="mlm", seed=2001, batch=4, seq_len=24, lengths=[24, 17, 24, 9], left_pad=[],
         mask_positions={0: 5, 2: 11},
         sizes=dict(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                    intermediate_size=64, alibi_starting_size=64, hidden_dropout_prob=0.0,
                    max_position_embeddings=64)),
    # heads6_long: 6 heads (not a power of two: the extra-slope branch, as the published 12 heads),
    # L = 80 > alibi_starting_size = 64 (the encoder rebuilds its ALiBi tensor). Row 2 is LEFT-padded.
    dict(name="heads6_long", kind="mlm", seed=2002, batch=3, seq_len=80, lengths=[80, 50, 61], left_pad=[2],
         mask_positions={0: 40},
         sizes=dict(vocab_size=64, hidden_size=24, num_hidden_layers=2, num_attention_heads=6,
                    intermediate_size=48, alibi_starting_size=64, hidden_dropout_prob=0.1,
                    max_position_embeddings=64)),
    # tiny_seqcls: BertForSequenceClassification (pooler + classifier), the layout of a fine-tuned
    # DNABERT-2 classifier saved with save_pretrained.
    dict(name="tiny_seqcls", kind="seqcls", seed=2003, batch=4, seq_len=24, lengths=[24, 13, 20, 24], left_pad=[],
         mask_positions={},
         sizes=dict(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                    intermediate_size=64, alibi_starting_size=64, hidden_dropout_prob=0.0,
                    max_position_embeddings=64)),
]

PERTURB_STD = 0.1


# ----------------------------------------------------------------------------------------------
# Authors' code
# ----------------------------------------------------------------------------------------------
def import_authors(src):
    if src not in sys.path:
        sys.path.insert(0, src)
    # No Triton flash attention: make the relative import fail so the authors' except-branch sets
    # flash_attn_qkvpacked_func = None.
    sys.modules["dnabert2.flash_attn_triton"] = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import dnabert2.bert_layers as BL  # noqa: E402
        import dnabert2.bert_padding as BP  # noqa: E402,F401
        from dnabert2.configuration_bert import BertConfig  # noqa: E402
    assert BL.flash_attn_qkvpacked_func is None, "Triton attention must not be used"
    files = {}
    for f in ("bert_layers.py", "bert_padding.py", "configuration_bert.py"):
        with open(os.path.join(src, "dnabert2", f), "rb") as fh:
            files[f] = hashlib.sha256(fh.read()).hexdigest()
    return BL, BertConfig, files


def sha256_file(path):
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


# ----------------------------------------------------------------------------------------------
# Tokenizers
# ----------------------------------------------------------------------------------------------
def read_sequences(path):
    with open(path) as f:
        return [row["sequence"] for row in csv.DictReader(f)]


def build_small_tokenizer(train_seqs, vocab_size=64):
    """A stand-in with the published tokenizer.json's structure: BPE model (unk [UNK], no
    continuing-subword prefix / end-of-word suffix, fuse_unk false), normalizer null, Whitespace
    pre-tokenizer, TemplateProcessing "[CLS] $A [SEP]" / "[CLS] $A [SEP] $B:1 [SEP]:1", decoder
    null; specials [UNK]0 [CLS]1 [SEP]2 [PAD]3 [MASK]4, then A5 C6 G7 T8 and merges."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors, trainers
    tok = Tokenizer(models.BPE(unk_token="[UNK]", fuse_unk=False))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(SPECIALS), show_progress=False,
                                  min_frequency=2)
    tok.train_from_iterator(train_seqs, trainer=trainer)
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", CLS_ID), ("[SEP]", SEP_ID)])
    vocab = tok.get_vocab()
    for i, s in enumerate(SPECIALS):
        assert vocab[s] == i, (s, vocab[s])
    assert [vocab[c] for c in "ACGT"] == [5, 6, 7, 8], [vocab[c] for c in "ACGT"]
    assert tok.get_vocab_size() == vocab_size
    return tok


def write_tokenizer_files(tok_json_path, published_tok_cfg, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    shutil.copyfile(tok_json_path, os.path.join(out_dir, "tokenizer.json"))
    with open(os.path.join(out_dir, "tokenizer_config.json"), "wb") as f:
        f.write(published_tok_cfg)


def check_same_structure(small_json, published_json):
    a, b = json.load(open(small_json)), json.load(open(published_json))
    for k in ("normalizer", "pre_tokenizer", "post_processor", "decoder", "truncation", "padding"):
        assert a[k] == b[k], (k, a[k], b[k])
    assert [t["content"] for t in a["added_tokens"]] == [t["content"] for t in b["added_tokens"]]
    assert [t["id"] for t in a["added_tokens"]] == [t["id"] for t in b["added_tokens"]]
    for k in ("type", "dropout", "unk_token", "continuing_subword_prefix", "end_of_word_suffix", "fuse_unk"):
        assert a["model"][k] == b["model"][k], (k, a["model"][k], b["model"][k])


def encode_both(tok_json, tok_dir, seqs):
    """ids from tokenizers.Tokenizer and from transformers (PreTrainedTokenizerFast(tokenizer_file=...)
    and AutoTokenizer.from_pretrained(dir)); asserts all three agree."""
    from tokenizers import Tokenizer
    from transformers import AutoTokenizer, PreTrainedTokenizerFast
    raw = Tokenizer.from_file(tok_json)
    fast = PreTrainedTokenizerFast(tokenizer_file=tok_json)
    auto = AutoTokenizer.from_pretrained(tok_dir)
    assert type(auto).__name__ == "PreTrainedTokenizerFast", type(auto)
    assert auto.pad_token_id == PAD_ID and auto.cls_token_id == CLS_ID and auto.mask_token_id == MASK_ID
    out = []
    for s in seqs:
        ids = raw.encode(s).ids
        f_ids = fast(s, add_special_tokens=True)["input_ids"]
        a_ids = auto(s, add_special_tokens=True)["input_ids"]
        assert ids == f_ids == a_ids, (s, ids, f_ids, a_ids)
        out.append(ids)
    return out


EDGE_ROWS = [
    ("edge_lowercase", "acgtacgtaacc"),
    ("edge_mixed_case", "ACGTacgtACGT"),
    ("edge_with_N", "ACGTNNACGTTTGA"),
    ("edge_single_base", "G"),
    ("edge_empty", ""),
    ("edge_spaces", "ACGT ACGT"),
    ("edge_iupac_R", "ACRGT"),
]


def write_expected_ids(path, rows):
    with open(path, "w", newline="") as f:
        f.write("row\tsequence\tids\n")
        for r, seq, ids in rows:
            f.write(f"{r}\t{seq}\t{','.join(str(i) for i in ids)}\n")


# ----------------------------------------------------------------------------------------------
# Models
# ----------------------------------------------------------------------------------------------
def make_config(BertConfig, fx):
    sizes = dict(fx["sizes"])
    cfg_dict = published_config(**sizes)
    kwargs = {k: v for k, v in cfg_dict.items() if k not in ("_name_or_path", "transformers_version", "torch_dtype")}
    if fx["kind"] == "seqcls":
        kwargs["num_labels"] = 2
    cfg = BertConfig(**kwargs)
    return cfg, cfg_dict


def perturb(model, seed):
    """Add N(0, PERTURB_STD^2) to every parameter (sorted by name, one seeded generator), so that
    LayerNorm weights/biases and all biases are non-trivial."""
    import torch
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters(), key=lambda kv: kv[0]):
            p.add_(PERTURB_STD * torch.randn(p.shape, generator=gen, dtype=p.dtype))


def make_inputs(fx, tok, seqs):
    """Real promoter sequences (test.csv) encoded with the fixture tokenizer; rows truncated to the
    requested lengths ([CLS] ... [SEP]) and padded with [PAD]=3 / attention 0. Right padding, except
    the rows listed in left_pad. A few tokens are replaced by [MASK]=4."""
    import torch
    B, L = fx["batch"], fx["seq_len"]
    ids = torch.full((B, L), PAD_ID, dtype=torch.long)
    am = torch.zeros((B, L), dtype=torch.long)
    k = 0
    for b in range(B):
        n = fx["lengths"][b]
        body = []
        while len(body) < n - 2:  # concatenate sequences until long enough
            body += tok.encode(seqs[k], add_special_tokens=False).ids
            k += 1
        row = [CLS_ID] + body[: n - 2] + [SEP_ID]
        if b in fx["mask_positions"]:
            row[fx["mask_positions"][b]] = MASK_ID
        start = L - n if b in fx["left_pad"] else 0
        ids[b, start:start + n] = torch.tensor(row)
        am[b, start:start + n] = 1
    return ids, am


def run_fixture(BL, BertConfig, fx, tok, tok_dir, seqs, out_root, versions, src_hashes):
    import torch
    from safetensors.torch import save_file, load_file
    name = fx["name"]
    out = os.path.join(out_root, name)
    if os.path.isdir(out):
        shutil.rmtree(out)
    os.makedirs(out)
    cfg, cfg_dict = make_config(BertConfig, fx)

    torch.manual_seed(fx["seed"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if fx["kind"] == "mlm":
            model = BL.BertForMaskedLM(cfg)
        else:
            model = BL.BertForSequenceClassification(cfg)
    model.eval()
    perturb(model, fx["seed"] + 1)
    bert = model.bert
    if fx["kind"] == "mlm":
        assert model.cls.predictions.decoder.weight is bert.embeddings.word_embeddings.weight
        assert bert.pooler is None
    else:
        assert bert.pooler is not None

    encoder = bert.encoder
    alibi_size_before = encoder._current_alibi_size
    input_ids, attention_mask = make_inputs(fx, tok, seqs)
    B, L = input_ids.shape

    with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        emb = bert.embeddings(input_ids, torch.zeros_like(input_ids), None)
        seq_out, pooled = bert(input_ids, attention_mask=attention_mask)
        alibi_size_after = encoder._current_alibi_size
        # per-layer outputs, UNPADDED [nnz, D] (bert_layers.py: output_all_encoded_layers=True keeps
        # the unpadded per-layer tensors; only the final hidden_states are re-padded)
        # (called on the encoder directly: BertModel.forward with output_all_encoded_layers=True
        # would apply the pooler to the unpadded last layer, bert_layers.py lines 615-618)
        layers = encoder(emb, attention_mask, output_all_encoded_layers=True)
        if fx["kind"] == "mlm":
            logits = model(input_ids=input_ids, attention_mask=attention_mask).logits
            assert torch.equal(logits, model.cls(seq_out))
        else:
            logits = model(input_ids=input_ids, attention_mask=attention_mask).logits
            assert torch.equal(logits, model.classifier(pooled))
    rebuilt = [str(w.message) for w in caught if "Increasing alibi size" in str(w.message)]
    assert bool(rebuilt) == (L > fx["sizes"]["alibi_starting_size"]), rebuilt
    assert seq_out.shape == (B, L, cfg.hidden_size)
    # padded positions of the final hidden states are exactly zero (pad_input scatters into zeros)
    pad = attention_mask == 0
    assert torch.count_nonzero(seq_out[pad]) == 0
    assert len(layers) == cfg.num_hidden_layers
    nnz = int(attention_mask.sum())
    assert all(t.shape == (nnz, cfg.hidden_size) for t in layers)
    assert torch.equal(layers[-1], seq_out[attention_mask.bool()])

    # ALiBi slopes as the authors' encoder holds them: alibi[0, h, 0, 1] = -slope_h * |0 - 1|
    alibi = encoder.alibi
    slopes = (-alibi[0, :, 0, 1]).contiguous().float()
    # the bias is -slope * |i - j| (symmetric), check on the whole tensor
    idx = torch.arange(alibi.shape[-1])
    rel = (idx[None, :] - idx[:, None]).abs()
    assert torch.equal(alibi[0], slopes[:, None, None] * -rel[None].expand(len(slopes), -1, -1).to(alibi.dtype))

    # save the checkpoint exactly as the hub layout (model.safetensors + config.json)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.save_pretrained(out, safe_serialization=True)
    saved_cfg_path = os.path.join(out, "config.json")
    saved_cfg = json.load(open(saved_cfg_path))
    if fx["kind"] == "mlm":
        # config.json = the published key set, our sizes (a user's download has these keys)
        with open(saved_cfg_path, "w") as f:
            json.dump(cfg_dict, f, indent=2)
            f.write("\n")
    else:
        # keep what save_pretrained wrote (what fine-tuning with the authors' code produces)
        assert saved_cfg.get("auto_map") == dict(PUBLISHED_AUTO_MAP), saved_cfg.get("auto_map")
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copyfile(os.path.join(tok_dir, f), os.path.join(out, f))

    # reload through the authors' classes from the written directory and check bitwise equality
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cfg2 = BertConfig.from_pretrained(out)
        cls = BL.BertForMaskedLM if fx["kind"] == "mlm" else BL.BertForSequenceClassification
        model2 = cls.from_pretrained(out, config=cfg2).eval()
        with torch.no_grad():
            logits2 = model2(input_ids=input_ids, attention_mask=attention_mask).logits
            seq2 = model2.bert(input_ids, attention_mask=attention_mask)[0]
    assert torch.equal(logits2, logits) and torch.equal(seq2, seq_out), "reload mismatch"

    tensors = OrderedDict()
    tensors["input_ids"] = input_ids.contiguous()
    tensors["attention_mask"] = attention_mask.contiguous()
    tensors["embedding_output"] = emb.contiguous()
    for i, t in enumerate(layers):
        tensors[f"layer_{i}_unpadded"] = t.contiguous()
    tensors["hidden_states"] = seq_out.contiguous()
    if pooled is not None:
        tensors["pooled"] = pooled.contiguous()
    if fx["kind"] == "mlm":
        tensors["mlm_logits"] = logits.contiguous()
    else:
        tensors["cls_logits"] = logits.contiguous()
    tensors["alibi_slopes"] = slopes
    meta = OrderedDict()
    meta["fixture"] = name
    meta["model_class"] = type(model).__name__
    meta["config"] = json.dumps(json.load(open(saved_cfg_path)), sort_keys=True)  # = config.json
    meta["seed"] = str(fx["seed"])
    meta["perturb"] = f"every parameter += {PERTURB_STD}*N(0,1), torch.Generator seed {fx['seed'] + 1}, sorted by name"
    meta["token_type_ids"] = "none passed (BertModel.forward uses zeros)"
    meta["alibi_size_before"] = str(alibi_size_before)
    meta["alibi_size_after"] = str(alibi_size_after)
    meta["alibi_rebuilt"] = json.dumps(bool(rebuilt))
    meta["padding"] = ("hidden_states is exactly 0 where attention_mask == 0; mlm_logits there = "
                       "cls head applied to that zero vector (compare unmasked positions only)")
    meta["layer_k_unpadded"] = "rows = positions with attention_mask == 1 in row-major (b, l) order"
    meta["versions"] = json.dumps(versions, sort_keys=True)
    meta["authors_files_sha256"] = json.dumps(src_hashes, sort_keys=True)
    save_file(tensors, os.path.join(out, "expected.safetensors"), metadata=dict(meta))
    again = load_file(os.path.join(out, "expected.safetensors"))
    assert all(torch.equal(again[k], v) for k, v in tensors.items())

    ckpt = load_file(os.path.join(out, "model.safetensors"))
    summary = OrderedDict()
    summary["name"] = name
    summary["class"] = type(model).__name__
    summary["B,L"] = [B, L]
    summary["lengths"] = attention_mask.sum(1).tolist()
    summary["alibi"] = f"{alibi_size_before} -> {alibi_size_after}"
    summary["slopes"] = [float(x) for x in slopes]
    summary["checkpoint"] = {k: list(v.shape) for k, v in sorted(ckpt.items())}
    summary["expected"] = {k: list(v.shape) for k, v in tensors.items()}
    summary["bytes"] = {f: os.path.getsize(os.path.join(out, f)) for f in sorted(os.listdir(out))}
    summary["max_abs"] = {k: float(v.abs().max()) for k, v in tensors.items() if v.is_floating_point()}
    return summary


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--src", default=DEFAULT_SRC, help="folder holding the authors' package dnabert2/")
    ap.add_argument("--hub", default=None, help="folder with the published tokenizer.json / tokenizer_config.json "
                    "(default: <src>/hub)")
    ap.add_argument("--data", default=DEFAULT_DATA, help="folder with train.csv / test.csv")
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
    BL, BertConfig, src_hashes = import_authors(args.src)
    os.makedirs(args.out, exist_ok=True)
    summary = OrderedDict(versions=versions, authors_files_sha256=src_hashes)

    pub_tok_json = os.path.join(hub, "tokenizer.json")
    pub_tok_cfg = open(os.path.join(hub, "tokenizer_config.json"), "rb").read()
    test_seqs = read_sequences(os.path.join(args.data, "test.csv"))
    train_seqs = read_sequences(os.path.join(args.data, "train.csv"))

    # 1. the published tokenizer + expected ids
    if args.only is None or "tokenizer" in args.only:
        tdir = os.path.join(args.out, "tokenizer")
        if os.path.isdir(tdir):
            shutil.rmtree(tdir)
        write_tokenizer_files(pub_tok_json, pub_tok_cfg, tdir)
        seqs = test_seqs[:200] + [s for _, s in EDGE_ROWS]
        ids = encode_both(os.path.join(tdir, "tokenizer.json"), tdir, seqs)
        rows = [(str(i), s, x) for i, (s, x) in enumerate(zip(seqs[:200], ids[:200]))]
        rows += [(n, s, x) for (n, s), x in zip(EDGE_ROWS, ids[200:])]
        write_expected_ids(os.path.join(tdir, "expected_ids.tsv"), rows)
        summary["tokenizer"] = OrderedDict(
            published_sha256=sha256_file(pub_tok_json), vocab=len(json.load(open(pub_tok_json))["model"]["vocab"]),
            rows=len(rows), edges={n: x for (n, _), x in zip(EDGE_ROWS, ids[200:])},
            max_id=max(max(x) for x in ids), tokens_per_test_row=[min(len(x) for x in ids[:200]),
                                                                   max(len(x) for x in ids[:200])])

    # 2. the 64-token stand-in tokenizer the tiny models use
    small = build_small_tokenizer(train_seqs)
    small2 = build_small_tokenizer(train_seqs)
    assert small.to_str() == small2.to_str(), "BPE training is not deterministic"
    small_dir = os.path.join(args.out, ".small_tokenizer.tmp")
    os.makedirs(small_dir, exist_ok=True)
    small.save(os.path.join(small_dir, "tokenizer.json"))
    with open(os.path.join(small_dir, "tokenizer_config.json"), "wb") as f:
        f.write(pub_tok_cfg)
    check_same_structure(os.path.join(small_dir, "tokenizer.json"), pub_tok_json)
    encode_both(os.path.join(small_dir, "tokenizer.json"), small_dir, test_seqs[:50] + [s for _, s in EDGE_ROWS])

    try:
        fixtures = [fx for fx in FIXTURES if args.only is None or fx["name"] in args.only]
        summary["fixtures"] = [run_fixture(BL, BertConfig, fx, small, small_dir, test_seqs[200:], args.out,
                                           versions, src_hashes) for fx in fixtures]
    finally:
        shutil.rmtree(small_dir, ignore_errors=True)

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
