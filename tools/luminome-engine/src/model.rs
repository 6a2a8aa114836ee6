//! A model of any kind, built from its config into a fresh parameter map.

use anyhow::Result;
use candle_core::{DType, Device};
use candle_nn::{VarBuilder, VarMap};

use crate::classifier::Classifier;
use crate::config::ModelConfig;
use crate::init::init_parameters;
use crate::mlm::MlmModel;

#[derive(Debug, Clone)]
pub enum Model {
    Mlm(MlmModel),
    Classifier(Classifier),
}

/// A model and the parameters it reads (the map the optimiser updates and checkpoints save).
pub struct BuiltModel {
    pub config: ModelConfig,
    pub varmap: VarMap,
    pub model: Model,
}

impl BuiltModel {
    /// Builds `config` on `device` with seeded initial weights (f32).
    pub fn new(config: &ModelConfig, device: &Device, seed: u64) -> Result<Self> {
        config.encoder().validate()?;
        let varmap = VarMap::new();
        let vb = VarBuilder::from_varmap(&varmap, DType::F32, device);
        let model = match config {
            ModelConfig::Mlm(c) => Model::Mlm(MlmModel::new(c, vb)?),
            ModelConfig::Classifier(c) => Model::Classifier(Classifier::new(c, vb)?),
        };
        init_parameters(&varmap, seed, None)?;
        Ok(Self {
            config: config.clone(),
            varmap,
            model,
        })
    }

    /// Parameter names, sorted.
    pub fn parameter_names(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .varmap
            .data()
            .lock()
            .expect("var map lock")
            .keys()
            .cloned()
            .collect();
        v.sort();
        v
    }

    /// Number of scalar parameters.
    pub fn num_parameters(&self) -> usize {
        self.varmap.all_vars().iter().map(|v| v.elem_count()).sum()
    }
}
