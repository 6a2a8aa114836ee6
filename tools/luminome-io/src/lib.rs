//! File formats and genomics I/O shared by the Luminome tools.
//!
//! One module per format, readers and writers side by side; records are plain types; every
//! error about user input names the file and the line or record ([`error::InputError`]).

pub mod atomic;
pub mod bam;
pub mod bed;
pub mod bedgraph;
pub mod bigwig;
mod byte_loops;
pub mod compress;
pub mod error;
pub mod esm_vocab;
pub mod expression;
pub mod fastx;
pub mod fragments;
pub mod hf_checkpoint;
pub mod masking;
pub mod motif;
pub mod npz;
pub mod pair_dataset;
pub mod panics;
pub mod python_probe;
pub mod reference;
pub mod region_dataset;
pub mod retrieval_pairs;
pub mod seqtable;
pub mod table;
pub mod temps;
pub mod tensorfile;
pub mod token_dataset;
pub mod tss;
pub mod variant_scores;
pub mod variants;

pub use error::InputError;
