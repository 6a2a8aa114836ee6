"""Trains the small DNA BPE tokenizer in this folder (DNABERT-2 style: BPE over A/C/G/T/N, with
[PAD] [UNK] [CLS] [SEP] [MASK] specials) on test-data/gue_prom_core_all/train.csv.

    python3 test-data/tokenizers/make_dna_bpe.py   # from the repository root

DNABERT-2's own tokenizer.json cannot be fetched on our machines (no model hub access); this one
has the same structure at a smaller vocabulary (256), so the `--scheme hf` code path is tested
on a real BPE model."""

import csv
from tokenizers import Tokenizer, models, trainers, pre_tokenizers

seqs = [row["sequence"] for row in csv.DictReader(open("test-data/gue_prom_core_all/train.csv"))]
tok = Tokenizer(models.BPE(unk_token="[UNK]"))
tok.pre_tokenizer = pre_tokenizers.Whitespace()
trainer = trainers.BpeTrainer(
    vocab_size=256,
    special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"],
    initial_alphabet=list("ACGTN"),
    show_progress=False,
)
tok.train_from_iterator(seqs, trainer)
tok.save("test-data/tokenizers/dna_bpe_256.json")
