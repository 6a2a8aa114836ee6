//! JASPAR count matrices, plain (`>ID name` + 4 rows of counts, A C G T) and bracketed
//! (`>ID name` + `A [ 1 2 3 ]` rows, as on the JASPAR site). Rows are nucleotides, columns are
//! positions; the result is transposed to one row per position.

use std::path::Path;

use super::{check_row, not_dna, numbers, MatrixKind, MotifRecord};
use crate::error::InputError;

fn letter_index(label: &str) -> Option<usize> {
    match label {
        "A" | "a" => Some(0),
        "C" | "c" => Some(1),
        "G" | "g" => Some(2),
        "T" | "t" => Some(3),
        _ => None,
    }
}

/// One nucleotide row: an optional letter label, then counts (optionally inside `[ ]`).
fn parse_row(
    line: &str,
    path: &Path,
    line_no: u64,
) -> Result<(Option<usize>, Vec<f64>), InputError> {
    let cleaned = line.replace(['[', ']'], " ");
    let mut tokens = cleaned.split_ascii_whitespace().peekable();
    let mut label = None;
    if let Some(first) = tokens.peek() {
        if first.parse::<f64>().is_err() {
            let l = tokens.next().unwrap_or_default();
            label = Some(letter_index(l).ok_or_else(|| not_dna(path, line_no, l))?);
        }
    }
    let rest: Vec<&str> = tokens.collect();
    let values = numbers(&rest.join(" ")).ok_or_else(|| {
        InputError::line(path, line_no, format!("expected counts, found {line:?}"))
    })?;
    Ok((label, values))
}

pub fn parse(text: &str, path: &Path) -> Result<Vec<MotifRecord>, InputError> {
    let mut motifs = Vec::new();
    let mut lines = text.lines().enumerate().peekable();
    while let Some((idx, raw)) = lines.next() {
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        let header_no = idx as u64 + 1;
        let Some(header) = line.strip_prefix('>') else {
            return Err(InputError::line(
                path,
                header_no,
                format!("expected a '>ID name' header line, found {line:?}"),
            ));
        };
        let mut parts = header.split_ascii_whitespace();
        let name = parts
            .next()
            .ok_or_else(|| InputError::line(path, header_no, "header without a motif ID"))?
            .to_string();
        let alt = parts.next().map(str::to_string);
        let mut columns: [Option<(Vec<f64>, u64)>; 4] = Default::default();
        let mut next_plain = 0;
        while let Some((_, peek)) = lines.peek() {
            if peek.trim().is_empty() || peek.trim().starts_with('>') {
                break;
            }
            let (ridx, raw_row) = lines.next().unwrap_or_default();
            let row_no = ridx as u64 + 1;
            let (label, values) = parse_row(raw_row.trim(), path, row_no)?;
            let slot = label.unwrap_or(next_plain);
            if slot > 3 || columns[slot].is_some() {
                return Err(InputError::line(
                    path,
                    row_no,
                    format!("motif {name:?}: more than 4 nucleotide rows, or a repeated letter"),
                ));
            }
            columns[slot] = Some((values, row_no));
            next_plain += 1;
        }
        let mut parsed = Vec::with_capacity(4);
        for (k, c) in columns.into_iter().enumerate() {
            let (values, _) = c.ok_or_else(|| {
                InputError::line(
                    path,
                    header_no,
                    format!(
                        "motif {name:?}: the {} row is missing (need A, C, G and T)",
                        ["A", "C", "G", "T"][k]
                    ),
                )
            })?;
            parsed.push(values);
        }
        let width = parsed[0].len();
        if parsed.iter().any(|v| v.len() != width) || width == 0 {
            return Err(InputError::line(
                path,
                header_no,
                format!(
                    "motif {name:?}: the A, C, G and T rows have different lengths or are empty"
                ),
            ));
        }
        let mut rows = Vec::with_capacity(width);
        let [a, c, g, t] = [&parsed[0], &parsed[1], &parsed[2], &parsed[3]];
        for j in 0..width {
            let row = [a[j], c[j], g[j], t[j]];
            check_row(&row, path, header_no, &format!("{name} position {}", j + 1))?;
            rows.push(row);
        }
        motifs.push(MotifRecord {
            name,
            alt_name: alt,
            kind: MatrixKind::Counts,
            rows,
            nsites: None,
            line: header_no,
        });
    }
    Ok(motifs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_and_bracketed_give_the_same_matrix() {
        let plain = ">MA1.1 X\n1 2\n3 4\n5 6\n7 0\n";
        let bracketed = ">MA1.1 X\nA [ 1 2 ]\nC [ 3 4 ]\nG [ 5 6 ]\nT [ 7 0 ]\n";
        let a = parse(plain, Path::new("a.jaspar")).unwrap();
        let b = parse(bracketed, Path::new("b.jaspar")).unwrap();
        assert_eq!(a, b);
        assert_eq!(a[0].rows, vec![[1.0, 3.0, 5.0, 7.0], [2.0, 4.0, 6.0, 0.0]]);
        assert_eq!(a[0].alt_name.as_deref(), Some("X"));
        assert_eq!(a[0].kind, MatrixKind::Counts);
    }

    #[test]
    fn labelled_rows_may_come_in_any_order() {
        let text = ">M\nT [ 4 ]\nG [ 3 ]\nC [ 2 ]\nA [ 1 ]\n";
        assert_eq!(
            parse(text, Path::new("x")).unwrap()[0].rows,
            vec![[1.0, 2.0, 3.0, 4.0]]
        );
    }

    #[test]
    fn rna_letter_is_not_dna() {
        let text = ">M\nA [ 1 ]\nC [ 2 ]\nG [ 3 ]\nU [ 4 ]\n";
        let err = parse(text, Path::new("r.jaspar")).unwrap_err().to_string();
        assert!(
            err.contains("r.jaspar: line 5") && err.contains("not DNA"),
            "{err}"
        );
    }

    #[test]
    fn zero_position_is_refused() {
        let text = ">M\nA [ 1 0 ]\nC [ 2 0 ]\nG [ 3 0 ]\nT [ 4 0 ]\n";
        let err = parse(text, Path::new("z.jaspar")).unwrap_err().to_string();
        assert!(
            err.contains("line 1") && err.contains("position 2") && err.contains("sums to zero"),
            "{err}"
        );
    }
}
