//! Reading back a per-region table written by an earlier run (`*.regions.tsv`), so that a new run
//! (other genes, window, N, normalisation or expression) reuses its regions, raw accessibility
//! and motif scores instead of rescanning.

use std::io::BufRead;
use std::path::Path;

use anyhow::Result;
use luminome_io::error::{read_error, Location};
use luminome_io::reference::Reference;
use luminome_io::InputError;

use crate::regions::RegionSet;

pub struct RegionTable {
    pub set: RegionSet,
    pub cell_types: Vec<String>,
    /// Raw accessibility per cell type, global region order.
    pub raw: Vec<Vec<f64>>,
    pub features: Vec<String>,
    /// Row-major `[regions × features]`.
    pub scores: Vec<f32>,
}

impl RegionTable {
    pub fn read(path: &Path, reference: &Reference) -> Result<Self> {
        let (reader, _) = luminome_io::compress::open(path, 1)?;
        let mut lines = reader.lines();
        let header = match lines.next() {
            Some(h) => h.map_err(|e| read_error(path, Location::Line(1), e))?,
            None => return Err(InputError::file(path, "empty region table").into()),
        };
        let cols: Vec<&str> = header.split('\t').collect();
        if cols.len() < 4 || cols[..4] != ["region", "chrom", "start", "end"] {
            return Err(InputError::line(
                path,
                1,
                "not a luminome-regions region table (expected region, chrom, start, end, ...)",
            )
            .into());
        }
        let raw_cols: Vec<(usize, String)> = cols
            .iter()
            .enumerate()
            .filter_map(|(i, c)| c.strip_prefix("acc_raw:").map(|ct| (i, ct.to_string())))
            .collect();
        if raw_cols.is_empty() {
            return Err(InputError::line(path, 1, "no acc_raw:<cell type> column").into());
        }
        let first_feature = cols
            .iter()
            .rposition(|c| c.starts_with("acc:") || c.starts_with("acc_raw:"))
            .map(|i| i + 1)
            .unwrap_or(4);
        let features: Vec<String> = cols[first_feature..]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let mut set = RegionSet::for_reference(reference.sequences());
        let mut raw = vec![Vec::new(); raw_cols.len()];
        let mut scores = Vec::new();
        let mut last: Option<(usize, u64)> = None;
        for (i, line) in lines.enumerate() {
            let n = i as u64 + 2;
            let line = line.map_err(|e| read_error(path, Location::Line(n), e))?;
            let f: Vec<&str> = line.split('\t').collect();
            if f.len() != cols.len() {
                return Err(InputError::line(
                    path,
                    n,
                    format!("{} columns, the header has {}", f.len(), cols.len()),
                )
                .into());
            }
            let num = |s: &str| -> Result<f64, InputError> {
                s.parse()
                    .map_err(|_| InputError::line(path, n, format!("{s:?} is not a number")))
            };
            let ci = set.chrom_index(f[1]).ok_or_else(|| {
                InputError::line(
                    path,
                    n,
                    format!("{:?} is not a sequence of the reference", f[1]),
                )
            })?;
            let (s, e) = (num(f[2])? as u64, num(f[3])? as u64);
            if s >= e || e > set.chroms[ci].length {
                return Err(
                    InputError::line(path, n, format!("bad region {}:{s}-{e}", f[1])).into(),
                );
            }
            if let Some((lc, le)) = last {
                if ci < lc || (ci == lc && s < le) {
                    return Err(InputError::line(
                        path,
                        n,
                        "regions are not in reference order or overlap",
                    )
                    .into());
                }
            }
            last = Some((ci, e));
            set.chroms[ci].regions.push((s, e));
            for (k, (col, _)) in raw_cols.iter().enumerate() {
                raw[k].push(num(f[*col])?);
            }
            for v in &f[first_feature..] {
                scores.push(num(v)? as f32);
            }
        }
        Ok(Self {
            set,
            cell_types: raw_cols.into_iter().map(|(_, c)| c).collect(),
            raw,
            features,
            scores,
        })
    }
}
