//! What models read, and the checks a dataset passes against a model before anything runs.
//!
//! A checkpoint records what its model takes ([`InputSpec`]): tokens (with the tokenizer, whose
//! vocabulary a dataset must share; the maximum length is the backbone's) or region features
//! (with their names, which a region dataset must have in the same order).

pub mod strand;
pub mod tokens;

use std::path::Path;

use anyhow::{bail, Result};
use luminome_io::pair_dataset::Pairing;
use luminome_io::region_dataset::RegionDataset;
use luminome_io::token_dataset::TokenizerInfo;

pub use tokens::{batch_tensors, BatchTensors};

/// What a model reads, as its checkpoints store it.
#[derive(Debug, Clone, PartialEq)]
pub enum InputSpec {
    /// Token ids made by this tokenizer.
    Tokens(TokenizerInfo),
    /// Regions × features, these features in this order.
    RegionFeatures(Vec<String>),
    /// Pairs of strands of token ids (a luminome-mask-pairs dataset) with this pairing.
    TokenPairs(TokenizerInfo, Pairing),
    /// Rows of a feature table (CSV/TSV) with these columns (the full schema is the model's).
    Table(Vec<String>),
}

impl InputSpec {
    /// How people call this input in messages.
    pub fn describe(&self) -> &'static str {
        match self {
            Self::Tokens(_) => "token ids (a luminome-tokenize dataset)",
            Self::RegionFeatures(_) => "region features (a luminome-regions dataset)",
            Self::TokenPairs(..) => "paired strands (a luminome-mask-pairs dataset)",
            Self::Table(_) => "a feature table (CSV or TSV)",
        }
    }
}

impl InputSpec {
    /// The `kind` of the datasets this input comes in.
    pub fn dataset_kind(&self) -> &'static str {
        match self {
            Self::Tokens(_) => luminome_io::token_dataset::TOKEN_DATASET_KIND,
            Self::RegionFeatures(_) => luminome_io::region_dataset::REGION_DATASET_KIND,
            Self::TokenPairs(..) => luminome_io::pair_dataset::PAIR_DATASET_KIND,
            Self::Table(_) => "table",
        }
    }
}

/// Checks that a region dataset has the features a model was trained on, in the same order.
pub fn check_region_features(model: &Path, names: &[String], ds: &RegionDataset) -> Result<()> {
    if ds.feature_names() != names {
        let first_difference = names
            .iter()
            .zip(ds.feature_names())
            .position(|(a, b)| a != b)
            .unwrap_or(names.len().min(ds.feature_names().len()));
        bail!(
            "{}: its {} features differ from the {} the model in {} was trained on (first difference at feature {}: {:?} vs {:?}); build the dataset with the same motifs and clusters",
            ds.path().display(),
            ds.feature_names().len(),
            names.len(),
            model.display(),
            first_difference + 1,
            ds.feature_names().get(first_difference),
            names.get(first_difference)
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use luminome_io::region_dataset::{RegionDatasetMeta, RegionDatasetWriter, RegionSample};

    fn region_dataset(dir: &Path, features: &[&str]) -> RegionDataset {
        let out = dir.join("r.safetensors");
        let f = features.len();
        let mut w =
            RegionDatasetWriter::create(&out, &dir.join("r.samples.tsv"), 1, f, false).unwrap();
        w.push(&RegionSample {
            features: &vec![0.5; f],
            region_mask: &[1],
            tss_index: Some(0),
            tss_slot: 0,
            region_index: &[0],
            expression: None,
            gene: "G",
            gene_id: "G",
            cell_type: "K562",
            chrom: "chr1",
            tss: 0,
            strand: '+',
            regions_used: 1,
            tss_region: Some(0),
        })
        .unwrap();
        let meta = RegionDatasetMeta {
            cell_types: vec!["K562".into()],
            coordinates: "0-based half-open".into(),
            expression: vec![],
            expression_transform: None,
            feature_names: features.iter().map(|s| s.to_string()).collect(),
            genes: String::new(),
            motif: serde_json::Value::Null,
            n_regions: 1,
            normalisation: "raw".into(),
            reference: String::new(),
            region_sources: serde_json::Value::Null,
            regions_table: None,
            regions_total: 1,
            samples_table: None,
            selection: "nearest".into(),
            window_bp: 1,
        };
        w.finish(&meta, "test", "0", "").unwrap();
        RegionDataset::open(&out).unwrap()
    }

    #[test]
    fn a_region_dataset_must_have_the_models_features_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let names: Vec<String> = ["CTCF", "GATA", "accessibility"].map(String::from).into();
        let ds = region_dataset(dir.path(), &["CTCF", "GATA", "accessibility"]);
        check_region_features(Path::new("m.safetensors"), &names, &ds).unwrap();
        let swapped = region_dataset(dir.path(), &["GATA", "CTCF", "accessibility"]);
        let err = check_region_features(Path::new("m.safetensors"), &names, &swapped)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("r.safetensors") && err.contains("feature 1") && err.contains("\"GATA\""),
            "{err}"
        );
    }
}
