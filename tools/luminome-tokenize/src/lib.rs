//! `luminome-tokenize`: DNA → token ids.
//!
//! - [`bases`]: cleaning input letters to ACGTN with a soft-mask flag.
//! - [`scheme`]: the nucleotide, k-mer and HuggingFace tokenizer schemes and their vocabularies.
//! - [`source`]: FASTA/FASTQ (streamed in windows), CSV/TSV tables and BED + reference → units.
//! - [`pairs`]: (query, passage) pair tables → retrieval pairs datasets for dual encoders.
//! - `inputs`, `outputs`: a run's input files (formats, labels, `--split`'s first pass) and the
//!   datasets it writes (one, or one per split).
//! - [`pipeline`]: the run: read on one thread, tokenize and write the dataset on another.
//! - [`args`]: the command line.

pub mod args;
pub mod bases;
mod inputs;
mod outputs;
pub mod pairs;
pub mod pipeline;
pub mod scheme;
pub mod shard;
pub mod source;
pub mod split;
