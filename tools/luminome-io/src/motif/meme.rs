//! MEME motif format (version 4 text, as written by MEME, JASPAR and `jaspar2meme`).
//!
//! Reads the `ALPHABET=` line (must be ACGT), each `MOTIF id [alt]` and its
//! `letter-probability matrix:` block (`alength= 4 w= W nsites= N`). `log-odds matrix` blocks are
//! skipped: the scanner builds its own log-odds from the probabilities.

use std::path::Path;

use super::{check_row, not_dna, numbers, MatrixKind, MotifRecord};
use crate::error::InputError;

fn field(line: &str, key: &str) -> Option<String> {
    let rest = &line[line.find(key)? + key.len()..];
    rest.split_ascii_whitespace().next().map(str::to_string)
}

pub fn parse(text: &str, path: &Path) -> Result<Vec<MotifRecord>, InputError> {
    let lines: Vec<&str> = text.lines().collect();
    let mut motifs = Vec::new();
    let mut current: Option<(String, Option<String>, u64)> = None;
    let mut i = 0;
    while i < lines.len() {
        let line_no = i as u64 + 1;
        let line = lines[i].trim();
        i += 1;
        if let Some(rest) = line.strip_prefix("ALPHABET=") {
            let abc = rest.trim();
            if !abc.eq_ignore_ascii_case("ACGT") {
                return Err(not_dna(path, line_no, abc));
            }
        } else if line.starts_with("ALPHABET") {
            // Custom alphabet block: `ALPHABET "name" DNA-LIKE` is DNA; anything else is not.
            if !line.contains("DNA-LIKE") {
                return Err(not_dna(path, line_no, line));
            }
        } else if let Some(rest) = line.strip_prefix("MOTIF") {
            let mut parts = rest.split_ascii_whitespace();
            let name = parts.next().ok_or_else(|| {
                InputError::line(path, line_no, "MOTIF line without a motif name")
            })?;
            current = Some((name.to_string(), parts.next().map(str::to_string), line_no));
        } else if line.starts_with("letter-probability matrix") {
            let (name, alt, header_line) = current.take().ok_or_else(|| {
                InputError::line(
                    path,
                    line_no,
                    "letter-probability matrix before any MOTIF line",
                )
            })?;
            if let Some(alength) = field(line, "alength=") {
                if alength != "4" {
                    return Err(not_dna(path, line_no, &format!("alength= {alength}")));
                }
            }
            let width: Option<usize> = match field(line, "w=") {
                Some(w) => Some(w.parse().map_err(|_| {
                    InputError::line(path, line_no, format!("w= {w:?} is not a whole number"))
                })?),
                None => None,
            };
            let nsites = field(line, "nsites=").and_then(|s| s.parse::<f64>().ok());
            let mut rows = Vec::new();
            while i < lines.len() {
                let row_line = lines[i].trim();
                if row_line.is_empty() {
                    if rows.is_empty() {
                        i += 1;
                        continue;
                    }
                    break;
                }
                let Some(values) = numbers(row_line) else {
                    break;
                };
                if values.len() != 4 {
                    return Err(InputError::line(
                        path,
                        i as u64 + 1,
                        format!(
                            "motif {name:?}: expected 4 probabilities (A C G T), found {}",
                            values.len()
                        ),
                    ));
                }
                let row = [values[0], values[1], values[2], values[3]];
                check_row(&row, path, i as u64 + 1, &name)?;
                rows.push(row);
                i += 1;
                if width == Some(rows.len()) {
                    break;
                }
            }
            if let Some(w) = width {
                if rows.len() != w {
                    return Err(InputError::line(
                        path,
                        line_no,
                        format!("motif {name:?}: w= {w} but {} rows follow", rows.len()),
                    ));
                }
            }
            if rows.is_empty() {
                return Err(InputError::line(
                    path,
                    line_no,
                    format!("motif {name:?} has no rows"),
                ));
            }
            motifs.push(MotifRecord {
                name,
                alt_name: alt,
                kind: MatrixKind::Probabilities,
                rows,
                nsites,
                line: header_line,
            });
        }
    }
    if let Some((name, _, line)) = current {
        return Err(InputError::line(
            path,
            line,
            format!("motif {name:?} has no letter-probability matrix"),
        ));
    }
    Ok(motifs)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO: &str = "MEME version 4\n\nALPHABET= ACGT\n\nstrands: + -\n\n\
        MOTIF M1 ONE\nletter-probability matrix: alength= 4 w= 2 nsites= 10 E= 0\n\
        0.1 0.2 0.3 0.4\n1 0 0 0\nURL x\n\n\
        MOTIF M2\nlog-odds matrix: alength= 4 w= 1\n1 -1 -1 -1\n\
        letter-probability matrix: alength= 4 w= 1\n0.25 0.25 0.25 0.25\n";

    #[test]
    fn reads_probabilities_names_and_nsites() {
        let m = parse(TWO, Path::new("m.meme")).unwrap();
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].name, "M1");
        assert_eq!(m[0].alt_name.as_deref(), Some("ONE"));
        assert_eq!(m[0].rows, vec![[0.1, 0.2, 0.3, 0.4], [1.0, 0.0, 0.0, 0.0]]);
        assert_eq!(m[0].nsites, Some(10.0));
        assert_eq!(m[0].line, 7);
        assert_eq!(m[1].rows.len(), 1);
        assert_eq!(m[1].kind, MatrixKind::Probabilities);
    }

    #[test]
    fn protein_alphabet_is_refused_with_its_line() {
        let text = "MEME version 4\n\nALPHABET= ACDEFGHIKLMNPQRSTVWY\n";
        let err = parse(text, Path::new("p.meme")).unwrap_err().to_string();
        assert!(
            err.contains("p.meme: line 3") && err.contains("not DNA"),
            "{err}"
        );
    }

    #[test]
    fn zero_column_is_refused_with_its_line() {
        let text = "MEME version 4\nALPHABET= ACGT\nMOTIF Z\nletter-probability matrix: alength= 4 w= 2\n0.25 0.25 0.25 0.25\n0 0 0 0\n";
        let err = parse(text, Path::new("z.meme")).unwrap_err().to_string();
        assert!(
            err.contains("line 6") && err.contains("sums to zero"),
            "{err}"
        );
    }

    #[test]
    fn short_matrix_is_refused() {
        let text = "MEME version 4\nMOTIF S\nletter-probability matrix: alength= 4 w= 3\n0.25 0.25 0.25 0.25\n";
        let err = parse(text, Path::new("s.meme")).unwrap_err().to_string();
        assert!(err.contains("w= 3 but 1 rows"), "{err}");
    }
}
