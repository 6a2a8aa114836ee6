//! Expression prediction from region × feature matrices (the spec's fine-tuning): the region
//! encoder (from scratch, or `--init` a masked-region pretraining checkpoint) and one of two
//! heads, trained with the Poisson negative log-likelihood (the spec) or MSE:
//!
//! - **attention pooling** (the spec): z = Σ α_i h_i, α = softmax(wᵀh) over the real regions,
//!   ŷ = MLP(z);
//! - **TSS region** (the published GET model's head): a per-region linear layer + softplus,
//!   read at the region holding the TSS.
//!
//! Optionally a linear path on the TSS region's and the window's summaries is added to either
//! head (`linear_path`), started at the ridge solution.
//!
//! - [`config`]: [`ExpressionConfig`]; [`model`]: [`ExpressionModel`] and its heads.
//! - [`task`]: [`ExpressionTask`]; [`setup`]: `luminome-train expression`.
//! - [`predictor`]: `luminome-predict` (per-sample TSV, metrics overall and per cell type).
//! - [`explain`]: pooling weights and gradient × input for `luminome-importance`.

pub mod config;
pub mod explain;
pub mod linear_path;
pub mod model;
pub mod predictor;
pub mod setup;
pub mod task;

pub use config::{ExpressionConfig, ExpressionHead, ExpressionLoss};
pub use model::ExpressionModel;
pub use predictor::{ExpressionInput, ExpressionPredictor};
pub use setup::ExpressionArgs;
pub use task::ExpressionTask;
