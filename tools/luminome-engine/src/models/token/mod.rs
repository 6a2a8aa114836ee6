//! What the token-classification families (`classifier`, `bag_of_tokens`, `kmer_linear`) share:
//! the [`TokenClassifier`] trait their models implement, the labelled datasets and their flags,
//! the training task, a checkpoint and dataset checked against each other, and the predictor.
//! Not a family itself, and it depends on none: the baseline a run reports beside its model
//! (the k-mer floor) comes in as a [`Baseline`] from the family's setup.
//!
//! - [`classifier`]: [`TokenClassifier`]; [`data`]: [`ClassificationArgs`],
//!   [`ClassificationData`], the classes of a model.
//! - [`task`]: training ([`ClassifierTask`]), class probabilities, [`Baseline`].
//! - [`input`]: a checkpoint and a dataset checked against each other ([`ClassifierInput`]);
//!   [`predictor`]: `luminome-predict` for any token classifier ([`ClassifierPredictor`]).

pub mod classifier;
pub mod data;
pub mod input;
pub mod predictor;
pub mod task;

pub use classifier::TokenClassifier;
pub use data::{
    check_classes, class_indices, dataset_classes, ClassificationArgs, ClassificationData,
};
pub use input::ClassifierInput;
pub use predictor::ClassifierPredictor;
pub use task::{predict_probs, Baseline, BaselineRun, ClassifierTask, LabelledSet};
