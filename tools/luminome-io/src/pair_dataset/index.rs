//! The index beside a paired dataset: one row per record with its window on the genome and, for
//! variant windows, the variant.

use std::io::BufRead;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::token_dataset::Interval;

/// The index columns before any `info_<KEY>` columns (format version 2): the window BED-style
/// (`window_chrom window_start window_end`, 0-based half-open) and as a 1-based inclusive
/// `window_region` samtools/IGV read, then the variant (`chrom pos` as its VCF has them).
pub const PAIR_INDEX_COLUMNS: [&str; 14] = [
    "record",
    "name",
    "window_chrom",
    "window_start",
    "window_end",
    "window_region",
    "site",
    "variant_id",
    "chrom",
    "pos",
    "ref",
    "alt",
    "ref_match",
    "line",
];

/// Format version 1's columns: one `coords` column, `chrom:start-end(+)` 0-based half-open.
const PAIR_INDEX_COLUMNS_V1: [&str; 11] = [
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
    /// The window's bases on the forward strand (`None` when unknown).
    pub window: Option<Interval>,
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
        header_of(&PAIR_INDEX_COLUMNS, info_keys)
    }

    pub fn to_line(&self) -> String {
        let dot = || ".".to_string();
        let window = match &self.window {
            Some(w) => [
                w.chrom.clone(),
                w.start.to_string(),
                w.end.to_string(),
                w.region(),
            ],
            None => [dot(), dot(), dot(), dot()],
        };
        let mut f = vec![self.record.to_string(), self.name.clone()];
        f.extend(window);
        f.extend([self.site.map(|s| s.to_string()).unwrap_or_else(dot)]);
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

fn header_of(columns: &[&str], info_keys: &[String]) -> String {
    let mut h: Vec<String> = columns.iter().map(|s| s.to_string()).collect();
    h.extend(info_keys.iter().map(|k| format!("info_{k}")));
    h.join("\t")
}

/// Reads the index of a paired dataset with `info_keys` extra columns: format version 2, or
/// version 1 (a `coords` column).
pub fn read_pair_index(path: &Path, info_keys: &[String]) -> Result<Vec<PairIndexRow>> {
    let (reader, _) = crate::compress::open(path, 1)?;
    let mut v1 = false;
    let mut rows = Vec::new();
    for (i, line) in reader.lines().enumerate() {
        let line =
            line.with_context(|| format!("{}: line {}: cannot read", path.display(), i + 1))?;
        if i == 0 {
            v1 = line.trim_end() == header_of(&PAIR_INDEX_COLUMNS_V1, info_keys);
            if !v1 && line.trim_end() != PairIndexRow::header(info_keys) {
                bail!(
                    "{}: line 1: not the header of a Luminome paired-dataset index",
                    path.display()
                );
            }
            continue;
        }
        let f: Vec<&str> = line.split('\t').collect();
        let bad = || anyhow::anyhow!("{}: line {}: malformed index row", path.display(), i + 1);
        let fixed = if v1 {
            PAIR_INDEX_COLUMNS_V1.len()
        } else {
            PAIR_INDEX_COLUMNS.len()
        };
        if f.len() != fixed + info_keys.len() {
            return Err(bad());
        }
        let (window, rest) = if v1 {
            (Interval::parse_v1(f[2]), &f[3..])
        } else {
            (Interval::from_columns(&f[2..5]).ok_or_else(bad)?, &f[6..])
        };
        rows.push(row_from(&f[..2], window, rest).ok_or_else(bad)?);
    }
    Ok(rows)
}

/// A row from `record name`, its window, and the columns from `site` on.
fn row_from(head: &[&str], window: Option<Interval>, f: &[&str]) -> Option<PairIndexRow> {
    let variant = if f[1] == "." && f[2] == "." {
        None
    } else {
        Some(VariantSite {
            id: f[1].to_string(),
            chrom: f[2].to_string(),
            pos: f[3].parse().ok()?,
            reference: f[4].to_string(),
            alternate: f[5].to_string(),
            ref_match: f[6] == "1",
            line: f[7].parse().ok()?,
        })
    };
    Some(PairIndexRow {
        record: head[0].parse().ok()?,
        name: head[1].to_string(),
        window,
        site: match f[0] {
            "." => None,
            s => Some(s.parse().ok()?),
        },
        variant,
        info: f[8..].iter().map(|s| s.to_string()).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_1_and_2_indexes_read_the_same_rows() {
        let dir = tempfile::tempdir().unwrap();
        let keys = vec!["AF".to_string()];
        let v1 = dir.path().join("v1.index.tsv");
        std::fs::write(
            &v1,
            format!(
                "{}\n0\tw0\tI:0-128(+)\t.\t.\t.\t.\t.\t.\t.\t.\t.\n1\tv1\tI:36-164(+)\t64\trs1\tchrI\t101\tA\tG\t1\t4\t0.5\n",
                header_of(&PAIR_INDEX_COLUMNS_V1, &keys)
            ),
        )
        .unwrap();
        let rows = read_pair_index(&v1, &keys).unwrap();
        assert_eq!(rows[1].variant.as_ref().unwrap().chrom, "chrI");
        let v2 = dir.path().join("v2.index.tsv");
        let lines: Vec<String> = rows.iter().map(PairIndexRow::to_line).collect();
        std::fs::write(
            &v2,
            format!("{}\n{}\n", PairIndexRow::header(&keys), lines.join("\n")),
        )
        .unwrap();
        assert_eq!(read_pair_index(&v2, &keys).unwrap(), rows);
        assert_eq!(
            lines[1],
            "1\tv1\tI\t36\t164\tI:37-164\t64\trs1\tchrI\t101\tA\tG\t1\t4\t0.5"
        );
    }
}
