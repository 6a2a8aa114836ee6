//! HOMER motif files: `>consensus<TAB>name<TAB>log-odds threshold[...]` followed by one row of
//! four probabilities (A C G T) per position.

use std::path::Path;

use super::{check_row, numbers, MatrixKind, MotifRecord};
use crate::error::InputError;

pub fn parse(text: &str, path: &Path) -> Result<Vec<MotifRecord>, InputError> {
    let mut motifs: Vec<MotifRecord> = Vec::new();
    for (idx, raw) in text.lines().enumerate() {
        let line_no = idx as u64 + 1;
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(header) = line.strip_prefix('>') {
            let fields: Vec<&str> = header.split('\t').collect();
            let consensus = fields[0].trim().to_string();
            let name = fields
                .get(1)
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| consensus.clone());
            motifs.push(MotifRecord {
                name,
                alt_name: Some(consensus).filter(|c| !c.is_empty()),
                kind: MatrixKind::Probabilities,
                rows: Vec::new(),
                nsites: None,
                line: line_no,
            });
            continue;
        }
        let motif = motifs.last_mut().ok_or_else(|| {
            InputError::line(path, line_no, "matrix row before the first '>' header")
        })?;
        let values = numbers(line).filter(|v| v.len() == 4).ok_or_else(|| {
            InputError::line(
                path,
                line_no,
                format!(
                    "motif {:?}: expected 4 numbers (A C G T), found {line:?}",
                    motif.name
                ),
            )
        })?;
        let row = [values[0], values[1], values[2], values[3]];
        check_row(&row, path, line_no, &motif.name)?;
        motif.rows.push(row);
    }
    if let Some(m) = motifs.iter().find(|m| m.rows.is_empty()) {
        return Err(InputError::line(
            path,
            m.line,
            format!("motif {:?} has no rows", m.name),
        ));
    }
    Ok(motifs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_name_consensus_and_rows() {
        let text = ">CCGGAAGT\tELK1(ETS)/Hela-Elk1-ChIP-Seq\t6.5\n0.1\t0.7\t0.1\t0.1\n0.001 0.001 0.997 0.001\n";
        let m = parse(text, Path::new("h.motif")).unwrap();
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].name, "ELK1(ETS)/Hela-Elk1-ChIP-Seq");
        assert_eq!(m[0].alt_name.as_deref(), Some("CCGGAAGT"));
        assert_eq!(m[0].rows[1], [0.001, 0.001, 0.997, 0.001]);
    }

    #[test]
    fn five_column_row_is_refused_with_its_line() {
        let text = ">A\tB\t1\n0.2 0.2 0.2 0.2 0.2\n";
        let err = parse(text, Path::new("h.motif")).unwrap_err().to_string();
        assert!(
            err.contains("h.motif: line 2") && err.contains("expected 4 numbers"),
            "{err}"
        );
    }
}
