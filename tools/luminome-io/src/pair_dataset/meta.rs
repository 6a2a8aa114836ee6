//! What a paired dataset says about itself.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::token_dataset::TokenizerInfo;

pub const PAIR_DATASET_KIND: &str = "luminome.pair_dataset";
pub const PAIR_DATASET_VERSION: u32 = 2;
/// The label of a position that is not predicted (PyTorch's `ignore_index`).
pub const IGNORE_INDEX: i64 = -100;

/// What strand B is, relative to A.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Pairing {
    /// B is the complementary strand of A, in A's orientation (B[i] pairs with A[i]).
    Complement,
    /// A carries the reference allele, B the alternate allele; both on the forward strand.
    Alleles,
    /// B was given as it is (paired FASTA records); index i of both must be the same position.
    Given,
}

impl Pairing {
    pub fn name(self) -> &'static str {
        match self {
            Self::Complement => "complement",
            Self::Alleles => "alleles",
            Self::Given => "given",
        }
    }
}

/// Which positions were masked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MaskMode {
    /// A fraction of the positions where both strands carry A/C/G/T.
    Random,
    /// Exactly the variant site of each window.
    VariantSite,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairMaskingInfo {
    pub mode: MaskMode,
    /// Fraction of maskable positions chosen (random mode).
    pub fraction: f64,
    /// BERT replacement of the chosen positions: 80 % [MASK], 10 % a random base, 10 % kept.
    pub bert_replacement: bool,
    pub seed: u64,
}

/// The JSON under `luminome` in a paired dataset's `__metadata__`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PairDatasetMeta {
    pub kind: String,
    pub format_version: u32,
    pub tokenizer: TokenizerInfo,
    pub pairing: Pairing,
    pub masking: PairMaskingInfo,
    /// Row length L (bases per window).
    pub window: usize,
    /// Records in the file.
    pub num_records: u64,
    /// `0-based half-open`, the convention of the index's coordinates.
    pub coordinates: String,
    pub index_file: String,
    /// How many windows or variants each rule left out or flagged (e.g. `indel_alleles`).
    pub counts: BTreeMap<String, u64>,
    /// INFO fields carried into the index as `info_<KEY>` columns.
    pub info_keys: Vec<String>,
    pub sources: Vec<String>,
    pub tool: String,
    pub tool_version: String,
    pub command_line: String,
}
