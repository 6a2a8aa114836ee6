//! The paired token dataset: two strands A and B of each window, the same positions masked on
//! both, for the bi-strand masked LM. Written by `luminome-mask-pairs`, read by the model tools.
//!
//! One safetensors file with, for N records of length L (nucleotide vocabulary, no [CLS]/[SEP]):
//!
//! | tensor | dtype | shape | meaning |
//! |---|---|---|---|
//! | `ids_a`, `ids_b` | u8 | [N, L] | the model's input: token ids with the masked positions replaced ([MASK], or with BERT replacement a random base / kept) |
//! | `labels_a`, `labels_b` | i8 | [N, L] | the original id at masked positions, −100 (PyTorch's ignore index) elsewhere |
//! | `mask_positions` | u8 | [N, L] | 1 at the masked positions (the same on both strands) |
//! | `attention_mask` | u8 | [N, L] | 1 for a base, 0 for padding (windows past a contig end) |
//!
//! Index i of A and index i of B are the same base pair: B is stored in A's orientation (for the
//! complement pairing, B[i] is the complement of A[i], read 3'→5'), so masking index i on both
//! hides one base pair from both strands and neither can read it off its partner.
//!
//! `__metadata__`: `kind` (`luminome.pair_dataset`), `format_version`, `luminome` (JSON,
//! [`PairDatasetMeta`]). Beside it `<stem>.index.tsv`, one row per record ([`PairIndexRow`]).

pub mod index;
pub mod meta;
pub mod reader;
pub mod writer;

pub use index::{read_pair_index, PairIndexRow, VariantSite, PAIR_INDEX_COLUMNS};
pub use meta::{
    MaskMode, PairDatasetMeta, PairMaskingInfo, Pairing, IGNORE_INDEX, PAIR_DATASET_KIND,
    PAIR_DATASET_VERSION,
};
pub use reader::{PairBatch, PairDataset};
pub use writer::{PairDatasetWriter, PairRow};
