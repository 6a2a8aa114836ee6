//! The index beside a paired dataset: one row per record with its window on the genome and, for
//! variant windows, the variant.

use std::io::BufRead;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

/// The index columns before any `info_<KEY>` columns.
pub const PAIR_INDEX_COLUMNS: [&str; 11] = [
    "record",
    "name",
    "coords",
    "site",
    "variant_id",
    "chrom",
    "pos",
    "ref",
    "alt",
    "ref_match",
    "line",
];

/// The variant a window is centred on (one ALT allele).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VariantSite {
    pub id: String,
    pub chrom: String,
    /// 1-based position.
    pub pos: u64,
    pub reference: String,
    pub alternate: String,
    /// Whether the REF allele equals the reference FASTA's base.
    pub ref_match: bool,
    /// Line (VCF, table) or record number (BCF) of the variant in its file.
    pub line: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PairIndexRow {
    pub record: u64,
    pub name: String,
    /// `chrom:start-end(+)` of the window's bases, 0-based half-open (`.` when unknown).
    pub coords: String,
    /// Index of the variant site in the window.
    pub site: Option<usize>,
    pub variant: Option<VariantSite>,
    /// Values of the kept INFO fields, in the dataset's `info_keys` order (`.` when absent).
    pub info: Vec<String>,
}

/// The index path of a dataset: `x.safetensors` → `x.index.tsv`.
pub fn pair_index_path(dataset: &Path) -> PathBuf {
    crate::token_dataset::index_path_for(dataset)
}

impl PairIndexRow {
    pub fn header(info_keys: &[String]) -> String {
        let mut h: Vec<String> = PAIR_INDEX_COLUMNS.iter().map(|s| s.to_string()).collect();
        h.extend(info_keys.iter().map(|k| format!("info_{k}")));
        h.join("\t")
    }

    pub fn to_line(&self) -> String {
        let dot = || ".".to_string();
        let mut f = vec![
            self.record.to_string(),
            self.name.clone(),
            self.coords.clone(),
            self.site.map(|s| s.to_string()).unwrap_or_else(dot),
        ];
        match &self.variant {
            Some(v) => f.extend([
                v.id.clone(),
                v.chrom.clone(),
                v.pos.to_string(),
                v.reference.clone(),
                v.alternate.clone(),
                u8::from(v.ref_match).to_string(),
                v.line.to_string(),
            ]),
            None => f.extend(std::iter::repeat_n(dot(), 7)),
        }
        f.extend(self.info.iter().cloned());
        f.join("\t")
    }
}

/// Reads the index of a paired dataset with `info_keys` extra columns.
pub fn read_pair_index(path: &Path, info_keys: &[String]) -> Result<Vec<PairIndexRow>> {
    let (reader, _) = crate::compress::open(path, 1)?;
    let header = PairIndexRow::header(info_keys);
    let width = PAIR_INDEX_COLUMNS.len() + info_keys.len();
    let mut rows = Vec::new();
    for (i, line) in reader.lines().enumerate() {
        let line =
            line.with_context(|| format!("{}: line {}: cannot read", path.display(), i + 1))?;
        if i == 0 {
            if line.trim_end() != header {
                bail!(
                    "{}: line 1: not the header of a Luminome paired-dataset index",
                    path.display()
                );
            }
            continue;
        }
        let f: Vec<&str> = line.split('\t').collect();
        let bad = || anyhow::anyhow!("{}: line {}: malformed index row", path.display(), i + 1);
        if f.len() != width {
            return Err(bad());
        }
        let variant = if f[4] == "." && f[5] == "." {
            None
        } else {
            Some(VariantSite {
                id: f[4].to_string(),
                chrom: f[5].to_string(),
                pos: f[6].parse().map_err(|_| bad())?,
                reference: f[7].to_string(),
                alternate: f[8].to_string(),
                ref_match: f[9] == "1",
                line: f[10].parse().map_err(|_| bad())?,
            })
        };
        rows.push(PairIndexRow {
            record: f[0].parse().map_err(|_| bad())?,
            name: f[1].to_string(),
            coords: f[2].to_string(),
            site: match f[3] {
                "." => None,
                s => Some(s.parse().map_err(|_| bad())?),
            },
            variant,
            info: f[11..].iter().map(|s| s.to_string()).collect(),
        });
    }
    Ok(rows)
}
