//! Model families, each in its own folder (config, model, training task, the input it reads,
//! its command-line setup and, where `luminome-predict` runs it, its predictor), and the one
//! place that maps a config to a built model: the registry below. Adding a family is its folder
//! plus two lines here, its module and its registry entry (and one in luminome-train and
//! luminome-predict); see docs/engine.md, "Adding a model family".

mod family;
pub mod region;
pub mod token;

// The family modules, declared here rather than inside `model_families!` (which used to declare
// them): rustfmt does not follow module declarations made by a macro, so `cargo fmt` never
// formatted these folders and its CI check could not see them. The registry below names each
// one again; a family left out of either list does not compile.
pub mod bag_of_tokens;
pub mod bistrand;
pub mod caduceus;
pub mod classifier;
pub mod dual;
pub mod expression;
pub mod get_region;
pub mod kmer_linear;
pub mod mlm;
pub mod region_pretrain;
pub mod tabular;

pub use family::{downcast, parameter_names, AsAny, BuiltModel, FamilyConfig, Model, Registered};

use std::any::Any;

/// Registers the families (declared as modules above): the `kind` each writes into checkpoints, and the
/// [`ModelConfig`] enum that dispatches on it (serialised with the kind as a `kind` tag, the
/// family config's fields beside it).
macro_rules! model_families {
    ($($module:ident: $kind:literal => $variant:ident($config:ident),)+) => {

        /// What a checkpoint holds: the family (`kind`) and every size that rebuilds the model.
        #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
        #[serde(tag = "kind")]
        pub enum ModelConfig {
            $(#[serde(rename = $kind)] $variant($module::$config),)+
        }

        $(
            impl Registered for $module::$config {
                const KIND: &'static str = $kind;
            }

            impl From<$module::$config> for ModelConfig {
                fn from(c: $module::$config) -> Self {
                    Self::$variant(c)
                }
            }
        )+

        impl ModelConfig {
            /// The `kind` stored in checkpoints.
            pub fn kind(&self) -> &'static str {
                match self {
                    $(Self::$variant(_) => $kind,)+
                }
            }

            /// How people call this kind of model.
            pub fn family(&self) -> &'static str {
                match self {
                    $(Self::$variant(_) => <$module::$config as FamilyConfig>::FAMILY,)+
                }
            }

            pub fn validate(&self) -> anyhow::Result<()> {
                match self {
                    $(Self::$variant(c) => c.validate(),)+
                }
            }

            /// Creates the model's parameters under `vb`.
            pub fn build(&self, vb: candle_nn::VarBuilder) -> candle_core::Result<Box<dyn Model>> {
                Ok(match self {
                    $(Self::$variant(c) => Box::new(c.build(vb)?),)+
                })
            }

            /// Seeded initial values of a new model's parameters.
            pub fn init(&self, varmap: &candle_nn::VarMap, seed: u64) -> anyhow::Result<()> {
                match self {
                    $(Self::$variant(c) => c.init(varmap, seed),)+
                }
            }

            /// The family config, when it is of type `C`.
            pub fn get<C: FamilyConfig>(&self) -> Option<&C> {
                match self {
                    $(Self::$variant(c) => (c as &dyn Any).downcast_ref::<C>(),)+
                }
            }

            /// Every registered (kind, family).
            pub fn families() -> &'static [(&'static str, &'static str)] {
                &[$(($kind, <$module::$config as FamilyConfig>::FAMILY)),+]
            }
        }
    };
}

model_families! {
    mlm: "mlm" => Mlm(MlmConfig),
    classifier: "classifier" => Classifier(ClassifierConfig),
    bag_of_tokens: "bag_of_tokens" => BagOfTokens(BagOfTokensConfig),
    kmer_linear: "kmer_linear" => KmerLinear(KmerLinearConfig),
    bistrand: "bistrand" => BiStrand(BiStrandConfig),
    region_pretrain: "region_pretrain" => RegionPretrain(RegionPretrainConfig),
    expression: "expression" => Expression(ExpressionConfig),
    tabular: "tabular" => Tabular(TabularConfig),
    dual: "dual" => Dual(DualConfig),
}
