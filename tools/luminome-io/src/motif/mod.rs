//! Motif databases: MEME, JASPAR (plain and bracketed), TRANSFAC and HOMER.
//!
//! Every parser returns the same [`MotifRecord`]: a name, an optional alternative name and one
//! `[A, C, G, T]` row per motif position, either raw counts or probabilities, together with the
//! line the motif starts on. Converting to probabilities with pseudocounts and to log-odds
//! happens later (in the scanner), so that the maths lives in one place.
//!
//! We parse the formats ourselves rather than through `lightmotif-io` because every error about
//! user input must name the file and the line (a column that sums to zero, an alphabet that is
//! not ACGT, a row of the wrong width), and `lightmotif-io` reports neither; HOMER it lacks.

use std::path::Path;

use crate::error::InputError;

pub mod homer;
pub mod jaspar;
pub mod meme;
pub mod transfac;

/// What the numbers of a motif matrix are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatrixKind {
    /// Observed counts (JASPAR, TRANSFAC, most HOMER-like count files).
    Counts,
    /// Letter probabilities (MEME, HOMER).
    Probabilities,
}

/// One motif: rows are positions, columns A, C, G, T.
#[derive(Debug, Clone, PartialEq)]
pub struct MotifRecord {
    /// Identifier (e.g. `MA0139.2`).
    pub name: String,
    /// Second name when the format has one (e.g. `CTCF`).
    pub alt_name: Option<String>,
    pub kind: MatrixKind,
    /// One `[A, C, G, T]` row per position.
    pub rows: Vec<[f64; 4]>,
    /// Number of sites the matrix was built from, when stated (MEME `nsites=`).
    pub nsites: Option<f64>,
    /// 1-based line of the motif's header.
    pub line: u64,
}

impl MotifRecord {
    /// Width of the motif in bp.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The motif's display label: `name` or `name alt_name`.
    pub fn label(&self) -> String {
        match &self.alt_name {
            Some(alt) => format!("{} {}", self.name, alt),
            None => self.name.clone(),
        }
    }
}

/// The motif file formats we read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MotifFormat {
    Meme,
    Jaspar,
    Transfac,
    Homer,
}

impl MotifFormat {
    pub fn parse(name: &str) -> Option<Self> {
        match name.to_ascii_lowercase().as_str() {
            "meme" => Some(Self::Meme),
            "jaspar" | "pfm" => Some(Self::Jaspar),
            "transfac" => Some(Self::Transfac),
            "homer" | "motif" | "motifs" => Some(Self::Homer),
            _ => None,
        }
    }

    /// Guess the format from the first non-blank line of the text.
    pub fn sniff(text: &str) -> Option<Self> {
        let first = text.lines().map(str::trim).find(|l| !l.is_empty())?;
        if first.starts_with("MEME version") {
            Some(Self::Meme)
        } else if first.starts_with('>') {
            // JASPAR headers are `>ID name`; HOMER headers are `>consensus\tname\tthreshold...`
            // and are followed by rows of 4 numbers rather than `A [ ... ]` / 4 rows of counts.
            let fields = first.split('\t').count();
            let second = text
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .nth(1)?;
            let second_is_row = second.split_ascii_whitespace().count() == 4
                && second
                    .split_ascii_whitespace()
                    .all(|t| t.parse::<f64>().is_ok());
            if fields >= 3 && second_is_row {
                Some(Self::Homer)
            } else {
                Some(Self::Jaspar)
            }
        } else if ["AC", "ID", "DE", "NA", "P0", "PO", "VV", "XX", "BF"]
            .iter()
            .any(|k| first.starts_with(k))
        {
            Some(Self::Transfac)
        } else {
            None
        }
    }
}

/// Read every motif of a file. `format` None: sniff it from the content.
pub fn read_motifs(
    path: &Path,
    format: Option<MotifFormat>,
) -> Result<Vec<MotifRecord>, InputError> {
    let (mut reader, _) = crate::compress::open(path, 1)?;
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut reader, &mut bytes)
        .map_err(|e| crate::error::read_error(path, crate::error::Location::File, e))?;
    let text = String::from_utf8(bytes).map_err(|e| {
        // Name the line of the first byte that is not UTF-8.
        let at = e.utf8_error().valid_up_to();
        let line = e.as_bytes()[..at].iter().filter(|&&b| b == b'\n').count() as u64 + 1;
        InputError::line(
            path,
            line,
            format!("byte {at} of the file is not UTF-8 text: a motif file is text (MEME, JASPAR, TRANSFAC or HOMER)"),
        )
    })?;
    let format = match format {
        Some(f) => f,
        None => MotifFormat::sniff(&text).ok_or_else(|| {
            InputError::file(
                path,
                "cannot tell the motif format (MEME, JASPAR, TRANSFAC or HOMER) from the first line; pass --motif-format",
            )
        })?,
    };
    let motifs = match format {
        MotifFormat::Meme => meme::parse(&text, path)?,
        MotifFormat::Jaspar => jaspar::parse(&text, path)?,
        MotifFormat::Transfac => transfac::parse(&text, path)?,
        MotifFormat::Homer => homer::parse(&text, path)?,
    };
    if motifs.is_empty() {
        return Err(InputError::file(path, "no motifs found"));
    }
    let mut seen = std::collections::HashMap::new();
    for m in &motifs {
        if let Some(prev) = seen.insert(m.name.clone(), m.line) {
            return Err(InputError::line(
                path,
                m.line,
                format!("motif {:?} appears twice (first at line {prev})", m.name),
            ));
        }
    }
    Ok(motifs)
}

/// Check one matrix row: finite, non-negative, not all zero. `line` is the row's own line.
pub(crate) fn check_row(
    row: &[f64; 4],
    path: &Path,
    line: u64,
    motif: &str,
) -> Result<(), InputError> {
    if row.iter().any(|v| !v.is_finite() || *v < 0.0) {
        return Err(InputError::line(
            path,
            line,
            format!("motif {motif:?}: values must be finite and non-negative, found {row:?}"),
        ));
    }
    if row.iter().sum::<f64>() <= 0.0 {
        return Err(InputError::line(
            path,
            line,
            format!(
                "motif {motif:?}: a position (column) sums to zero, so it has no probabilities"
            ),
        ));
    }
    Ok(())
}

/// Parse whitespace-separated numbers; `None` if any token is not a number.
pub(crate) fn numbers(line: &str) -> Option<Vec<f64>> {
    line.split_ascii_whitespace()
        .map(|t| t.parse::<f64>().ok())
        .collect()
}

/// An error for a non-DNA alphabet.
pub(crate) fn not_dna(path: &Path, line: u64, found: &str) -> InputError {
    InputError::line(
        path,
        line,
        format!("motif alphabet {found:?} is not DNA (A, C, G, T); only DNA motifs can be scanned"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_utf8_is_refused_with_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m.meme");
        std::fs::write(&p, b"MEME version 4\n\nALPHABET= ACGT\n\xff\xfe\n").unwrap();
        let e = read_motifs(&p, None).unwrap_err().to_string();
        assert!(
            e.contains("m.meme: line 4") && e.contains("not UTF-8"),
            "{e}"
        );
    }

    #[test]
    fn sniffs_each_format() {
        assert_eq!(
            MotifFormat::sniff("MEME version 4\n"),
            Some(MotifFormat::Meme)
        );
        assert_eq!(
            MotifFormat::sniff(">MA1 X\nA [ 1 2 ]\n"),
            Some(MotifFormat::Jaspar)
        );
        assert_eq!(
            MotifFormat::sniff(">ACGT\tname\t5.0\n0.1 0.2 0.3 0.4\n"),
            Some(MotifFormat::Homer)
        );
        assert_eq!(
            MotifFormat::sniff("AC M1\nXX\n"),
            Some(MotifFormat::Transfac)
        );
        assert_eq!(MotifFormat::sniff("hello\n"), None);
    }
}
