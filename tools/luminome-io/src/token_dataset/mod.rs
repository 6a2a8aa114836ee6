//! The token dataset: what `luminome-tokenize` and `luminome-mask-pairs` write and the model
//! tools read.
//!
//! One safetensors file (or numbered shards `<stem>.00000.safetensors`, ... for large inputs)
//! holding, for N records padded to length L:
//!
//! | tensor | dtype | shape | meaning |
//! |---|---|---|---|
//! | `input_ids` | smallest unsigned type holding the vocabulary | [N, L] | token ids, padded with the pad id |
//! | `attention_mask` | u8 | [N, L] | 1 for real tokens (specials included), 0 for padding |
//! | `labels` | i64 | [N] | optional: the record's integer label |
//! | `soft_mask` | u8 | [N, L] | optional: 1 where the token covers a lowercase (repeat-masked) base |
//!
//! `__metadata__` holds `kind` (`luminome.token_dataset`), `format_version`, and `luminome`: a
//! JSON document ([`TokenDatasetMeta`]) with the tokenizer (vocabulary included), the sources,
//! the tool version and command line. Beside it, `<stem>.index.tsv` has one line per record
//! (see [`IndexRow`]).
//!
//! - [`meta`]: what a dataset says about itself: the tokenizer (scheme, vocabulary, special
//!   tokens) and the dataset metadata.
//! - [`index`]: the record index TSV.
//! - [`writer`] / [`reader`]: writing with memory bounded by one record; memory-mapped reading.

pub mod index;
pub mod meta;
pub mod reader;
pub mod writer;

pub use index::{
    index_path_for, read_index, shard_path, side_path_for, IndexRow, Interval, PendingRows,
    INDEX_HEADER, INDEX_HEADER_V1, UNKNOWN_LENGTH,
};
pub use meta::{
    special, tokenizer_of, TokenDatasetMeta, TokenizerInfo, TokenizerScheme, TOKEN_DATASET_KIND,
    TOKEN_DATASET_VERSION,
};
pub use reader::{TokenBatch, TokenDataset};
pub use writer::{TokenDatasetWriter, TokenDatasetWriterOptions, TokenRow};
