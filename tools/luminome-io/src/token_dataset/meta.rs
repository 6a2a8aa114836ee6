//! What a token dataset says about itself: the tokenizer that made its ids (scheme, vocabulary,
//! special tokens) and the dataset metadata stored in the safetensors header.

use serde::{Deserialize, Serialize};

pub const TOKEN_DATASET_KIND: &str = "luminome.token_dataset";
pub const TOKEN_DATASET_VERSION: u32 = 2;

/// The special tokens, in the ids the nucleotide and k-mer vocabularies give them
/// (`[PAD]` = 0, so padding is 0). A HuggingFace tokenizer's specials are looked up by these names.
pub mod special {
    pub const PAD: u32 = 0;
    pub const CLS: u32 = 1;
    pub const SEP: u32 = 2;
    pub const MASK: u32 = 3;
    pub const UNK: u32 = 4;
    /// Their strings, indexed by the ids above.
    pub const NAMES: [&str; 5] = ["[PAD]", "[CLS]", "[SEP]", "[MASK]", "[UNK]"];
}

/// How a dataset's ids were made (also `luminome-tokenize --scheme`, whose help shows these
/// comments).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum TokenizerScheme {
    /// One token per base: [PAD] [CLS] [SEP] [MASK] [UNK] A C G T N.
    Nucleotide,
    /// k-mers (-k, --kmer-mode).
    Kmer,
    /// A HuggingFace tokenizer.json (--tokenizer), e.g. DNABERT-2's BPE.
    Hf,
    /// One token per base in a published model's own character vocabulary, read from its
    /// checkpoint (`--like` a Caduceus/PlantCaduceus folder); not chosen by name.
    #[cfg_attr(feature = "clap", value(skip))]
    Characters,
    /// A published `EsmTokenizer` vocabulary (Nucleotide Transformer: 6-mers, then single
    /// bases), read from its checkpoint's `vocab.txt` (`--tokenizer DIR`): the longest token
    /// from the left, one base where no longer token fits; not chosen by name.
    #[cfg_attr(feature = "clap", value(skip))]
    #[serde(rename = "esm-vocab")]
    EsmVocab,
}

impl TokenizerScheme {
    pub fn name(self) -> &'static str {
        match self {
            Self::Nucleotide => "nucleotide",
            Self::Kmer => "kmer",
            Self::Hf => "hf",
            Self::Characters => "characters",
            Self::EsmVocab => "esm-vocab",
        }
    }

    /// Whether every token stands for a fixed run of bases that can be read off its string
    /// (nucleotide and k-mer vocabularies; not a learned BPE).
    pub fn has_base_spans(self) -> bool {
        matches!(self, Self::Nucleotide | Self::Kmer | Self::Characters)
    }

    /// Whether the bases each token of a row covers can be worked out from the row
    /// ([`TokenizerInfo::row_spans`]): the fixed-width schemes, and the Nucleotide
    /// Transformer's 6-mers-or-single-bases, whose spans follow from the tokens before.
    pub fn has_row_spans(self) -> bool {
        self.has_base_spans() || self == Self::EsmVocab
    }
}

impl std::fmt::Display for TokenizerScheme {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// How ids were made and what they mean: enough for a later tool to decode ids and map tokens
/// back onto bases.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenizerInfo {
    pub scheme: TokenizerScheme,
    /// Token strings, indexed by id.
    pub vocab: Vec<String>,
    pub pad_id: u32,
    pub unk_id: Option<u32>,
    pub cls_id: Option<u32>,
    pub sep_id: Option<u32>,
    pub mask_id: Option<u32>,
    /// Whether [CLS] starts and [SEP] ends every record.
    pub add_cls: bool,
    pub add_sep: bool,
    /// k-mer scheme: k and the step between consecutive k-mers (1 = overlapping, k = non-overlapping).
    pub k: Option<usize>,
    pub kmer_step: Option<usize>,
    /// `hf` scheme: the tokenizer.json it was made with, verbatim.
    pub hf_tokenizer_json: Option<String>,
}

/// The single bases that end the nucleotide and k-mer vocabularies.
const BASES: [&str; 5] = ["A", "C", "G", "T", "N"];

impl TokenizerInfo {
    /// The nucleotide vocabulary: the specials, then `A C G T N` (ids 5-9).
    pub fn nucleotide(add_cls: bool, add_sep: bool) -> Self {
        let mut vocab: Vec<String> = special::NAMES.iter().map(|s| s.to_string()).collect();
        vocab.extend(BASES.iter().map(|s| s.to_string()));
        Self::with_specials(TokenizerScheme::Nucleotide, vocab, add_cls, add_sep)
    }

    /// The k-mer vocabulary: the specials, all 4^k k-mers over ACGT in lexicographic order, then
    /// the single bases (for the tail of a sequence in non-overlapping mode). `step`: 1 for
    /// overlapping k-mers, k for non-overlapping ones.
    pub fn kmer(k: usize, step: usize, add_cls: bool, add_sep: bool) -> Self {
        const ALPHA: [char; 4] = ['A', 'C', 'G', 'T'];
        let mut vocab: Vec<String> = special::NAMES.iter().map(|s| s.to_string()).collect();
        for v in 0..(1usize << (2 * k)) {
            vocab.push(
                (0..k)
                    .map(|j| ALPHA[(v >> (2 * (k - 1 - j))) & 3])
                    .collect(),
            );
        }
        vocab.extend(BASES.iter().map(|s| s.to_string()));
        Self {
            k: Some(k),
            kmer_step: Some(step),
            ..Self::with_specials(TokenizerScheme::Kmer, vocab, add_cls, add_sep)
        }
    }

    fn with_specials(
        scheme: TokenizerScheme,
        vocab: Vec<String>,
        add_cls: bool,
        add_sep: bool,
    ) -> Self {
        Self {
            scheme,
            vocab,
            pad_id: special::PAD,
            unk_id: Some(special::UNK),
            cls_id: Some(special::CLS),
            sep_id: Some(special::SEP),
            mask_id: Some(special::MASK),
            add_cls,
            add_sep,
            k: None,
            kmer_step: None,
            hf_tokenizer_json: None,
        }
    }

    pub fn vocab_size(&self) -> usize {
        self.vocab.len()
    }

    /// Whether two tokenizers turn the same bases into the same ids: scheme, k-mer tiling,
    /// [CLS]/[SEP] framing and vocabulary (a HuggingFace tokenizer: its tokenizer.json too).
    /// Equal vocabularies are not enough: overlapping and non-overlapping 3-mers share one.
    pub fn same_tokenization(&self, other: &Self) -> bool {
        self.scheme == other.scheme
            && self.vocab == other.vocab
            && self.pad_id == other.pad_id
            && self.add_cls == other.add_cls
            && self.add_sep == other.add_sep
            && self.k == other.k
            && self.kmer_step == other.kmer_step
            && self.hf_tokenizer_json == other.hf_tokenizer_json
    }

    /// One line a person can compare: `kmer k=3 non-overlapping, [CLS]+[SEP], 74 tokens`.
    pub fn describe(&self) -> String {
        let scheme = match (self.scheme, self.k, self.kmer_step) {
            (TokenizerScheme::Kmer, Some(k), Some(step)) => format!(
                "kmer k={k} {}",
                if step == 1 {
                    "overlapping".to_string()
                } else if step == k {
                    "non-overlapping".to_string()
                } else {
                    format!("step {step}")
                }
            ),
            (s, _, _) => s.name().to_string(),
        };
        let framing = match (self.add_cls, self.add_sep) {
            (true, true) => "[CLS]+[SEP]",
            (true, false) => "[CLS] only",
            (false, true) => "[SEP] only",
            (false, false) => "no [CLS]/[SEP]",
        };
        format!("{scheme}, {framing}, {} tokens", self.vocab.len())
    }

    /// The `luminome-tokenize` flags that make this tokenization (`None` for a HuggingFace
    /// tokenizer, which needs its tokenizer.json: use `--like`).
    pub fn tokenize_flags(&self) -> Option<String> {
        let mut flags = match (self.scheme, self.k, self.kmer_step) {
            (TokenizerScheme::Nucleotide, _, _) => "--scheme nucleotide".to_string(),
            (TokenizerScheme::Kmer, Some(k), Some(1)) => {
                format!("--scheme kmer -k {k} --kmer-mode overlapping")
            }
            (TokenizerScheme::Kmer, Some(k), Some(step)) if step == k => {
                format!("--scheme kmer -k {k} --kmer-mode non-overlapping")
            }
            _ => return None,
        };
        if !self.add_cls {
            flags.push_str(" --no-cls");
        }
        if !self.add_sep {
            flags.push_str(" --no-sep");
        }
        Some(flags)
    }

    /// [PAD], [CLS] and [SEP]: tokens that stand for no bases (no span, no importance, never
    /// masked).
    pub fn is_boundary(&self, id: u32) -> bool {
        id == self.pad_id || Some(id) == self.cls_id || Some(id) == self.sep_id
    }

    /// Any of the five special tokens.
    pub fn is_special(&self, id: u32) -> bool {
        self.is_boundary(id) || Some(id) == self.mask_id || Some(id) == self.unk_id
    }

    /// Whether masked-LM training may choose this token to predict: anything but the boundary
    /// tokens and [MASK] itself. [UNK] stands for real (unknown) sequence, so it can be chosen.
    pub fn is_maskable(&self, id: u32) -> bool {
        !self.is_boundary(id) && Some(id) != self.mask_id
    }

    /// The ids a random replacement draws from: every token that is not a special token.
    pub fn non_special_ids(&self) -> Vec<u32> {
        (0..self.vocab_size() as u32)
            .filter(|&id| !self.is_special(id))
            .collect()
    }

    /// Bases covered by token `t` of a record, as `[start, end)` offsets into the record's
    /// window, for the fixed-width schemes; `None` for specials and the `hf` scheme.
    pub fn token_span(&self, token_index: usize, id: u32) -> Option<(usize, usize)> {
        if self.is_boundary(id) {
            return None;
        }
        let pos = token_index - usize::from(self.add_cls);
        match self.scheme {
            TokenizerScheme::Nucleotide | TokenizerScheme::Characters => Some((pos, pos + 1)),
            TokenizerScheme::Kmer => {
                let k = self.k?;
                let step = self.kmer_step?;
                let width = self
                    .vocab
                    .get(id as usize)
                    .map(|t| t.len())
                    .unwrap_or(k)
                    .min(k);
                Some((pos * step, pos * step + width))
            }
            // Tokens of varying width: a span needs the tokens before it.
            TokenizerScheme::Hf | TokenizerScheme::EsmVocab => None,
        }
    }
}

impl TokenizerInfo {
    /// The bases each token of a row covers (`[start, end)` in the record's window; `None` for
    /// specials, padding and schemes without spans). Fixed-width schemes: [`Self::token_span`];
    /// `esm-vocab`: each token covers as many bases as its string has letters (6 or 1), from
    /// where the previous one ended; a token without letters (`<unk>`) one base.
    pub fn row_spans(&self, ids: &[u32], mask: &[u8]) -> Vec<Option<(usize, usize)>> {
        if self.scheme != TokenizerScheme::EsmVocab {
            return ids
                .iter()
                .zip(mask)
                .enumerate()
                .map(|(t, (&id, &m))| (m != 0).then(|| self.token_span(t, id)).flatten())
                .collect();
        }
        let mut at = 0usize;
        ids.iter()
            .zip(mask)
            .map(|(&id, &m)| {
                if m == 0 || self.is_boundary(id) {
                    return None;
                }
                let letters = self
                    .vocab
                    .get(id as usize)
                    .map_or(0, |t| t.bytes().take_while(u8::is_ascii_alphabetic).count());
                let width = if letters == 0 { 1 } else { letters };
                at += width;
                Some((at - width, at))
            })
            .collect()
    }
}

/// The tokenizer recorded in a Luminome safetensors file: a token or pair dataset (or its first
/// shard) or the checkpoint of a token model — what `luminome-tokenize --like` copies.
pub fn tokenizer_of(path: &std::path::Path) -> anyhow::Result<TokenizerInfo> {
    use anyhow::Context;
    let file = if path.exists() {
        path.to_path_buf()
    } else {
        super::shard_path(path, 0)
    };
    let tf = crate::tensorfile::TensorFile::open(&file)?;
    let doc: serde_json::Value = serde_json::from_str(
        tf.metadata()
            .get("luminome")
            .map(String::as_str)
            .unwrap_or(""),
    )
    .with_context(|| {
        format!(
            "{}: not a Luminome dataset or checkpoint (no readable luminome metadata)",
            file.display()
        )
    })?;
    match doc.get("tokenizer") {
        Some(t) => serde_json::from_value(t.clone())
            .with_context(|| format!("{}: unreadable tokenizer metadata", file.display())),
        None => anyhow::bail!(
            "{}: records no tokenizer (a model or dataset that does not read token ids)",
            file.display()
        ),
    }
}

/// The JSON document stored under `luminome` in a token dataset's `__metadata__`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TokenDatasetMeta {
    pub kind: String,
    pub format_version: u32,
    pub tokenizer: TokenizerInfo,
    /// Records in this file (this shard).
    pub num_records: u64,
    /// Records in the whole dataset, all shards.
    pub total_records: u64,
    /// Padded row length L.
    pub max_length: usize,
    pub has_labels: bool,
    pub has_soft_mask: bool,
    /// Distinct label values, sorted (empty without labels).
    pub label_values: Vec<i64>,
    /// Reverse-complement augmentation used: `none`, `both` or `only`.
    pub rc: String,
    pub sources: Vec<String>,
    /// `0-based half-open` — the convention of the coordinates in the index.
    pub coordinates: String,
    pub index_file: String,
    /// Shard number (and a second number reserved for the shard count, 0 = not recorded);
    /// `None` for a single-file dataset.
    pub shard: Option<(usize, usize)>,
    pub tool: String,
    pub tool_version: String,
    pub command_line: String,
}
