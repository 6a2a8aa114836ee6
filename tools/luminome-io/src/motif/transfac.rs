//! TRANSFAC matrices: records of two-letter keyed lines ending with `//`; `P0` (or `PO`) names the
//! letter columns, then one `NN  a c g t [consensus]` row per position. The motif name is `ID`
//! (else `AC`, else `NA`), and `NA` becomes the alternative name.

use std::path::Path;

use super::{check_row, not_dna, MatrixKind, MotifRecord};
use crate::error::InputError;

#[derive(Default)]
struct Pending {
    id: Option<String>,
    accession: Option<String>,
    factor: Option<String>,
    order: Option<[usize; 4]>,
    rows: Vec<[f64; 4]>,
    start: u64,
}

impl Pending {
    fn finish(self, path: &Path) -> Result<Option<MotifRecord>, InputError> {
        if self.rows.is_empty() && self.order.is_none() {
            return Ok(None);
        }
        let name = self
            .id
            .clone()
            .or(self.accession.clone())
            .or(self.factor.clone())
            .ok_or_else(|| InputError::line(path, self.start, "matrix without ID, AC or NA"))?;
        if self.rows.is_empty() {
            return Err(InputError::line(
                path,
                self.start,
                format!("motif {name:?} has no rows"),
            ));
        }
        let alt = self.factor.filter(|f| f != &name);
        Ok(Some(MotifRecord {
            name,
            alt_name: alt,
            kind: MatrixKind::Counts,
            rows: self.rows,
            nsites: None,
            line: self.start,
        }))
    }
}

pub fn parse(text: &str, path: &Path) -> Result<Vec<MotifRecord>, InputError> {
    let mut motifs = Vec::new();
    let mut cur = Pending::default();
    for (idx, raw) in text.lines().enumerate() {
        let line_no = idx as u64 + 1;
        let line = raw.trim_end();
        if line.trim().is_empty() {
            continue;
        }
        if cur.start == 0 {
            cur.start = line_no;
        }
        let key = line.get(..2).unwrap_or(line);
        let value = line.get(2..).unwrap_or("").trim();
        match key {
            "//" => {
                if let Some(m) = std::mem::take(&mut cur).finish(path)? {
                    motifs.push(m);
                }
            }
            "ID" => cur.id = Some(value.to_string()),
            "AC" => cur.accession = Some(value.to_string()),
            "NA" => cur.factor = Some(value.to_string()),
            "P0" | "PO" => {
                let letters: Vec<&str> = value.split_ascii_whitespace().collect();
                let mut order = [usize::MAX; 4];
                if letters.len() != 4 {
                    return Err(not_dna(path, line_no, value));
                }
                for (k, l) in letters.iter().enumerate() {
                    let idx = match l.to_ascii_uppercase().as_str() {
                        "A" => 0,
                        "C" => 1,
                        "G" => 2,
                        "T" => 3,
                        _ => return Err(not_dna(path, line_no, value)),
                    };
                    order[k] = idx;
                }
                cur.order = Some(order);
            }
            _ if key.chars().all(|c| c.is_ascii_digit()) && cur.order.is_some() => {
                let order = cur.order.unwrap_or([0, 1, 2, 3]);
                let fields: Vec<&str> = line.split_ascii_whitespace().collect();
                if fields.len() < 5 {
                    return Err(InputError::line(
                        path,
                        line_no,
                        format!("expected a position and 4 values, found {line:?}"),
                    ));
                }
                let mut row = [0.0; 4];
                for k in 0..4 {
                    row[order[k]] = fields[k + 1].parse().map_err(|_| {
                        InputError::line(
                            path,
                            line_no,
                            format!("{:?} is not a number", fields[k + 1]),
                        )
                    })?;
                }
                let name = cur.id.clone().or(cur.accession.clone()).unwrap_or_default();
                check_row(&row, path, line_no, &name)?;
                cur.rows.push(row);
            }
            _ => {}
        }
    }
    if let Some(m) = cur.finish(path)? {
        motifs.push(m);
    }
    Ok(motifs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_record_with_reordered_columns() {
        let text = "AC  M00001\nXX\nID  V$MYOD_01\nNA  MyoD\nP0      T      G      C      A\n01      1      2      3      4      A\n02      0      0      0      5      A\nXX\n//\n";
        let m = parse(text, Path::new("t.dat")).unwrap();
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].name, "V$MYOD_01");
        assert_eq!(m[0].alt_name.as_deref(), Some("MyoD"));
        assert_eq!(m[0].rows, vec![[4.0, 3.0, 2.0, 1.0], [5.0, 0.0, 0.0, 0.0]]);
        assert_eq!(m[0].line, 1);
    }

    #[test]
    fn zero_row_is_refused_with_its_line() {
        let text = "ID  Z\nP0 A C G T\n01 1 1 1 1\n02 0 0 0 0\n//\n";
        let err = parse(text, Path::new("t.dat")).unwrap_err().to_string();
        assert!(
            err.contains("t.dat: line 4") && err.contains("sums to zero"),
            "{err}"
        );
    }
}
