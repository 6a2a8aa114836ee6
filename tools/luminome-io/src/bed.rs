//! BED and narrowPeak intervals (0-based, half-open).
//!
//! One parser for BED3–BED6+ and narrowPeak (BED6+4): the first six columns are read by
//! position, anything after them is kept as text in `extra` (for narrowPeak: signalValue,
//! pValue, qValue, summit). `track`, `browser` and `#` lines are skipped. Errors name the line.

use std::io::BufRead;
use std::path::{Path, PathBuf};

use crate::error::{read_error, InputError, Location};
use crate::table::RowWidth;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Strand {
    Forward,
    Reverse,
    /// `.` or absent.
    Unknown,
}

impl Strand {
    pub fn symbol(self) -> char {
        match self {
            Strand::Forward => '+',
            Strand::Reverse => '-',
            Strand::Unknown => '.',
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "+" => Some(Strand::Forward),
            "-" => Some(Strand::Reverse),
            "." | "" => Some(Strand::Unknown),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct BedRecord {
    pub chrom: String,
    pub start: u64,
    pub end: u64,
    pub name: Option<String>,
    pub score: Option<String>,
    pub strand: Strand,
    /// Columns after the sixth, as text.
    pub extra: Vec<String>,
    /// 1-based line number in the source file.
    pub line: u64,
}

impl BedRecord {
    pub fn len(&self) -> u64 {
        self.end - self.start
    }

    pub fn is_empty(&self) -> bool {
        self.end == self.start
    }

    /// narrowPeak summit offset from `start` (column 10 of a 10-column line), when not -1;
    /// checked on reading to lie inside the peak.
    pub fn summit(&self) -> Option<u64> {
        if self.extra.len() != 4 {
            return None;
        }
        self.extra[3]
            .trim()
            .parse::<i64>()
            .ok()
            .and_then(|v| u64::try_from(v).ok())
    }

    /// `chrom:start-end(strand)` in 0-based half-open coordinates.
    pub fn coords(&self) -> String {
        format!(
            "{}:{}-{}({})",
            self.chrom,
            self.start,
            self.end,
            self.strand.symbol()
        )
    }
}

/// Reads BED/narrowPeak records one at a time.
pub struct BedReader<R> {
    inner: R,
    path: PathBuf,
    line_no: u64,
    buf: String,
    /// Every record as wide as the first (the UCSC BED format's rule): a row with a field
    /// dropped would otherwise shift its later columns (an Ensembl id read from the gene-type
    /// column) and be accepted silently.
    width: RowWidth,
}

impl<R: BufRead> BedReader<R> {
    pub fn new(inner: R, path: impl AsRef<Path>) -> Self {
        Self {
            inner,
            path: path.as_ref().to_path_buf(),
            line_no: 0,
            buf: String::new(),
            width: RowWidth::new(
                "the first record",
                "every BED line needs the same number of columns",
            ),
        }
    }

    pub fn read_record(&mut self) -> Result<Option<BedRecord>, InputError> {
        loop {
            self.buf.clear();
            let n = self
                .inner
                .read_line(&mut self.buf)
                .map_err(|e| read_error(&self.path, Location::Line(self.line_no + 1), e))?;
            if n == 0 {
                return Ok(None);
            }
            self.line_no += 1;
            let line = self.buf.trim_end_matches(['\n', '\r']);
            if line.trim().is_empty()
                || line.starts_with('#')
                || line.starts_with("track")
                || line.starts_with("browser")
            {
                continue;
            }
            let record = parse_line(line, &self.path, self.line_no)?;
            self.width
                .check(&self.path, self.line_no, column_count(line))?;
            return Ok(Some(record));
        }
    }
}

impl<R: BufRead> Iterator for BedReader<R> {
    type Item = Result<BedRecord, InputError>;
    fn next(&mut self) -> Option<Self::Item> {
        self.read_record().transpose()
    }
}

/// The largest coordinate accepted (2^40 ≈ 1.1 Tb, far past any chromosome): arithmetic on
/// coordinates (centres, flanks, widths) then cannot overflow.
pub const MAX_COORDINATE: u64 = 1 << 40;

/// The fields [`parse_line`] splits a line into, counted without allocating: tab-separated,
/// or whitespace-separated where the line has no tab.
fn column_count(line: &str) -> usize {
    if line.contains('\t') {
        line.matches('\t').count() + 1
    } else {
        line.split_ascii_whitespace().count()
    }
}

fn parse_line(line: &str, path: &Path, line_no: u64) -> Result<BedRecord, InputError> {
    let fields: Vec<&str> = if line.contains('\t') {
        line.split('\t').collect()
    } else {
        line.split_ascii_whitespace().collect()
    };
    let err = |msg: String| InputError::line(path, line_no, msg);
    if fields.len() < 3 {
        return Err(err(format!(
            "expected at least 3 tab-separated columns (chrom, start, end), found {}",
            fields.len()
        )));
    }
    let start: u64 = fields[1].trim().parse().map_err(|_| {
        err(format!(
            "start {:?} is not a non-negative integer",
            fields[1]
        ))
    })?;
    let end: u64 = fields[2]
        .trim()
        .parse()
        .map_err(|_| err(format!("end {:?} is not a non-negative integer", fields[2])))?;
    if start >= end {
        return Err(err(format!(
            "start ({start}) must be less than end ({end})"
        )));
    }
    if end > MAX_COORDINATE {
        return Err(err(format!(
            "end {end} is past any chromosome (coordinates stop at {MAX_COORDINATE})"
        )));
    }
    // narrowPeak (exactly 10 columns): the summit is an offset into the peak, or -1.
    if fields.len() == 10 {
        let s = fields[9].trim();
        match s.parse::<i64>() {
            Ok(-1) => {}
            Ok(v) if v >= 0 && (v as u64) < end - start => {}
            Ok(v) => {
                return Err(err(format!(
                "summit {v} is outside the peak (an offset from start in 0..{}, or -1 for none)",
                end - start
            )))
            }
            Err(_) => {
                return Err(err(format!(
                    "summit {s:?} (column 10) is not an integer offset (or -1 for none)"
                )))
            }
        }
    }
    let strand = match fields.get(5) {
        None => Strand::Unknown,
        Some(s) => Strand::parse(s.trim())
            .ok_or_else(|| err(format!("strand {s:?} is not '+', '-' or '.'")))?,
    };
    Ok(BedRecord {
        chrom: fields[0].trim().to_string(),
        start,
        end,
        name: fields.get(3).map(|s| s.to_string()).filter(|s| s != "."),
        score: fields.get(4).map(|s| s.to_string()),
        strand,
        extra: fields.iter().skip(6).map(|s| s.to_string()).collect(),
        line: line_no,
    })
}

/// Opens a (possibly compressed) BED/narrowPeak file.
pub fn open(path: &Path) -> Result<BedReader<Box<dyn BufRead + Send>>, InputError> {
    let (reader, _) = crate::compress::open(path, 1)?;
    Ok(BedReader::new(reader, path))
}

/// Reads every record of a BED/narrowPeak file.
pub fn read_all(path: &Path) -> Result<Vec<BedRecord>, InputError> {
    open(path)?.collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_bed6_and_narrowpeak() {
        let read = |text: &str| -> Vec<BedRecord> {
            BedReader::new(text.as_bytes(), "p.bed")
                .collect::<Result<_, _>>()
                .unwrap()
        };
        let bed6 = read("track name=x\n# c\nchr1\t10\t20\tp1\t5\t-\n");
        assert_eq!(bed6.len(), 1);
        assert_eq!(bed6[0].strand, Strand::Reverse);
        assert_eq!(bed6[0].coords(), "chr1:10-20(-)");
        assert_eq!(bed6[0].line, 3);
        let peaks = read("chr2\t0\t100\tpeak\t0\t.\t3.2\t-1\t1.5\t50\n");
        assert_eq!(peaks[0].summit(), Some(50));
        assert_eq!(peaks[0].name.as_deref(), Some("peak"));
    }

    #[test]
    fn summits_outside_the_peak_and_huge_coordinates_are_refused() {
        let p = Path::new("p.narrowPeak");
        for (summit, ok) in [
            ("99", true),
            ("-1", true),
            ("100", false),
            ("nan", false),
            ("-5", false),
        ] {
            let line = format!("chr2\t0\t100\tpeak\t0\t.\t3.2\t-1\t1.5\t{summit}");
            let r = parse_line(&line, p, 4);
            assert_eq!(r.is_ok(), ok, "summit {summit}: {r:?}");
            if let Err(e) = r {
                assert!(
                    e.to_string().starts_with("p.narrowPeak: line 4: summit"),
                    "{e}"
                );
            }
        }
        // u64::MAX used to overflow --width arithmetic into a window at the contig start.
        let e = parse_line("chr1\t0\t18446744073709551615", p, 2)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("line 2") && e.contains("past any chromosome"),
            "{e}"
        );
        // A 12-column BED's tenth column is blockCount, not a summit.
        let r = parse_line("chr1\t0\t100\tg\t0\t+\t0\t100\t0\t2\t10,10\t0,90", p, 1).unwrap();
        assert_eq!(r.summit(), None);
    }

    #[test]
    fn bed3_has_unknown_strand() {
        let r = parse_line("chr1\t1\t2", Path::new("a.bed"), 1).unwrap();
        assert_eq!(r.strand, Strand::Unknown);
        assert!(r.name.is_none());
    }

    #[test]
    fn bad_lines_name_the_line() {
        let text = "chr1\t10\t20\nchr1\t30\t30\n";
        let err = BedReader::new(text.as_bytes(), "p.bed")
            .collect::<Result<Vec<_>, _>>()
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "p.bed: line 2: start (30) must be less than end (30)"
        );
        let err = parse_line("chr1\tx\t20", Path::new("p.bed"), 7)
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 7") && err.contains("start"), "{err}");
        let err = parse_line("chr1\t1\t20\tn\t0\t?", Path::new("p.bed"), 1)
            .unwrap_err()
            .to_string();
        assert!(err.contains("strand"), "{err}");
    }

    #[test]
    fn a_row_with_a_dropped_column_is_refused_with_its_line() {
        // A gene BED whose second row lost its Ensembl id: the gene type would be read as the id.
        let text = "#chr\tstart\tend\tname\tscore\tstrand\tid\ttype\n\
            c\t1\t2\tA\t0\t+\tENSG1\tprotein_coding\n\
            c\t5\t6\tB\t0\t+\tprotein_coding\n";
        let err = BedReader::new(text.as_bytes(), "genes.bed")
            .collect::<Result<Vec<_>, _>>()
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "genes.bed: line 3: 7 columns where the first record (line 2) has 8: \
             every BED line needs the same number of columns"
        );
        let whitespace = "c 1 2 A\nc 5 6 B\n";
        assert_eq!(BedReader::new(whitespace.as_bytes(), "w.bed").count(), 2);
    }
}
