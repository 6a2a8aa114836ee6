//! The dual encoder (specs/genetic-attention-dual-encoder.md): a query encoder and a passage
//! encoder (separate weights, or one shared), masked mean pooling, L2 normalisation, cosine
//! similarity, trained with InfoNCE on in-batch negatives; evaluated by ranking a passage corpus
//! (MRR, MAP, NDCG, P/R/Hit@K). Either encoder may use genetic attention
//! (`--attention genetic`).
//!
//! - [`config`]: [`DualConfig`]; [`model`]: [`DualEncoder`].
//! - [`batches`]: micro-batches without duplicate positives, and the negatives to exclude.
//! - [`retrieval`]: embedding queries and a corpus, ranking, metrics (training's dev evaluation
//!   and `luminome-predict`).
//! - [`task`]: [`DualTask`]; [`setup`]: `luminome-train dual` ([`DualArgs`]).

pub mod batches;
pub mod config;
pub mod model;
pub mod retrieval;
pub mod setup;
pub mod task;

pub use config::DualConfig;
pub use model::DualEncoder;
pub use setup::DualArgs;
pub use task::DualTask;
