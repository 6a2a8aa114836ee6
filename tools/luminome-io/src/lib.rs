//! File formats and genomics I/O shared by the Luminome tools.
//!
//! One module per format, readers and writers side by side; records are plain types; every
//! error about user input names the file and the line or record ([`error::InputError`]).

pub mod atomic;
pub mod bed;
pub mod bedgraph;
pub mod compress;
pub mod error;
pub mod fastx;
pub mod npz;
pub mod reference;
pub mod seqtable;
pub mod tensorfile;
pub mod token_dataset;

pub use error::InputError;
