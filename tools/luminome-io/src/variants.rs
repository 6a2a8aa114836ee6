//! Variants from a VCF or BCF file (read with noodles; plain, gzip or bgzip, detected from the
//! bytes) or from a headerless `CHROM POS ID REF ALT` table (tab- or space-separated, `#` lines
//! and blank lines skipped, the C. elegans Million Mutation Project layout). Records come out one
//! at a time with the line (VCF, table) or record number (BCF) they were read from, so every
//! message and every output row can name it.

use std::borrow::Cow;
use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};

use noodles::bcf;
use noodles::vcf;
use noodles::vcf::variant::record::info::field::value::Array;
use noodles::vcf::variant::record::info::field::Value;
use noodles::vcf::variant::record::AlternateBases as _;
use noodles::vcf::variant::record::Ids as _;
use noodles::vcf::variant::record::Info as _;
use noodles::vcf::variant::record::ReferenceBases as _;

use crate::error::InputError;

/// What a variants file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VariantFormat {
    Vcf,
    Bcf,
    /// Headerless `CHROM POS ID REF ALT` (more columns are ignored).
    Table,
}

impl VariantFormat {
    pub fn name(self) -> &'static str {
        match self {
            Self::Vcf => "VCF",
            Self::Bcf => "BCF",
            Self::Table => "CHROM POS ID REF ALT table",
        }
    }
}

/// One record, with every ALT allele (split them per ALT to score).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variant {
    /// 1-based line of the record (VCF, table) or 1-based record number (BCF).
    pub line: u64,
    pub chrom: String,
    /// 1-based position (VCF POS).
    pub pos: u64,
    /// The IDs joined by `;`, or `.`.
    pub id: String,
    pub reference: String,
    pub alternates: Vec<String>,
    /// The values of the INFO keys asked for, in request order (`None` when absent); the table
    /// has no INFO.
    pub info: Vec<Option<String>>,
}

impl Variant {
    /// Whether ALT `alt` of this record is a single-nucleotide variant (one base of A/C/G/T each).
    pub fn is_snv(&self, alt: &str) -> bool {
        let base = |s: &str| {
            s.len() == 1
                && matches!(
                    s.as_bytes()[0].to_ascii_uppercase(),
                    b'A' | b'C' | b'G' | b'T'
                )
        };
        base(&self.reference) && base(alt)
    }

    /// Whether an ALT allele is symbolic (`<DEL>`), a breakend, or the missing/overlapping
    /// allele (`*`, `.`).
    pub fn is_symbolic(alt: &str) -> bool {
        alt.starts_with('<') || alt.contains('[') || alt.contains(']') || alt == "*" || alt == "."
    }
}

enum Source {
    Vcf(
        vcf::io::Reader<Box<dyn BufRead + Send>>,
        vcf::Header,
        vcf::Record,
    ),
    Bcf(
        bcf::io::Reader<Box<dyn BufRead + Send>>,
        vcf::Header,
        bcf::Record,
    ),
    Table(Box<dyn BufRead + Send>, String),
}

/// Reads variants one record at a time.
pub struct VariantReader {
    path: PathBuf,
    format: VariantFormat,
    source: Source,
    /// Line (or record) number of the next record.
    next_line: u64,
    info_keys: Vec<String>,
}

impl VariantReader {
    /// Opens a variants file; `info_keys`: INFO fields to carry along (VCF/BCF only).
    pub fn open(path: &Path, threads: usize, info_keys: &[String]) -> Result<Self, InputError> {
        let (mut reader, _) = crate::compress::open(path, threads)?;
        let head = reader
            .fill_buf()
            .map_err(|e| InputError::file(path, format!("cannot read: {e}")))?
            .to_vec();
        if head.is_empty() {
            return Err(InputError::file(path, "the variants file is empty"));
        }
        let bad_header =
            |e: std::io::Error| InputError::file(path, format!("unreadable header: {e}"));
        let (format, source, next_line) = if head.starts_with(b"BCF") {
            let mut r = bcf::io::Reader::from(reader);
            let header = r.read_header().map_err(bad_header)?;
            (
                VariantFormat::Bcf,
                Source::Bcf(r, header, bcf::Record::default()),
                1,
            )
        } else if head.starts_with(b"##fileformat=VCF") {
            let mut r = vcf::io::Reader::new(reader);
            let mut raw = String::new();
            r.header_reader()
                .read_to_string(&mut raw)
                .map_err(bad_header)?;
            let header: vcf::Header = raw
                .parse()
                .map_err(|e| InputError::file(path, format!("unreadable header: {e}")))?;
            let lines = raw.lines().count() as u64;
            (
                VariantFormat::Vcf,
                Source::Vcf(r, header, vcf::Record::default()),
                lines + 1,
            )
        } else if head.starts_with(b"#CHROM") || head.starts_with(b"##") {
            return Err(InputError::file(
                path,
                "looks like a VCF without its ##fileformat line; a VCF must start with ##fileformat=VCFv4.x",
            ));
        } else {
            (
                VariantFormat::Table,
                Source::Table(reader, String::new()),
                1,
            )
        };
        if !info_keys.is_empty() && format == VariantFormat::Table {
            return Err(InputError::file(
                path,
                "INFO fields were asked for, but a CHROM POS ID REF ALT table has none",
            ));
        }
        Ok(Self {
            path: path.to_path_buf(),
            format,
            source,
            next_line,
            info_keys: info_keys.to_vec(),
        })
    }

    pub fn format(&self) -> VariantFormat {
        self.format
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The VCF/BCF header (`None` for a table).
    pub fn header(&self) -> Option<&vcf::Header> {
        match &self.source {
            Source::Vcf(_, h, _) | Source::Bcf(_, h, _) => Some(h),
            Source::Table(..) => None,
        }
    }

    /// The next record, or `None` at the end.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<Variant>, InputError> {
        let line = self.next_line;
        match &mut self.source {
            Source::Table(reader, buf) => loop {
                buf.clear();
                let n = reader.read_line(buf).map_err(|e| {
                    InputError::line(&self.path, self.next_line, format!("cannot read: {e}"))
                })?;
                if n == 0 {
                    return Ok(None);
                }
                let line = self.next_line;
                self.next_line += 1;
                let text = buf.trim_end_matches(['\n', '\r']);
                if text.trim().is_empty() || text.starts_with('#') {
                    continue;
                }
                return parse_table_line(&self.path, line, text).map(Some);
            },
            Source::Vcf(reader, header, record) => {
                let n = reader.read_record(record).map_err(|e| {
                    InputError::line(&self.path, line, format!("unreadable record: {e}"))
                })?;
                if n == 0 {
                    return Ok(None);
                }
                self.next_line += 1;
                let mut v = convert(&*record, header, &self.info_keys)
                    .map_err(|e| InputError::line(&self.path, line, e))?;
                v.line = line;
                Ok(Some(v))
            }
            Source::Bcf(reader, header, record) => {
                let n = reader.read_record(record).map_err(|e| {
                    InputError::record(&self.path, line, None, format!("unreadable record: {e}"))
                })?;
                if n == 0 {
                    return Ok(None);
                }
                self.next_line += 1;
                let mut v = convert(&*record, header, &self.info_keys)
                    .map_err(|e| InputError::record(&self.path, line, None, e))?;
                v.line = line;
                Ok(Some(v))
            }
        }
    }
}

fn parse_table_line(path: &Path, line: u64, text: &str) -> Result<Variant, InputError> {
    let f: Vec<&str> = text.split(['\t', ' ']).filter(|s| !s.is_empty()).collect();
    if f.len() < 5 {
        return Err(InputError::line(
            path,
            line,
            format!(
                "expected 5 columns (CHROM POS ID REF ALT), found {}",
                f.len()
            ),
        ));
    }
    let pos: u64 = f[1].parse().ok().filter(|&p| p >= 1).ok_or_else(|| {
        InputError::line(
            path,
            line,
            format!("POS {:?} is not a 1-based position", cut(f[1])),
        )
    })?;
    check_ref(f[3]).map_err(|e| InputError::line(path, line, e))?;
    Ok(Variant {
        line,
        chrom: f[0].to_string(),
        pos,
        id: f[2].to_string(),
        reference: f[3].to_string(),
        alternates: f[4].split(',').map(str::to_string).collect(),
        info: Vec::new(),
    })
}

/// REF as VCF defines it: one or more of A, C, G, T, N (any case). `.` or a digit is not a
/// variant with an unknown base but a malformed record, and is refused rather than counted.
fn check_ref(reference: &str) -> Result<(), String> {
    if reference.is_empty()
        || !reference
            .bytes()
            .all(|b| matches!(b.to_ascii_uppercase(), b'A' | b'C' | b'G' | b'T' | b'N'))
    {
        return Err(format!(
            "REF {:?} is not a run of A, C, G, T or N (a malformed record)",
            cut(reference)
        ));
    }
    Ok(())
}

/// A value quoted in a message, cut to a readable length.
fn cut(s: &str) -> String {
    if s.chars().count() > 40 {
        format!("{}...", s.chars().take(40).collect::<String>())
    } else {
        s.to_string()
    }
}

fn convert(
    record: &dyn vcf::variant::Record,
    header: &vcf::Header,
    info_keys: &[String],
) -> Result<Variant, String> {
    let chrom = record
        .reference_sequence_name(header)
        .map_err(|e| format!("unreadable CHROM: {e}"))?
        .to_string();
    let pos = match record.variant_start() {
        Some(Ok(p)) => usize::from(p) as u64,
        Some(Err(e)) => return Err(format!("unreadable POS: {e}")),
        None => return Err("POS is missing".into()),
    };
    let ids: Vec<String> = record.ids().iter().map(str::to_string).collect();
    let reference = record
        .reference_bases()
        .iter()
        .map(|b| b.map(char::from))
        .collect::<Result<String, _>>()
        .map_err(|e| format!("unreadable REF: {e}"))?;
    check_ref(&reference)?;
    let alternates = record
        .alternate_bases()
        .iter()
        .map(|a| a.map(str::to_string))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("unreadable ALT: {e}"))?;
    let info = record.info();
    let mut values = Vec::with_capacity(info_keys.len());
    for key in info_keys {
        values.push(match info.get(header, key) {
            None | Some(Ok(None)) => None,
            Some(Ok(Some(v))) => {
                Some(format_value(v).map_err(|e| format!("unreadable INFO {key}: {e}"))?)
            }
            Some(Err(e)) => return Err(format!("unreadable INFO {key}: {e}")),
        });
    }
    Ok(Variant {
        line: 0,
        chrom,
        pos,
        id: if ids.is_empty() {
            ".".into()
        } else {
            ids.join(";")
        },
        reference,
        alternates,
        info: values,
    })
}

/// An INFO value as VCF text (arrays comma-separated, missing elements as `.`).
fn format_value(v: Value<'_>) -> std::io::Result<String> {
    fn join<T: ToString>(
        it: Box<dyn Iterator<Item = std::io::Result<Option<T>>> + '_>,
    ) -> std::io::Result<String> {
        let mut out = Vec::new();
        for x in it {
            out.push(x?.map(|v| v.to_string()).unwrap_or_else(|| ".".into()));
        }
        Ok(out.join(","))
    }
    Ok(match v {
        Value::Integer(n) => n.to_string(),
        Value::Float(x) => x.to_string(),
        Value::Flag => "1".into(),
        Value::Character(c) => c.to_string(),
        Value::String(s) => s.into_owned(),
        Value::Array(Array::Integer(a)) => join(a.iter())?,
        Value::Array(Array::Float(a)) => join(a.iter())?,
        Value::Array(Array::Character(a)) => join(a.iter())?,
        Value::Array(Array::String(a)) => join(Box::new(
            a.iter().map(|r| r.map(|o| o.map(Cow::into_owned))),
        ))?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    fn all(path: &Path, info: &[&str]) -> Result<Vec<Variant>, InputError> {
        let keys: Vec<String> = info.iter().map(|s| s.to_string()).collect();
        let mut r = VariantReader::open(path, 1, &keys)?;
        let mut v = Vec::new();
        while let Some(x) = r.next()? {
            v.push(x);
        }
        Ok(v)
    }

    #[test]
    fn a_vcf_gives_records_with_their_lines_alts_and_info() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "v.vcf",
            "##fileformat=VCFv4.3\n##INFO=<ID=AF,Number=A,Type=Float,Description=\"f\">\n##contig=<ID=I>\n#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\nI\t5\trs1\tA\tG,T\t.\tPASS\tAF=0.1,0.2\nI\t9\t.\tAC\tA\t.\t.\t.\n",
        );
        let v = all(&p, &["AF"]).unwrap();
        assert_eq!(v.len(), 2);
        assert_eq!((v[0].line, v[0].chrom.as_str(), v[0].pos), (5, "I", 5));
        assert_eq!(v[0].alternates, ["G", "T"]);
        assert_eq!(v[0].info, [Some("0.1,0.2".to_string())]);
        assert!(v[0].is_snv("G"));
        assert_eq!((v[1].line, v[1].id.as_str()), (6, "."));
        assert!(!v[1].is_snv("A"));
        assert_eq!(v[1].info, [None]);
    }

    #[test]
    fn a_headerless_table_gives_records_and_bad_rows_name_their_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "t.tsv",
            "I\t3080\tgk1\tA\tT\n\n# note\nII 7 gk2 G A\n",
        );
        let v = all(&p, &[]).unwrap();
        assert_eq!(v.len(), 2);
        assert_eq!((v[1].line, v[1].chrom.as_str(), v[1].pos), (4, "II", 7));
        let p = write(
            dir.path(),
            "bad.tsv",
            "I\t3080\tgk1\tA\tT\nI\tx\tgk2\tA\tT\n",
        );
        let e = all(&p, &[]).unwrap_err().to_string();
        assert!(
            e.contains("bad.tsv") && e.contains("line 2") && e.contains("POS"),
            "{e}"
        );
        let p = write(dir.path(), "short.tsv", "I\t3080\tgk1\n");
        let e = all(&p, &[]).unwrap_err().to_string();
        assert!(e.contains("line 1") && e.contains("5 columns"), "{e}");
    }

    #[test]
    fn a_ref_that_is_not_bases_is_a_malformed_record_naming_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let head = "##fileformat=VCFv4.3\n##contig=<ID=I>\n#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n";
        for bad in [".", "7", "AX"] {
            let p = write(
                dir.path(),
                "r.vcf",
                &format!("{head}I\t5\trs1\tA\tG\t.\t.\t.\nI\t9\trs2\t{bad}\tA\t.\t.\t.\n"),
            );
            match all(&p, &[]) {
                Ok(v) => panic!("REF {bad:?} accepted: {} records", v.len()),
                Err(e) => {
                    let e = e.to_string();
                    assert!(
                        e.contains("r.vcf") && e.contains("line 5") && e.contains("REF"),
                        "{bad}: {e}"
                    );
                }
            }
            let p = write(
                dir.path(),
                "r.tsv",
                &format!("I 5 rs1 A G\nI 9 rs2 {bad} A\n"),
            );
            let e = all(&p, &[]).unwrap_err().to_string();
            assert!(
                e.contains("r.tsv") && e.contains("line 2") && e.contains("REF"),
                "{bad}: {e}"
            );
        }
        // Lower case and N are bases.
        let p = write(dir.path(), "ok.tsv", "I 5 rs1 a G\nI 6 rs2 N A\n");
        assert_eq!(all(&p, &[]).unwrap().len(), 2);
    }

    #[test]
    fn symbolic_alleles_are_recognised() {
        assert!(Variant::is_symbolic("<DEL>"));
        assert!(Variant::is_symbolic("G]17:198982]"));
        assert!(Variant::is_symbolic("*"));
        assert!(!Variant::is_symbolic("ACGT"));
    }
}
