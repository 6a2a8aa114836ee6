//! Classification metrics (and regression metrics for expression models, [`regression`]) shared by training evaluation (`luminome-train`) and `luminome-predict`.
//!
//! Pure Rust, no model code. Classes are indices `0..n_classes`; scores are one row of class
//! probabilities per example (row-major `[n, n_classes]`). Definitions follow scikit-learn so
//! numbers can be checked against it (a fixture made with sklearn is tested in `tests/`):
//!
//! - **accuracy**: correct / total.
//! - **AUROC**: the Mann-Whitney U statistic from ranks, ties given their average rank (so a tied
//!   positive/negative pair counts one half) — equal to the trapezoidal area under the ROC curve.
//!   Multi-class: one-vs-rest per class, unweighted mean (sklearn `multi_class="ovr"`,
//!   `average="macro"`). Undefined (`None`) when a class has no positives or no negatives.
//! - **AUPRC**: *average precision* as sklearn defines it, `AP = Σ_n (R_n − R_{n−1}) P_n` over
//!   the distinct score thresholds, highest first; no interpolation (not the trapezoidal area,
//!   which over-estimates). Multi-class: one-vs-rest macro mean. Undefined without positives.
//! - **F1**: binary: F1 of class 1; multi-class: macro mean of per-class F1 over the classes that
//!   occur in the truth or the predictions (sklearn `average="macro"`). A class with
//!   precision + recall = 0 has F1 0.
//! - **MCC**: Matthews correlation; multi-class: Gorodkin's R_K generalisation (it equals
//!   Matthews' formula for two classes). **0 when undefined** (a zero row or column sum makes the
//!   denominator 0), as sklearn does.
//! - **sensitivity / specificity**: binary: recall of class 1 / recall of class 0; multi-class:
//!   one-vs-rest per class, macro mean.
//! - **confusion matrix**: rows = true class, columns = predicted class.
//!
//! Retrieval metrics (MRR, MAP, NDCG@K, P@K, R@K, Hit@K) for dual encoders: [`retrieval`].

pub mod confusion;
pub mod error;
pub mod probabilities;
pub mod ranking;
pub mod regression;
pub mod report;
pub mod retrieval;

pub use confusion::ConfusionMatrix;
pub use error::MetricsError;
pub use probabilities::softmax;
pub use ranking::{auroc, average_precision, youden_threshold};
pub use regression::RegressionMetrics;
pub use report::{argmax, ClassificationMetrics};
pub use retrieval::{relevant_ranks, QueryScores, RetrievalMetrics};
