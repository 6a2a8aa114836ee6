//! A streaming FASTA/FASTQ reader.
//!
//! Records are read line by line, so a whole chromosome never has to sit in memory: a caller
//! asks for the header, then pulls sequence lines one at a time ([`FastxReader::read_sequence_line`])
//! or the whole sequence at once ([`FastxReader::read_sequence`]) for short records. CRLF line
//! endings and blank lines are accepted. FASTQ records must be the common four-line layout.

use std::io::BufRead;
use std::path::{Path, PathBuf};

use crate::error::{read_error, InputError, Location};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FastxFormat {
    Fasta,
    Fastq,
}

/// The header of the record being read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordHeader {
    /// 1-based record number in the file.
    pub number: u64,
    /// The identifier: the header up to the first whitespace.
    pub name: String,
    /// The rest of the header line.
    pub description: String,
    /// 1-based line number of the header line.
    pub line: u64,
}

pub struct FastxReader<R> {
    inner: R,
    path: PathBuf,
    format: Option<FastxFormat>,
    line_no: u64,
    record_no: u64,
    line: Vec<u8>,
    /// The current record's header, while its sequence is being read.
    current: Option<RecordHeader>,
    /// Bases of the current record handed out so far.
    bases_in_record: u64,
    /// Set when the current FASTQ record's single sequence line was handed out.
    fastq_seq_done: bool,
}

fn trim_eol(line: &mut Vec<u8>) {
    if line.last() == Some(&b'\n') {
        line.pop();
    }
    if line.last() == Some(&b'\r') {
        line.pop();
    }
}

impl<R: BufRead> FastxReader<R> {
    pub fn new(inner: R, path: impl AsRef<Path>) -> Self {
        Self {
            inner,
            path: path.as_ref().to_path_buf(),
            format: None,
            line_no: 0,
            record_no: 0,
            line: Vec::with_capacity(256),
            current: None,
            bases_in_record: 0,
            fastq_seq_done: false,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The format, known once the first record header has been read.
    pub fn format(&self) -> Option<FastxFormat> {
        self.format
    }

    fn here(&self) -> Location {
        match &self.current {
            Some(h) => Location::Record {
                number: h.number,
                name: Some(h.name.clone()),
            },
            None => Location::Line(self.line_no.max(1)),
        }
    }

    /// Reads one line into `self.line` (without its line ending). Returns false at end of file.
    fn next_line(&mut self) -> Result<bool, InputError> {
        self.line.clear();
        let n = self
            .inner
            .read_until(b'\n', &mut self.line)
            .map_err(|e| read_error(&self.path, self.here(), e))?;
        if n == 0 {
            return Ok(false);
        }
        self.line_no += 1;
        trim_eol(&mut self.line);
        Ok(true)
    }

    /// The first byte of the next line, without consuming it.
    fn peek_byte(&mut self) -> Result<Option<u8>, InputError> {
        // The error's location (which clones the record's name) only when there is an error:
        // this runs once per sequence line.
        match self.inner.fill_buf() {
            Ok(buf) => Ok(buf.first().copied()),
            Err(e) => Err(read_error(&self.path, self.here(), e)),
        }
    }

    /// Skips the rest of the current record, then reads the next header. `Ok(None)` at the end
    /// of the file.
    pub fn next_header(&mut self) -> Result<Option<RecordHeader>, InputError> {
        if self.current.is_some() {
            let mut sink = Vec::new();
            while self.read_sequence_line(&mut sink)? {
                sink.clear();
            }
        }
        loop {
            if !self.next_line()? {
                return Ok(None);
            }
            if self.line.is_empty() {
                continue;
            }
            let format = match self.line[0] {
                b'>' => FastxFormat::Fasta,
                b'@' => FastxFormat::Fastq,
                _ => {
                    let shown: String = String::from_utf8_lossy(&self.line)
                        .chars()
                        .take(40)
                        .collect();
                    return Err(InputError::line(
                        &self.path,
                        self.line_no,
                        format!("expected a FASTA ('>') or FASTQ ('@') header, found {shown:?}"),
                    ));
                }
            };
            match self.format {
                None => self.format = Some(format),
                Some(f) if f != format => {
                    return Err(InputError::line(
                        &self.path,
                        self.line_no,
                        "FASTA and FASTQ records are mixed in one file",
                    ))
                }
                _ => {}
            }
            self.record_no += 1;
            let (name, description) = self.header_fields()?;
            if name.is_empty() {
                return Err(InputError::line(
                    &self.path,
                    self.line_no,
                    "record header has no name",
                ));
            }
            let header = RecordHeader {
                number: self.record_no,
                name,
                description,
                line: self.line_no,
            };
            self.current = Some(header.clone());
            self.bases_in_record = 0;
            self.fastq_seq_done = false;
            return Ok(Some(header));
        }
    }

    /// The current header line's name and description. The name identifies the record in every
    /// output (index, predictions, ranks), so it must be UTF-8 text: replacing its bad bytes
    /// could make two records' names equal. The description is shown only, so bad bytes there
    /// are replaced.
    fn header_fields(&self) -> Result<(String, String), InputError> {
        let text = &self.line[1..];
        let end = text
            .iter()
            .position(|b| b.is_ascii_whitespace())
            .unwrap_or(text.len());
        let name = std::str::from_utf8(&text[..end]).map_err(|e| {
            InputError::line(
                &self.path,
                self.line_no,
                format!(
                    "record name is not UTF-8 text (byte 0x{:02x} at column {})",
                    text[e.valid_up_to()],
                    e.valid_up_to() + 2
                ),
            )
        })?;
        let description = String::from_utf8_lossy(&text[end..]).trim().to_string();
        Ok((name.to_string(), description))
    }

    /// Appends the next sequence line of the current record to `buf`. Returns `false` (appending
    /// nothing) once the record's sequence is finished. A record without any sequence is an error.
    pub fn read_sequence_line(&mut self, buf: &mut Vec<u8>) -> Result<bool, InputError> {
        if self.current.is_none() {
            return Ok(false);
        }
        // The header is cloned only where a FASTQ record needs it beside `&mut self` (once per
        // record): cloning it per FASTA line was an allocation and a free per 60 bases.
        let more = if matches!(self.format, Some(FastxFormat::Fastq)) {
            match self.current.clone() {
                Some(header) => self.read_fastq_sequence(buf, &header)?,
                None => false,
            }
        } else {
            self.read_fasta_line(buf)?
        };
        if !more {
            if let Some(header) = self.current.take().filter(|_| self.bases_in_record == 0) {
                return Err(InputError::record(
                    &self.path,
                    header.number,
                    Some(&header.name),
                    format!("record has no sequence (header on line {})", header.line),
                ));
            }
        }
        Ok(more)
    }

    fn read_fasta_line(&mut self, buf: &mut Vec<u8>) -> Result<bool, InputError> {
        loop {
            match self.peek_byte()? {
                None | Some(b'>') => return Ok(false),
                _ => {}
            }
            let bases = match self.append_buffered_line(buf) {
                Some(n) => n,
                None => {
                    // The line runs past the reader's buffer: read it through `self.line`.
                    self.next_line()?;
                    buf.extend_from_slice(&self.line);
                    self.line.len()
                }
            };
            // Blank lines are skipped.
            if bases > 0 {
                self.bases_in_record += bases as u64;
                return Ok(true);
            }
        }
    }

    /// Appends the next line (without its line ending) to `buf` straight from the reader's
    /// buffer when the whole line is there, nearly always: copying it through `self.line` first
    /// was a second copy of every base. Its length; `None`, consuming nothing, when the line
    /// ends past the buffer or the read fails (the line-buffer path then reports the error
    /// with its location).
    fn append_buffered_line(&mut self, buf: &mut Vec<u8>) -> Option<usize> {
        let avail = self.inner.fill_buf().ok()?;
        let end = memchr::memchr(b'\n', avail)?;
        let mut line = &avail[..end];
        if line.last() == Some(&b'\r') {
            line = &line[..line.len() - 1];
        }
        buf.extend_from_slice(line);
        let bases = line.len();
        self.inner.consume(end + 1);
        self.line_no += 1;
        Some(bases)
    }

    fn read_fastq_sequence(
        &mut self,
        buf: &mut Vec<u8>,
        header: &RecordHeader,
    ) -> Result<bool, InputError> {
        if self.fastq_seq_done {
            return Ok(false);
        }
        self.fastq_seq_done = true;
        let truncated = |s: &Self| {
            InputError::record(
                &s.path,
                header.number,
                Some(&header.name),
                "FASTQ record is incomplete (expected sequence, '+' and quality lines)",
            )
        };
        if !self.next_line()? {
            return Err(truncated(self));
        }
        let seq_len = self.line.len();
        if seq_len == 0 {
            // Empty sequence: still consume the '+' and quality lines to stay in step.
            self.next_line()?;
            self.next_line()?;
            return Ok(false);
        }
        buf.extend_from_slice(&self.line);
        self.bases_in_record += seq_len as u64;
        if !self.next_line()? || self.line.first() != Some(&b'+') {
            return Err(InputError::line(
                &self.path,
                self.line_no,
                format!(
                    "FASTQ record {} ({}): expected a '+' separator line (multi-line FASTQ is not supported)",
                    header.number, header.name
                ),
            ));
        }
        if !self.next_line()? {
            return Err(truncated(self));
        }
        if self.line.len() != seq_len {
            return Err(InputError::line(
                &self.path,
                self.line_no,
                format!(
                    "FASTQ record {} ({}): quality has {} characters but the sequence has {}",
                    header.number,
                    header.name,
                    self.line.len(),
                    seq_len
                ),
            ));
        }
        Ok(true)
    }

    /// Reads the whole sequence of the current record into `buf` (cleared first).
    pub fn read_sequence(&mut self, buf: &mut Vec<u8>) -> Result<(), InputError> {
        buf.clear();
        while self.read_sequence_line(buf)? {}
        Ok(())
    }
}

/// Opens a FASTA/FASTQ file (any supported compression) as a streaming reader.
pub fn open(
    path: &Path,
    threads: usize,
) -> Result<FastxReader<Box<dyn BufRead + Send>>, InputError> {
    let (reader, _) = crate::compress::open(path, threads)?;
    Ok(FastxReader::new(reader, path))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(text: &[u8]) -> Result<Vec<(String, Vec<u8>)>, InputError> {
        let mut r = FastxReader::new(text, "x.fa");
        let mut out = Vec::new();
        let mut seq = Vec::new();
        while let Some(h) = r.next_header()? {
            r.read_sequence(&mut seq)?;
            out.push((h.name, seq.clone()));
        }
        Ok(out)
    }

    #[test]
    fn reads_multiline_fasta_with_crlf_and_blank_lines() {
        let recs = read_all(b">a desc here\r\nACGT\r\nacgn\r\n\r\n>b\nTT\n").unwrap();
        assert_eq!(
            recs,
            vec![
                ("a".into(), b"ACGTacgn".to_vec()),
                ("b".into(), b"TT".to_vec())
            ]
        );
    }

    /// Lines are copied straight from the reader's buffer when they fit in it, and read
    /// through a line buffer when they run past it: whatever the buffer's size, the same
    /// records, blank lines skipped and CRLF trimmed, and errors on the same line.
    #[test]
    fn reads_the_same_records_whatever_the_buffer_size() {
        let text: &[u8] = b">a x\r\nACGTACGTAC\r\n\r\nac\n\n>b\nTTTTTTTTTTTTTTTTTTTTTTT\nG\n>c\nCC";
        let want = read_all(text).unwrap();
        assert_eq!(want[0].1, b"ACGTACGTACac".to_vec());
        for capacity in [1, 2, 3, 5, 8, 13, 64] {
            let mut r = FastxReader::new(std::io::BufReader::with_capacity(capacity, text), "x");
            let mut got = Vec::new();
            let mut seq = Vec::new();
            while let Some(h) = r.next_header().unwrap() {
                r.read_sequence(&mut seq).unwrap();
                got.push((h.name, seq.clone()));
            }
            assert_eq!(got, want, "buffer of {capacity} bytes");
        }
        let bad: &[u8] = b">a\nACGT\n\n>b\n>c\nAC\n";
        for capacity in [2, 64] {
            let mut r = FastxReader::new(std::io::BufReader::with_capacity(capacity, bad), "x");
            let mut seq = Vec::new();
            r.next_header().unwrap();
            r.read_sequence(&mut seq).unwrap();
            r.next_header().unwrap();
            let err = r.read_sequence(&mut seq).unwrap_err().to_string();
            assert!(err.contains("header on line 4"), "{err}");
        }
    }

    /// A name with bytes that are not UTF-8 is refused naming its line (they were replaced by
    /// U+FFFD, so "s\xff1" and "s\xfe1" became one name); a description's are replaced.
    #[test]
    fn a_record_name_that_is_not_utf8_is_refused_naming_its_line() {
        let err = read_all(b">a\nAC\n>s\xff1 desc\nGG\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("x.fa")
                && err.contains("line 3")
                && err.contains("not UTF-8")
                && err.contains("0xff"),
            "{err}"
        );
        let recs = read_all(b">s1 d\xffesc\nGG\n").unwrap();
        assert_eq!(recs, vec![("s1".into(), b"GG".to_vec())]);
    }

    #[test]
    fn reads_fastq() {
        let recs = read_all(b"@r1\nACGT\n+\nIIII\n@r2 x\nGG\n+r2\nII\n").unwrap();
        assert_eq!(
            recs,
            vec![
                ("r1".into(), b"ACGT".to_vec()),
                ("r2".into(), b"GG".to_vec())
            ]
        );
    }

    #[test]
    fn record_without_sequence_is_an_error_naming_it() {
        let err = read_all(b">a\nAC\n>empty\n>c\nGG\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("record 2 (empty)") && err.contains("no sequence"),
            "{err}"
        );
    }

    #[test]
    fn text_that_is_not_fasta_is_refused_with_its_line() {
        let err = read_all(b"\nsequence,label\nACGT,1\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 2"), "{err}");
    }

    #[test]
    fn fastq_quality_length_mismatch() {
        let err = read_all(b"@r1\nACGT\n+\nIII\n").unwrap_err().to_string();
        assert!(err.contains("line 4") && err.contains("quality"), "{err}");
    }

    #[test]
    fn streams_line_by_line() {
        let mut r = FastxReader::new(&b">chr\nAAAA\nCCCC\nGG\n"[..], "x.fa");
        r.next_header().unwrap().unwrap();
        let mut buf = Vec::new();
        assert!(r.read_sequence_line(&mut buf).unwrap());
        assert_eq!(buf, b"AAAA");
        assert!(r.read_sequence_line(&mut buf).unwrap());
        assert!(r.read_sequence_line(&mut buf).unwrap());
        assert!(!r.read_sequence_line(&mut buf).unwrap());
        assert_eq!(buf, b"AAAACCCCGG");
        assert!(r.next_header().unwrap().is_none());
    }
}
