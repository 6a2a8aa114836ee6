//! The metadata a region dataset carries about itself.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub const REGION_DATASET_KIND: &str = "luminome.region_dataset";
/// Stored as the string `"1"` under `format_version`.
pub const REGION_DATASET_VERSION: u32 = 1;

/// One `--expression CELLTYPE=PATH[:COLUMN]` source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExpressionSource {
    pub cell_type: String,
    /// The table column read for this cell type, when it was named (`CELLTYPE=PATH:COLUMN` or
    /// `--expression-matrix`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<String>,
    pub path: String,
}

/// The JSON document under `luminome` in a region dataset's `__metadata__`.
///
/// The fields are declared in alphabetical order: that is the key order of the JSON (the format
/// was first written from a sorted map), so the same run gives the same bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegionDatasetMeta {
    /// The cell types, in the order their samples alternate within a gene.
    pub cell_types: Vec<String>,
    /// `0-based half-open`: the convention of region coordinates in the regions table.
    pub coordinates: String,
    pub expression: Vec<ExpressionSource>,
    /// How expression values were transformed (`None` without expression).
    pub expression_transform: Option<String>,
    /// One name per feature column of `features`; the last is `accessibility`.
    pub feature_names: Vec<String>,
    /// The gene / TSS file.
    pub genes: String,
    /// Motif scanning settings (database, thresholds, clusters), as luminome-regions reports them;
    /// `feature_scale` among them when the features are not raw ([`Self::feature_scale`]).
    pub motif: serde_json::Value,
    /// Region slots per sample (N).
    pub n_regions: usize,
    /// Accessibility normalisation.
    pub normalisation: String,
    /// The reference FASTA.
    pub reference: String,
    /// Where the regions came from (peaks, accessibility sources, or a reused regions table).
    pub region_sources: serde_json::Value,
    /// File name of the regions table (in the dataset's folder unless given elsewhere).
    pub regions_table: Option<String>,
    /// Regions in the regions table.
    pub regions_total: usize,
    /// File name of the samples table.
    pub samples_table: Option<String>,
    /// How a gene's window regions were chosen when more than N overlap it.
    pub selection: String,
    /// Width in bases of the window around each TSS.
    pub window_bp: u64,
}

impl RegionDatasetMeta {
    /// How luminome-regions scaled the feature columns (`--feature-scale`): `raw` (motif scores as
    /// aggregated, accessibility normalised), `get` or `get-quantitative` (as published GET
    /// checkpoints expect them). Recorded as `motif.feature_scale` and left out for `raw`, so a
    /// raw dataset's bytes are those of a dataset written before the choice existed.
    pub fn feature_scale(&self) -> &str {
        self.motif
            .get("feature_scale")
            .and_then(|v| v.as_str())
            .unwrap_or("raw")
    }

    /// The safetensors `__metadata__` entries of a dataset with this document.
    pub fn header(
        &self,
        tool: &str,
        tool_version: &str,
        command_line: &str,
    ) -> anyhow::Result<BTreeMap<String, String>> {
        let mut m = BTreeMap::new();
        m.insert("kind".to_string(), REGION_DATASET_KIND.to_string());
        m.insert(
            "format_version".to_string(),
            REGION_DATASET_VERSION.to_string(),
        );
        m.insert("tool".to_string(), tool.to_string());
        m.insert("tool_version".to_string(), tool_version.to_string());
        m.insert("command_line".to_string(), command_line.to_string());
        m.insert(
            "feature_names".to_string(),
            serde_json::to_string(&self.feature_names)?,
        );
        m.insert("luminome".to_string(), serde_json::to_string(self)?);
        Ok(m)
    }
}
