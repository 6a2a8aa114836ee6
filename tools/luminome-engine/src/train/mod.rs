//! Training, shared by every model family: the loop ([`trainer`]), its resumable state
//! ([`state`]), AdamW ([`optim`]), the learning-rate schedule ([`schedule`]), the [`TrainTask`]
//! a family implements, the flags every subcommand shares ([`args`]) and the run of a
//! subcommand from its setup to the end ([`command`]); the dev metrics of classification tasks
//! ([`classification`]).

pub mod args;
pub mod classification;
pub mod command;
pub mod optim;
pub mod schedule;
pub mod state;
pub mod task;
pub mod trainer;

pub use args::{TrainArgs, TrainDefaults, SMALL_TRAINING_SET};
pub use command::{run, TrainCommand, TrainingSetup};
pub use optim::{AdamW, AdamWConfig};
pub use schedule::WarmupCosine;
pub use state::{read_state, TrainerState};
pub use task::TrainTask;
pub use trainer::{epoch_order, RunPaths, TrainConfig, TrainSummary, Trainer};
