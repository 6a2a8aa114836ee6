//! What the region model families (`region_pretrain`, `expression`) share: the region encoder
//! (standardisation, RegionEmb, TSS-relative positions, transformer blocks), batches of region
//! samples, the holdout splits and the data checks. Not a family itself.
//!
//! - [`config`]: [`RegionEncoderConfig`], presets, [`RegionPosition`]; [`args`]: its flags.
//! - [`encoder`]: [`RegionEncoder`]; [`batch`]: [`RegionTensors`] (offsets from the TSS).
//! - [`holdout`]: genes by chromosome block, leave one cell type out; [`data`]: the datasets,
//!   the split, the empty-sample check and the feature statistics.
//! - [`metrics`]: the observed column and metrics of every expression predictor (expression, GET).

pub mod args;
pub mod batch;
pub mod config;
pub mod data;
pub mod encoder;
pub mod holdout;
pub mod metrics;

pub use args::RegionEncoderArgs;
pub use batch::RegionTensors;
pub use config::{RegionEncoderConfig, RegionPosition, RegionPreset};
pub use data::RegionData;
pub use encoder::RegionEncoder;
pub use holdout::{Holdout, HoldoutArgs, Subset};

/// The encoder's parameter prefix in every region family (so `--init` copies `encoder.*`).
pub const ENCODER_PREFIX: &str = "encoder";
