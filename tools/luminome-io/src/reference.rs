//! Reference FASTA with random access by interval.
//!
//! With a `.fai` beside it (and a `.gzi` for BGZF), sequence is read through noodles' indexed
//! reader. An uncompressed FASTA without an index is indexed in memory first. A gzip-compressed
//! FASTA without an index cannot be seeked, so it is loaded into memory (fine for a chromosome,
//! not for a genome: index it with `samtools faidx` then).
//!
//! A `.fai` is checked against the FASTA before it is trusted (a stale or hand-edited index
//! otherwise reads the wrong bases silently): for each record, the line before its first base
//! must be its `>name` header, its first line must hold `line_bases` bases ended by a line break
//! `line_width − line_bases` bytes long, and its last base must end a line. Up to
//! [`FAI_CHECKED_RECORDS`] records are checked (all of them for any genome assembled into
//! chromosomes; an evenly spaced sample, always with the last, beyond that).

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use std::io::{Read, Seek, SeekFrom};

use noodles::core::{Position, Region};
use noodles::fasta;

use crate::compress::Compression;
use crate::error::InputError;

enum Source {
    Indexed(fasta::io::IndexedReader<fasta::io::BufReader<File>>),
    Memory(HashMap<String, Vec<u8>>),
}

pub struct Reference {
    path: PathBuf,
    source: Source,
    /// Sequence names in file order, with lengths.
    sequences: Vec<(String, u64)>,
    lengths: HashMap<String, u64>,
}

impl Reference {
    pub fn open(path: &Path) -> Result<Self, InputError> {
        let mut fai = path.as_os_str().to_owned();
        fai.push(".fai");
        let fai = PathBuf::from(fai);
        let (_, compression) = crate::compress::open(path, 1)?;
        let indexable = fai.exists() || compression == Compression::None;
        if indexable {
            let builder = fasta::io::indexed_reader::Builder::default();
            let builder = if fai.exists() {
                builder
            } else {
                let index = fasta::fs::index(path).map_err(|e| {
                    InputError::file(path, format!("cannot index the reference FASTA: {e}"))
                })?;
                builder.set_index(index)
            };
            let mut reader = builder.build_from_path(path).map_err(|e| {
                InputError::file(
                    path,
                    format!(
                        "cannot open the indexed reference (is {} current?): {e}",
                        fai.display()
                    ),
                )
            })?;
            if fai.exists() {
                check_index(&mut reader, path, &fai)?;
            }
            let sequences: Vec<(String, u64)> = reader
                .index()
                .as_ref()
                .iter()
                .map(|r| (String::from_utf8_lossy(r.name()).into_owned(), r.length()))
                .collect();
            return Ok(Self::new(path, Source::Indexed(reader), sequences));
        }
        let mut reader = crate::fastx::open(path, 1)?;
        let mut map = HashMap::new();
        let mut sequences = Vec::new();
        while let Some(h) = reader.next_header()? {
            let mut seq = Vec::new();
            reader.read_sequence(&mut seq)?;
            sequences.push((h.name.clone(), seq.len() as u64));
            map.insert(h.name, seq);
        }
        if sequences.is_empty() {
            return Err(InputError::file(path, "reference FASTA has no records"));
        }
        Ok(Self::new(path, Source::Memory(map), sequences))
    }

    fn new(path: &Path, source: Source, sequences: Vec<(String, u64)>) -> Self {
        let lengths = sequences.iter().cloned().collect();
        Self {
            path: path.to_path_buf(),
            source,
            sequences,
            lengths,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn sequences(&self) -> &[(String, u64)] {
        &self.sequences
    }

    pub fn length(&self, chrom: &str) -> Option<u64> {
        self.lengths.get(chrom).copied()
    }

    /// Bases `[start, end)` of `chrom`, as stored (soft-masking kept). The caller checks bounds
    /// against [`Reference::length`] to give a message naming its own input line.
    pub fn fetch(&mut self, chrom: &str, start: u64, end: u64) -> Result<Vec<u8>, InputError> {
        let len = self.length(chrom).ok_or_else(|| {
            InputError::file(
                &self.path,
                format!("no sequence named {chrom:?} in the reference"),
            )
        })?;
        if start >= end || end > len {
            return Err(InputError::file(
                &self.path,
                format!("interval {chrom}:{start}-{end} is outside {chrom} (length {len})"),
            ));
        }
        match &mut self.source {
            Source::Memory(map) => Ok(map[chrom][start as usize..end as usize].to_vec()),
            Source::Indexed(reader) => {
                let from = Position::try_from(start as usize + 1).expect("start + 1 > 0");
                let to = Position::try_from(end as usize).expect("end > start >= 0");
                let region = Region::new(chrom, from..=to);
                let record = reader.query(&region).map_err(|e| {
                    InputError::file(
                        &self.path,
                        format!("cannot read {chrom}:{start}-{end}: {e}"),
                    )
                })?;
                check_fetched_lines(reader, &self.path, chrom, start, end)?;
                Ok(record.sequence().as_ref().to_vec())
            }
        }
    }
}

/// Checks that the lines a fetch spanned have the `.fai`'s geometry (bases, then the line
/// break where the index puts it). [`check_index`] verifies a record's first line and its end;
/// a line of another length inside the record (lines shuffled or edited after indexing) would
/// otherwise shift every base after it, silently.
fn check_fetched_lines(
    reader: &mut fasta::io::IndexedReader<fasta::io::BufReader<File>>,
    path: &Path,
    chrom: &str,
    start: u64,
    end: u64,
) -> Result<(), InputError> {
    let Some((offset, lb, lw)) = reader
        .index()
        .as_ref()
        .iter()
        .find(|r| r.name() == chrom.as_bytes())
        .map(|r| {
            (
                r.position(),
                r.line_base_count().get(),
                r.line_width().get(),
            )
        })
    else {
        return Ok(());
    };
    let (first_line, last_line) = (start / lb, (end - 1) / lb);
    let from = offset + first_line * lw;
    let raw = read_at(
        reader.get_mut(),
        from,
        ((last_line - first_line + 1) * lw) as usize,
    )
    .map_err(|e| InputError::file(path, format!("cannot read {chrom}:{start}-{end}: {e}")))?;
    for (i, line) in raw.chunks(lw as usize).enumerate() {
        let line_no = first_line + i as u64;
        // Bases of this line the fetch used: all `lb` of them but on the last line fetched,
        // which may also be the record's (short) last line.
        let used = (end - line_no * lb).min(lb) as usize;
        let bases_ok = line.len() >= used
            && !line[..used]
                .iter()
                .any(|&b| b == b'\n' || b == b'\r' || b == b'>');
        let break_ok = line_no == last_line || line.ends_with(b"\n");
        if !(bases_ok && break_ok) {
            return Err(InputError::file(
                path,
                format!(
                    "its index does not match it inside record {chrom:?} (line {} of the record does not hold {lb} bases where the index says): the index is stale; rebuild it with `samtools faidx {}`, or delete it (an uncompressed FASTA is then indexed in memory)",
                    line_no + 1,
                    path.display()
                ),
            ));
        }
    }
    Ok(())
}

/// How many `.fai` records [`check_index`] verifies at most.
pub const FAI_CHECKED_RECORDS: usize = 5000;

/// Bytes of `len` at uncompressed `pos` (fewer at the end of the file).
fn read_at<R: Read + Seek>(r: &mut R, pos: u64, len: usize) -> std::io::Result<Vec<u8>> {
    r.seek(SeekFrom::Start(pos))?;
    let mut buf = Vec::with_capacity(len);
    r.take(len as u64).read_to_end(&mut buf)?;
    Ok(buf)
}

/// Checks a `.fai` against the FASTA it indexes (see the module documentation).
fn check_index(
    reader: &mut fasta::io::IndexedReader<fasta::io::BufReader<File>>,
    path: &Path,
    fai: &Path,
) -> Result<(), InputError> {
    let records: Vec<(String, u64, u64, u64, u64)> = reader
        .index()
        .as_ref()
        .iter()
        .map(|r| {
            (
                String::from_utf8_lossy(r.name()).into_owned(),
                r.length(),
                r.position(),
                r.line_base_count().get(),
                r.line_width().get(),
            )
        })
        .collect();
    let n = records.len();
    let step = n.div_ceil(FAI_CHECKED_RECORDS).max(1);
    let inner = reader.get_mut();
    let bad = |name: &str, what: String| {
        InputError::file(
            path,
            format!(
                "its index {} does not match it at record {name:?} ({what}): the index is stale or was made for another file; rebuild it with `samtools faidx {}`, or delete it (an uncompressed FASTA is then indexed in memory)",
                fai.display(),
                path.display()
            ),
        )
    };
    let io = |e: std::io::Error| {
        InputError::file(path, format!("cannot read it to check its index: {e}"))
    };
    for (i, (name, length, offset, line_bases, line_width)) in records.iter().enumerate() {
        if i % step != 0 && i + 1 != n {
            continue;
        }
        let (length, offset, lb, lw) = (*length, *offset, *line_bases, *line_width);
        if length == 0 {
            continue;
        }
        if lw <= lb || lw - lb > 2 {
            return Err(bad(
                name,
                format!("line width {lw} for {lb} bases per line"),
            ));
        }
        // The header line just before the first base.
        let back = offset.min(4096);
        let head = read_at(inner, offset - back, back as usize).map_err(io)?;
        let header_ok = head.ends_with(b"\n") && {
            let body = &head[..head.len() - 1];
            let body = body.strip_suffix(b"\r").unwrap_or(body);
            let start = body.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
            let line = &body[start..];
            (start > 0 || back == offset)
                && line.first() == Some(&b'>')
                && line[1..]
                    .split(|b| b.is_ascii_whitespace())
                    .next()
                    .is_some_and(|w| w == name.as_bytes())
        };
        if !header_ok {
            return Err(bad(
                name,
                format!("no \">{name}\" header ends at byte {offset}"),
            ));
        }
        // The first line: `lb` bases (or the whole record), then its line break.
        let first = lb.min(length);
        let line = read_at(inner, offset, (first + (lw - lb)) as usize).map_err(io)?;
        let (bases, rest) = line.split_at(line.len().min(first as usize));
        if bases.len() as u64 != first
            || bases.iter().any(|&b| b == b'\n' || b == b'\r' || b == b'>')
        {
            return Err(bad(
                name,
                format!("its first line does not hold {first} bases"),
            ));
        }
        if length > lb && !(rest == b"\n" || rest == b"\r\n") {
            return Err(bad(
                name,
                format!("its lines are not {lb} bases wide ({lw} bytes with the line break)"),
            ));
        }
        // The last base ends a line (or the file).
        let last = offset + (length - 1) / lb * lw + (length - 1) % lb;
        let tail = read_at(inner, last, 2).map_err(io)?;
        let ends = match tail.as_slice() {
            [b, rest @ ..] => {
                !matches!(b, b'\n' | b'\r' | b'>') && matches!(rest, [] | [b'\n'] | [b'\r'])
            }
            [] => false,
        };
        if !ends {
            return Err(bad(
                name,
                format!("its length {length} does not end its sequence"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod fai_tests {
    use super::*;

    const FASTA: &str = ">chrA first\nACGTACGTAC\nGTACGTACGT\nAC\n>chrB\nTTTTGGGGCC\nAA\n";
    const FAI: &str = "chrA\t22\t12\t10\t11\nchrB\t12\t43\t10\t11\n";

    fn open_with(fasta: &str, fai: &str) -> Result<Reference, InputError> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.fa");
        std::fs::write(&p, fasta).unwrap();
        std::fs::write(dir.path().join("r.fa.fai"), fai).unwrap();
        let r = Reference::open(&p);
        drop(dir);
        r
    }

    #[test]
    fn a_matching_index_is_used() {
        let mut r = open_with(FASTA, FAI).unwrap();
        assert_eq!(r.fetch("chrA", 8, 14).unwrap(), b"ACGTAC");
        assert_eq!(r.fetch("chrB", 10, 12).unwrap(), b"AA");
    }

    #[test]
    fn lines_moved_inside_a_record_after_indexing_are_refused_when_fetched() {
        // chrA's short last line moved up: its first line and its end still match the index,
        // but every base after the first line would be read shifted.
        let moved = ">chrA first\nACGTACGTAC\nAC\nGTACGTACGT\n>chrB\nTTTTGGGGCC\nAA\n";
        let mut r = open_with(moved, FAI).unwrap();
        assert_eq!(r.fetch("chrA", 0, 8).unwrap(), b"ACGTACGT");
        let e = r.fetch("chrA", 8, 22).unwrap_err().to_string();
        assert!(
            e.contains("inside record \"chrA\"") && e.contains("line 2"),
            "{e}"
        );
        assert_eq!(r.fetch("chrB", 10, 12).unwrap(), b"AA");
    }

    #[test]
    fn a_stale_or_wrong_index_is_refused_naming_the_record() {
        for (fai, record, what) in [
            // line bases and line width swapped: every base after the first line was misread
            (
                "chrA\t22\t12\t11\t10\nchrB\t12\t43\t10\t11\n",
                "chrA",
                "line width",
            ),
            // a header renamed in the FASTA without re-indexing (offsets still right)
            (
                "chrA\t22\t12\t10\t11\nchrX\t12\t43\t10\t11\n",
                "chrX",
                "header",
            ),
            // offsets of another file: the sequence starts 14 bytes later than indexed
            (
                "chrA\t22\t26\t10\t11\nchrB\t12\t43\t10\t11\n",
                "chrA",
                "header",
            ),
            // a length that does not end the record
            (
                "chrA\t21\t12\t10\t11\nchrB\t12\t43\t10\t11\n",
                "chrA",
                "length",
            ),
        ] {
            let e = open_with(FASTA, fai).err().expect(fai).to_string();
            assert!(
                e.contains("r.fa: its index")
                    && e.contains(&format!("{record:?}"))
                    && e.contains(what)
                    && e.contains("samtools faidx"),
                "{fai:?}: {e}"
            );
        }
    }
}
