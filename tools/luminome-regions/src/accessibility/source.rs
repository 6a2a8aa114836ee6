//! Where accessibility comes from: one `CELLTYPE=[KIND:]PATH` source per cell type, how its
//! chromosome names map onto the reference's, and the counting options.

use std::path::PathBuf;

use anyhow::Result;
use luminome_io::bam::BamFilter;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceKind {
    BigWig,
    BedGraph,
    Fragments,
    Bam,
    Counts,
}

impl SourceKind {
    pub fn name(self) -> &'static str {
        match self {
            SourceKind::BigWig => "bigwig",
            SourceKind::BedGraph => "bedgraph",
            SourceKind::Fragments => "fragments",
            SourceKind::Bam => "bam",
            SourceKind::Counts => "counts",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "bigwig" | "bw" => SourceKind::BigWig,
            "bedgraph" | "bdg" => SourceKind::BedGraph,
            "fragments" => SourceKind::Fragments,
            "bam" => SourceKind::Bam,
            "counts" => SourceKind::Counts,
            _ => return None,
        })
    }

    /// Coverage tracks can also be used to call peaks.
    pub fn is_coverage(self) -> bool {
        matches!(self, SourceKind::BigWig | SourceKind::BedGraph)
    }
}

/// One `CELLTYPE=[KIND:]PATH` argument.
#[derive(Debug, Clone, PartialEq)]
pub struct AccessibilitySource {
    pub cell_type: String,
    pub kind: SourceKind,
    pub path: PathBuf,
}

impl AccessibilitySource {
    /// Parse `CELLTYPE=PATH` or `CELLTYPE=KIND:PATH`; the kind is guessed from the file name
    /// when not given (`.bw`/`.bigwig`, `.bam`, `.bedgraph`/`.bdg`, `fragments*.tsv[.gz]`).
    pub fn parse(arg: &str) -> Result<Self, String> {
        let (cell, rest) = arg
            .split_once('=')
            .ok_or_else(|| format!("{arg:?}: expected CELLTYPE=PATH or CELLTYPE=KIND:PATH"))?;
        if cell.is_empty() {
            return Err(format!("{arg:?}: empty cell type"));
        }
        let (kind, path) = match rest.split_once(':') {
            Some((k, p)) if SourceKind::parse(k).is_some() => (SourceKind::parse(k), p),
            _ => (None, rest),
        };
        let kind = match kind {
            Some(k) => k,
            None => {
                let lower = path.to_ascii_lowercase();
                let base = luminome_io::compress::format_name(std::path::Path::new(&lower));
                if lower.ends_with(".bw") || lower.ends_with(".bigwig") {
                    SourceKind::BigWig
                } else if lower.ends_with(".bam") {
                    SourceKind::Bam
                } else if base.ends_with(".bedgraph") || base.ends_with(".bdg") {
                    SourceKind::BedGraph
                } else if lower.contains("fragments") {
                    SourceKind::Fragments
                } else {
                    return Err(format!(
                        "{arg:?}: cannot tell the kind of {path:?} from its name; write {cell}=KIND:{path} with KIND one of bigwig, bedgraph, fragments, bam, counts"
                    ));
                }
            }
        };
        Ok(Self {
            cell_type: cell.to_string(),
            kind,
            path: PathBuf::from(path),
        })
    }
}

/// How chromosome names of accessibility files are mapped onto the reference's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChromRename {
    /// Names must match exactly.
    Exact,
    /// `22` in the file is `chr22` in the reference.
    AddChr,
    /// `chr22` in the file is `22` in the reference.
    RemoveChr,
}

impl ChromRename {
    pub fn apply<'a>(self, name: &'a str) -> std::borrow::Cow<'a, str> {
        match self {
            ChromRename::Exact => name.into(),
            ChromRename::AddChr => format!("chr{name}").into(),
            ChromRename::RemoveChr => name.strip_prefix("chr").unwrap_or(name).into(),
        }
    }
}

/// Fragments counting mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FragmentMode {
    Insertions,
    Fragments,
}

#[derive(Debug, Clone, Copy)]
pub struct CountOptions {
    pub rename: ChromRename,
    pub fragment_mode: FragmentMode,
    pub bam: BamFilter,
}
