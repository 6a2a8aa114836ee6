//! Gene transcription start sites from GTF, GFF3 or a BED-like table (e.g. the ABC gene table).
//!
//! All coordinates are returned 0-based: `tss` is the 0-based position of the first transcribed
//! base (the gene's start on `+`, its last base on `-`).
//! - GTF / GFF3: rows whose feature type is `feature` (default `gene`); 1-based inclusive
//!   coordinates are converted. Names come from `gene_id`/`gene_name` (GTF) or `ID`/`Name` (GFF3);
//!   the gene type from `gene_type`, `gene_biotype` or `biotype`.
//! - BED/TSV: `chrom start end name score strand [extra named columns]`, 0-based half-open. A
//!   `#chr start end ...` header line names the extra columns (`Ensembl_ID`/`gene_id` give the id,
//!   `gene_type`/`gene_biotype` the type). The TSS is the interval's 5' end ([`BedTssMode::FivePrime`],
//!   for gene bounds) or its centre ([`BedTssMode::Center`], for TSS windows such as ABC's
//!   `TSS500bp` table).

use std::io::BufRead;
use std::path::Path;

use crate::bed::Strand;
use crate::error::{read_error, InputError, Location};
use crate::table::RowWidth;

#[derive(Debug, Clone, PartialEq)]
pub struct GeneTss {
    /// Stable id (Ensembl id, GTF gene_id); equals `name` when the input has no id.
    pub id: String,
    /// Gene symbol.
    pub name: String,
    pub chrom: String,
    /// 0-based TSS position.
    pub tss: u64,
    pub strand: Strand,
    pub gene_type: Option<String>,
    pub line: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TssFormat {
    Gtf,
    Gff3,
    Bed,
}

impl TssFormat {
    /// From the file name: `.gtf`, `.gff`/`.gff3` (optionally compressed); anything else is BED/TSV.
    pub fn from_path(path: &Path) -> Self {
        let stem = crate::compress::format_name(path);
        if stem.ends_with(".gtf") {
            TssFormat::Gtf
        } else if stem.ends_with(".gff") || stem.ends_with(".gff3") {
            TssFormat::Gff3
        } else {
            TssFormat::Bed
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BedTssMode {
    FivePrime,
    Center,
}

pub fn read_tss(
    path: &Path,
    format: TssFormat,
    feature: &str,
    bed_mode: BedTssMode,
) -> Result<Vec<GeneTss>, InputError> {
    let (reader, _) = crate::compress::open(path, 1)?;
    let genes = match format {
        TssFormat::Gtf | TssFormat::Gff3 => read_gxf(reader, path, format, feature)?,
        TssFormat::Bed => read_bed_table(reader, path, bed_mode)?,
    };
    if genes.is_empty() {
        return Err(InputError::file(
            path,
            match format {
                TssFormat::Bed => "no genes found".to_string(),
                _ => format!("no rows of feature type {feature:?} found"),
            },
        ));
    }
    Ok(genes)
}

fn lines(
    reader: Box<dyn BufRead + Send>,
    path: &Path,
) -> impl Iterator<Item = Result<(u64, String), InputError>> + '_ {
    reader.lines().enumerate().map(move |(i, l)| {
        l.map(|s| (i as u64 + 1, s))
            .map_err(|e| read_error(path, Location::Line(i as u64 + 1), e))
    })
}

fn gtf_attribute(attrs: &str, key: &str) -> Option<String> {
    attrs.split(';').find_map(|kv| {
        let kv = kv.trim();
        let (k, v) = kv.split_once(' ')?;
        (k == key).then(|| v.trim().trim_matches('"').to_string())
    })
}

fn gff_attribute(attrs: &str, key: &str) -> Option<String> {
    attrs.split(';').find_map(|kv| {
        let (k, v) = kv.trim().split_once('=')?;
        (percent_decode(k) == key).then(|| percent_decode(v))
    })
}

/// GFF3 escapes `;`, `=`, `&`, `,`, tabs and other reserved characters in attributes as `%XX`
/// (the GFF3 specification, "Column 9"): decode them. A `%` not followed by two hex digits is
/// kept as it is.
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    if !b.contains(&b'%') {
        return s.to_string();
    }
    let hex = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push(h * 16 + l);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn read_gxf(
    reader: Box<dyn BufRead + Send>,
    path: &Path,
    format: TssFormat,
    feature: &str,
) -> Result<Vec<GeneTss>, InputError> {
    let mut out = Vec::new();
    for item in lines(reader, path) {
        let (n, line) = item?;
        if line.starts_with('#') || line.trim().is_empty() {
            if line.starts_with("##FASTA") {
                break;
            }
            continue;
        }
        let f: Vec<&str> = line.split('\t').collect();
        if f.len() < 9 {
            return Err(InputError::line(
                path,
                n,
                format!("expected 9 tab-separated columns, found {}", f.len()),
            ));
        }
        if f[2] != feature {
            continue;
        }
        let start: u64 = f[3]
            .parse()
            .map_err(|_| InputError::line(path, n, format!("start {:?} is not a number", f[3])))?;
        let end: u64 = f[4]
            .parse()
            .map_err(|_| InputError::line(path, n, format!("end {:?} is not a number", f[4])))?;
        if start == 0 || start > end {
            return Err(InputError::line(
                path,
                n,
                format!("start ({start}) must be >= 1 and <= end ({end}) (1-based coordinates)"),
            ));
        }
        let strand = match f[6] {
            "+" => Strand::Forward,
            "-" => Strand::Reverse,
            s => {
                return Err(InputError::line(
                    path,
                    n,
                    format!("strand {s:?}: a gene needs '+' or '-' to have a TSS"),
                ))
            }
        };
        let attrs = f[8];
        let (id, name, gene_type) = if format == TssFormat::Gtf {
            (
                gtf_attribute(attrs, "gene_id"),
                gtf_attribute(attrs, "gene_name"),
                gtf_attribute(attrs, "gene_type").or_else(|| gtf_attribute(attrs, "gene_biotype")),
            )
        } else {
            (
                gff_attribute(attrs, "ID").or_else(|| gff_attribute(attrs, "gene_id")),
                gff_attribute(attrs, "Name").or_else(|| gff_attribute(attrs, "gene_name")),
                gff_attribute(attrs, "gene_type")
                    .or_else(|| gff_attribute(attrs, "gene_biotype"))
                    .or_else(|| gff_attribute(attrs, "biotype")),
            )
        };
        let id = id.or_else(|| name.clone()).ok_or_else(|| {
            InputError::line(path, n, "gene has neither an id nor a name attribute")
        })?;
        out.push(GeneTss {
            name: name.unwrap_or_else(|| id.clone()),
            id,
            chrom: f[0].to_string(),
            tss: if strand == Strand::Forward {
                start - 1
            } else {
                end - 1
            },
            strand,
            gene_type,
            line: n,
        });
    }
    Ok(out)
}

fn read_bed_table(
    reader: Box<dyn BufRead + Send>,
    path: &Path,
    mode: BedTssMode,
) -> Result<Vec<GeneTss>, InputError> {
    let mut out = Vec::new();
    let mut columns: Vec<String> = Vec::new();
    let mut first = true;
    let mut width = RowWidth::new(
        "the first gene",
        "every BED line needs the same number of columns",
    );
    for item in lines(reader, path) {
        let (n, line) = item?;
        if line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split('\t').map(str::trim).collect();
        // A header without '#' is only the file's first line, and only when its start column
        // is a word ("start", "chromStart"): a first data row with a bad start is an error,
        // not a header to skip.
        let implicit_header = first
            && f.len() > 1
            && f[1].parse::<u64>().is_err()
            && !f[1].starts_with(|c: char| c.is_ascii_digit() || c == '-' || c == '+');
        first = false;
        let is_header = line.starts_with('#') || implicit_header;
        if is_header {
            if out.is_empty() {
                columns = f
                    .iter()
                    .map(|c| c.trim_start_matches('#').to_ascii_lowercase())
                    .collect();
            }
            continue;
        }
        if f.len() < 6 {
            return Err(InputError::line(
                path,
                n,
                format!(
                    "expected at least 6 columns (chrom start end name score strand), found {}",
                    f.len()
                ),
            ));
        }
        // One column count per file (the BED rule): a row that lost its Ensembl id would have
        // its gene type read as the id.
        width.check(path, n, f.len())?;
        let start: u64 = f[1]
            .parse()
            .map_err(|_| InputError::line(path, n, format!("start {:?} is not a number", f[1])))?;
        let end: u64 = f[2]
            .parse()
            .map_err(|_| InputError::line(path, n, format!("end {:?} is not a number", f[2])))?;
        if start >= end {
            return Err(InputError::line(
                path,
                n,
                format!("start ({start}) must be less than end ({end})"),
            ));
        }
        let strand = match f[5] {
            "+" => Strand::Forward,
            "-" => Strand::Reverse,
            s => {
                return Err(InputError::line(
                    path,
                    n,
                    format!("strand {s:?}: a gene needs '+' or '-' to have a TSS"),
                ))
            }
        };
        let named = |names: &[&str]| {
            names.iter().find_map(|want| {
                let i = columns.iter().position(|c| c == want)?;
                f.get(i)
                    .map(|s| s.to_string())
                    .filter(|s| !s.is_empty() && s != ".")
            })
        };
        let name = f[3].to_string();
        let tss = match mode {
            BedTssMode::Center => (start + end) / 2,
            BedTssMode::FivePrime if strand == Strand::Forward => start,
            BedTssMode::FivePrime => end - 1,
        };
        out.push(GeneTss {
            id: named(&["ensembl_id", "gene_id", "id"]).unwrap_or_else(|| name.clone()),
            name,
            chrom: f[0].to_string(),
            tss,
            strand,
            gene_type: named(&["gene_type", "gene_biotype", "biotype"]),
            line: n,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(text: &str, name: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        (dir, p)
    }

    #[test]
    fn the_format_does_not_depend_on_the_compression() {
        use std::io::Write;
        let text = "chr1\tx\tgene\t11\t20\t.\t-\t.\tgene_id \"G1\";\n";
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("genes.GTF.bz2");
        let mut w = bzip2::write::BzEncoder::new(
            std::fs::File::create(&p).unwrap(),
            bzip2::Compression::fast(),
        );
        w.write_all(text.as_bytes()).unwrap();
        w.finish().unwrap();
        assert_eq!(TssFormat::from_path(&p), TssFormat::Gtf);
        let g = read_tss(&p, TssFormat::from_path(&p), "gene", BedTssMode::FivePrime).unwrap();
        assert_eq!((g[0].id.as_str(), g[0].tss), ("G1", 19));
        for (name, format) in [
            ("a.gff3.zst", TssFormat::Gff3),
            ("a.gff.bgz", TssFormat::Gff3),
            ("a.gtf.gz", TssFormat::Gtf),
            ("a.bed.bz2", TssFormat::Bed),
        ] {
            assert_eq!(TssFormat::from_path(Path::new(name)), format, "{name}");
        }
    }

    #[test]
    fn gtf_tss_is_strand_aware_and_0_based() {
        let text = "chr1\tx\tgene\t11\t20\t.\t+\t.\tgene_id \"G1\"; gene_name \"ONE\"; gene_type \"protein_coding\";\n\
                    chr1\tx\texon\t11\t20\t.\t+\t.\tgene_id \"G1\";\n\
                    chr1\tx\tgene\t31\t40\t.\t-\t.\tgene_id \"G2\";\n";
        let (_d, p) = write(text, "a.gtf");
        let g = read_tss(&p, TssFormat::from_path(&p), "gene", BedTssMode::FivePrime).unwrap();
        assert_eq!(g.len(), 2);
        assert_eq!(
            (g[0].id.as_str(), g[0].name.as_str(), g[0].tss),
            ("G1", "ONE", 10)
        );
        assert_eq!(g[0].gene_type.as_deref(), Some("protein_coding"));
        assert_eq!((g[1].name.as_str(), g[1].tss), ("G2", 39));
    }

    #[test]
    fn gff3_attributes_are_percent_decoded() {
        assert_eq!(percent_decode("A%3BB%2Cc%20d"), "A;B,c d");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
        let text = "chr1\tx\tgene\t5\t9\t.\t+\t.\tID=gene%3AE1;Name=AB%2C1\n";
        let (_d, p) = write(text, "b.gff3");
        let g = read_tss(&p, TssFormat::from_path(&p), "gene", BedTssMode::FivePrime).unwrap();
        assert_eq!((g[0].id.as_str(), g[0].name.as_str()), ("gene:E1", "AB,1"));
    }

    #[test]
    fn gff3_reads_id_name_biotype() {
        let text =
            "##gff-version 3\nchr1\tx\tgene\t5\t9\t.\t-\t.\tID=gene:E1;Name=AB;biotype=lncRNA\n";
        let (_d, p) = write(text, "a.gff3");
        let g = read_tss(&p, TssFormat::from_path(&p), "gene", BedTssMode::FivePrime).unwrap();
        assert_eq!(
            (g[0].id.as_str(), g[0].name.as_str(), g[0].tss),
            ("gene:E1", "AB", 8)
        );
        assert_eq!(g[0].gene_type.as_deref(), Some("lncRNA"));
    }

    #[test]
    fn a_malformed_first_data_row_is_an_error_not_a_header() {
        // "1o0" (a typo) used to make the first row a header, and the gene vanished.
        let text = "c\t1o0\t600\tH1\t0\t+\nc\t100\t600\tH2\t0\t-\n";
        let (_d, p) = write(text, "g.bed");
        let e = read_tss(&p, TssFormat::Bed, "gene", BedTssMode::Center)
            .unwrap_err()
            .to_string();
        assert!(e.contains("g.bed: line 1") && e.contains("\"1o0\""), "{e}");
        // A header of words is still a header, but only on the first line.
        let text =
            "chrom\tstart\tend\tname\tscore\tstrand\nc\t100\t600\tH1\t0\t+\nc\tx\t600\tH2\t0\t-\n";
        let (_d, p) = write(text, "h.bed");
        let e = read_tss(&p, TssFormat::Bed, "gene", BedTssMode::Center)
            .unwrap_err()
            .to_string();
        assert!(e.contains("h.bed: line 3"), "{e}");
    }

    #[test]
    fn bed_table_header_names_extra_columns() {
        let text = "#chr\tstart\tend\tname\tscore\tstrand\tEnsembl_ID\tgene_type\nc\t100\t600\tH1\t0\t+\tENSG1\tprotein_coding\nc\t100\t600\tH2\t0\t-\tENSG2\tlncRNA\n";
        let (_d, p) = write(text, "g.bed");
        let c = read_tss(&p, TssFormat::Bed, "gene", BedTssMode::Center).unwrap();
        assert_eq!((c[0].id.as_str(), c[0].tss), ("ENSG1", 350));
        let f = read_tss(&p, TssFormat::Bed, "gene", BedTssMode::FivePrime).unwrap();
        assert_eq!((f[0].tss, f[1].tss), (100, 599));
        assert_eq!(f[1].gene_type.as_deref(), Some("lncRNA"));
    }

    #[test]
    fn a_gene_row_with_a_dropped_column_is_refused_with_both_lines() {
        // H2 lost its Ensembl id: "lncRNA" would have become its id.
        let text = "#chr\tstart\tend\tname\tscore\tstrand\tEnsembl_ID\tgene_type\n\
            c\t100\t600\tH1\t0\t+\tENSG1\tprotein_coding\nc\t100\t600\tH2\t0\t-\tlncRNA\n";
        let (_d, p) = write(text, "g.bed");
        let err = read_tss(&p, TssFormat::Bed, "gene", BedTssMode::Center)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("line 3: 7 columns where the first gene (line 2) has 8"),
            "{err}"
        );
    }

    #[test]
    fn gene_without_strand_is_refused_with_its_line() {
        let (_d, p) = write("c\t1\t5\tG\t0\t.\n", "g.bed");
        let err = read_tss(&p, TssFormat::Bed, "gene", BedTssMode::Center)
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 1") && err.contains("strand"), "{err}");
    }
}
