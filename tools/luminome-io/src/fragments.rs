//! 10x Genomics `fragments.tsv(.gz)`: `chrom start end barcode count`, 0-based half-open, one
//! row per unique fragment (count = number of duplicate reads). Coordinates are already
//! Tn5-shifted by Cell Ranger ATAC, so `start` and `end - 1` are the two insertion sites.

use std::io::BufRead;
use std::path::Path;

use crate::bed::MAX_COORDINATE;
use crate::error::{read_error, InputError, Location};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fragment<'a> {
    pub chrom: &'a str,
    pub start: u64,
    pub end: u64,
    /// Column 5 (duplicate count); 1 when absent.
    pub count: u32,
    /// 1-based line in the file, for errors the caller finds (an end past its chromosome).
    pub line: u64,
}

/// Stream every fragment to `visit`, stopping at its first error. Comment lines (`#`) are
/// skipped.
pub fn for_each_fragment(
    path: &Path,
    mut visit: impl FnMut(Fragment<'_>) -> Result<(), InputError>,
) -> Result<u64, InputError> {
    let (mut reader, _) = crate::compress::open(path, 2)?;
    let mut line = String::new();
    let mut n = 0u64;
    let mut rows = 0u64;
    loop {
        line.clear();
        let read = reader
            .read_line(&mut line)
            .map_err(|e| read_error(path, Location::Line(n + 1), e))?;
        if read == 0 {
            break;
        }
        n += 1;
        let l = line.trim_end();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        let mut f = l.split('\t');
        let (Some(chrom), Some(s), Some(e)) = (f.next(), f.next(), f.next()) else {
            return Err(InputError::line(
                path,
                n,
                "expected at least 3 tab-separated columns (chrom start end)",
            ));
        };
        let start: u64 = s
            .parse()
            .map_err(|_| InputError::line(path, n, format!("start {s:?} is not a number")))?;
        let end: u64 = e
            .parse()
            .map_err(|_| InputError::line(path, n, format!("end {e:?} is not a number")))?;
        if start >= end {
            return Err(InputError::line(
                path,
                n,
                format!("start ({start}) must be less than end ({end})"),
            ));
        }
        if end > MAX_COORDINATE {
            return Err(InputError::line(
                path,
                n,
                format!("end {end} is past any chromosome (coordinates stop at {MAX_COORDINATE})"),
            ));
        }
        let count = match f.nth(1) {
            Some(c) => c.trim().parse().map_err(|_| {
                InputError::line(path, n, format!("count {c:?} is not a whole number"))
            })?,
            None => 1,
        };
        rows += 1;
        visit(Fragment {
            chrom,
            start,
            end,
            count,
            line: n,
        })?;
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_rows_and_counts() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("fragments.tsv");
        std::fs::write(
            &p,
            "# comment\nchr1\t10\t50\tAAAC-1\t2\nchr1\t60\t90\tAAAG-1\t1\n",
        )
        .unwrap();
        let mut got = Vec::new();
        let n = for_each_fragment(&p, |f| {
            got.push((f.chrom.to_string(), f.start, f.end, f.count));
            Ok(())
        })
        .unwrap();
        assert_eq!(n, 2);
        assert_eq!(got[0], ("chr1".into(), 10, 50, 2));
    }

    #[test]
    fn inverted_fragment_is_refused_with_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("fragments.tsv");
        std::fs::write(&p, "chr1\t10\t50\tA\t1\nchr1\t90\t60\tB\t1\n").unwrap();
        let err = for_each_fragment(&p, |_| Ok(())).unwrap_err().to_string();
        assert!(
            err.contains("line 2") && err.contains("less than end"),
            "{err}"
        );
    }
}
