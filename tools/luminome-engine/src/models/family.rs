//! What every model family provides, and the typed access to a model built from a config.

use std::any::Any;

use anyhow::{bail, Context, Result};
use candle_core::{DType, Device};
use candle_nn::{VarBuilder, VarMap};
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::ModelConfig;
use crate::nn::init::init_parameters;

/// A family's config: everything that rebuilds its model from the weights. Implemented in the
/// family's folder; [`Registered`] (its `kind` in checkpoints) comes from the family's line in
/// `models/mod.rs`.
pub trait FamilyConfig:
    Registered
    + Clone
    + std::fmt::Debug
    + PartialEq
    + Serialize
    + DeserializeOwned
    + Send
    + Sync
    + 'static
{
    /// How people call this kind of model in messages ("sequence classifier").
    const FAMILY: &'static str;

    /// The built model (a plain struct with `new(cfg, vb)` and `forward`).
    type Model: Model;

    /// Checks every size before anything is allocated: a checkpoint's metadata is user input.
    fn validate(&self) -> Result<()>;

    /// Creates the model's parameters under `vb`.
    fn build(&self, vb: VarBuilder) -> candle_core::Result<Self::Model>;

    /// Seeded initial values of a new model's parameters: by default matrices and embeddings
    /// ~ N(0, 0.02²), layer-norm scales 1, biases 0 (`nn::init`); a family with parameters that
    /// need their own (state-space decay rates, say) overrides it.
    fn init(&self, varmap: &VarMap, seed: u64) -> Result<()> {
        init_parameters(varmap, seed, None).map_err(Into::into)
    }
}

/// The `kind` a family's checkpoints carry; implemented by the registry macro.
pub trait Registered {
    const KIND: &'static str;
}

/// Lets a `dyn Model` be turned back into its concrete type.
pub trait AsAny {
    fn as_any(&self) -> &dyn Any;
}

impl<T: Any> AsAny for T {
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A built model of any family.
pub trait Model: AsAny + std::fmt::Debug + Send + Sync {}

/// The model of `config` as its concrete type `C::Model`; `what` names where it came from.
pub fn downcast<'a, C: FamilyConfig>(
    model: &'a dyn Model,
    config: &ModelConfig,
    what: &str,
) -> Result<&'a C::Model> {
    model.as_any().downcast_ref::<C::Model>().with_context(|| {
        format!(
            "{what}: this checkpoint holds a {} (kind {}), expected a {} (kind {})",
            config.family(),
            config.kind(),
            C::FAMILY,
            C::KIND
        )
    })
}

/// A model and the parameters it reads (the map the optimiser updates and checkpoints save).
pub struct BuiltModel {
    pub config: ModelConfig,
    pub varmap: VarMap,
    pub model: Box<dyn Model>,
}

impl BuiltModel {
    /// Builds `config` on `device` with seeded initial weights (f32).
    pub fn new(config: &ModelConfig, device: &Device, seed: u64) -> Result<Self> {
        config.validate()?;
        let varmap = VarMap::new();
        let vb = VarBuilder::from_varmap(&varmap, DType::F32, device);
        let model = config.build(vb)?;
        config.init(&varmap, seed)?;
        Ok(Self {
            config: config.clone(),
            varmap,
            model,
        })
    }

    /// The model as its concrete type.
    pub fn get<C: FamilyConfig>(&self) -> Result<&C::Model> {
        if self.config.get::<C>().is_none() {
            bail!(
                "internal: a {} was built, not a {}",
                self.config.family(),
                C::FAMILY
            );
        }
        downcast::<C>(self.model.as_ref(), &self.config, "built model")
    }

    /// Parameter names, sorted.
    pub fn parameter_names(&self) -> Vec<String> {
        parameter_names(&self.varmap)
    }

    /// Number of scalar parameters.
    pub fn num_parameters(&self) -> usize {
        self.varmap.all_vars().iter().map(|v| v.elem_count()).sum()
    }
}

/// The names of a var map's parameters, sorted.
pub fn parameter_names(varmap: &VarMap) -> Vec<String> {
    let mut v: Vec<String> = varmap
        .data()
        .lock()
        .expect("var map lock")
        .keys()
        .cloned()
        .collect();
    v.sort();
    v
}
