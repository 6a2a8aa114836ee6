//! Untrained checkpoints of the CNN classifier and the tabular models.

use std::path::Path;

use anyhow::Result;

use super::{nucleotide_tokenizer, save_test_checkpoint};

/// An untrained dilated-CNN classifier (8 channels, 3 blocks, labels 0/1) over the
/// single-nucleotide vocabulary, averaging both strands when `rc_average`, written to `dest`.
pub fn write_cnn_checkpoint(
    dest: &Path,
    adapter: crate::models::classifier::AdapterKind,
    rc_average: bool,
) -> Result<()> {
    use crate::backbones::{BackboneConfig, CnnConfig};
    let tok = nucleotide_tokenizer();
    let rc_average = match rc_average {
        true => Some(crate::input::strand::ReverseComplement::for_tokenizer(
            &tok,
        )?),
        false => None,
    };
    let config = crate::ModelConfig::from(crate::models::classifier::ClassifierConfig {
        backbone: BackboneConfig::Cnn(CnnConfig {
            vocab_size: tok.vocab_size(),
            channels: 8,
            first_kernel: 5,
            kernel: 3,
            num_layers: 3,
            dropout: 0.0,
            max_length: 64,
            layer_norm_eps: 1e-5,
            pad_id: tok.pad_id,
        }),
        adapter,
        num_classes: 2,
        label_values: vec![0, 1],
        rc_average,
        gate_score_scale: None,
    });
    let built = crate::BuiltModel::new(&config, &candle_core::Device::Cpu, 4)?;
    save_test_checkpoint(
        dest,
        config,
        crate::input::InputSpec::Tokens(tok),
        &built.varmap,
    )
}

/// An untrained transformer classifier (d 16, 2 layers, 2 heads, gated adapter, labels 0/1)
/// over the single-nucleotide vocabulary, seeded with `seed`, written to `dest`.
pub fn write_transformer_classifier_checkpoint(dest: &Path, seed: u64) -> Result<()> {
    use crate::backbones::{BackboneConfig, EncoderConfig, PositionEncoding};
    let tok = nucleotide_tokenizer();
    let config = crate::ModelConfig::from(crate::models::classifier::ClassifierConfig {
        backbone: BackboneConfig::Transformer(EncoderConfig {
            vocab_size: tok.vocab_size(),
            d_model: 16,
            num_layers: 2,
            num_heads: 2,
            ffn_dim: 32,
            dropout: 0.0,
            max_length: 64,
            position: PositionEncoding::Learned,
            layer_norm_eps: 1e-5,
            pad_id: tok.pad_id,
            attention: Default::default(),
        }),
        adapter: crate::models::classifier::AdapterKind::Gated,
        num_classes: 2,
        label_values: vec![0, 1],
        rc_average: None,
        gate_score_scale: None,
    });
    let built = crate::BuiltModel::new(&config, &candle_core::Device::Cpu, seed)?;
    save_test_checkpoint(
        dest,
        config,
        crate::input::InputSpec::Tokens(tok),
        &built.varmap,
    )
}

/// A bag-of-tokens classifier (labels 0/1) over the single-nucleotide vocabulary, its weights
/// drawn uniformly from [-2, 2) with `seed` (large enough that every substitution moves the
/// output).
pub fn write_bag_of_tokens_checkpoint(dest: &Path, seed: u64) -> Result<()> {
    let tok = nucleotide_tokenizer();
    let config = crate::ModelConfig::from(crate::models::bag_of_tokens::BagOfTokensConfig {
        vocab_size: tok.vocab_size(),
        max_length: 64,
        num_classes: 2,
        label_values: vec![0, 1],
    });
    use rand::{Rng, SeedableRng};
    let built = crate::BuiltModel::new(&config, &candle_core::Device::Cpu, seed)?;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    for name in built.parameter_names() {
        let var = built.varmap.data().lock().expect("var map")[&name].clone();
        let values: Vec<f32> = (0..var.elem_count())
            .map(|_| rng.random::<f32>() * 4.0 - 2.0)
            .collect();
        var.set(&candle_core::Tensor::from_vec(
            values,
            var.dims(),
            &candle_core::Device::Cpu,
        )?)?;
    }
    save_test_checkpoint(
        dest,
        config,
        crate::input::InputSpec::Tokens(tok),
        &built.varmap,
    )
}

/// A random-weight tabular model (seed `seed`) whose schema is fitted on every row of `table`
/// (label column `label`, id column `id`), with every row encoded for it.
pub fn tabular_model(
    table: &Path,
    label: &str,
    id: Option<&str>,
    arch: crate::models::tabular::TabularArch,
    threshold: Option<f64>,
    seed: u64,
) -> Result<(
    crate::models::BuiltModel,
    crate::models::tabular::EncodedRows,
)> {
    use crate::models::tabular::schema::table_classes;
    use crate::models::tabular::{SchemaOptions, TabularConfig, TabularSchema};
    let t = luminome_io::table::FeatureTable::read(table, None)?;
    let opts = SchemaOptions {
        label: label.into(),
        id: id.map(String::from),
        ..Default::default()
    };
    let classes = table_classes(&t, label, None)?;
    let rows: Vec<usize> = (0..t.len()).collect();
    let (schema, _) = TabularSchema::fit(&t, &rows, &opts, classes)?;
    let encoded = schema.encode(&t, &rows)?;
    let config = crate::models::ModelConfig::from(TabularConfig {
        schema,
        arch,
        threshold,
    });
    let built = crate::models::BuiltModel::new(&config, &candle_core::Device::Cpu, seed)?;
    Ok((built, encoded))
}

/// [`tabular_model`] written to `dest` as a checkpoint.
pub fn write_tabular_checkpoint(
    dest: &Path,
    table: &Path,
    label: &str,
    id: Option<&str>,
    arch: crate::models::tabular::TabularArch,
    threshold: Option<f64>,
    seed: u64,
) -> Result<()> {
    let (built, _) = tabular_model(table, label, id, arch, threshold, seed)?;
    let config = built.config.clone();
    let columns = config
        .get::<crate::models::tabular::TabularConfig>()
        .map(|c| c.schema.columns.iter().map(|c| c.name.clone()).collect())
        .unwrap_or_default();
    save_test_checkpoint(
        dest,
        config,
        crate::input::InputSpec::Table(columns),
        &built.varmap,
    )
}
