//! Property tests of every parser in this crate: a valid file from test-data (or a small one
//! written here), damaged by a random list of edits (byte flips, insertions of tokens that break
//! parsers — tabs, newlines, NaN, huge numbers, headers, invalid UTF-8 —, deletions, truncation,
//! duplicated and swapped lines), must be read without a panic, and a refusal must name the file.
//! proptest shrinks a failing case to its fewest edits.
//!
//! 64 cases per parser in `cargo test`; a long run: `PROPTEST_CASES=20000 cargo test -p
//! luminome-io --test parsers_proptest --release`. The whole-tool fuzz harness (scripts/fuzz) is
//! the other half: it runs the binaries, these run the parsers in-process, many times faster.

use std::path::{Path, PathBuf};

use luminome_io::expression::{read_expression, ColumnRef};
use luminome_io::motif::{read_motifs, MotifFormat};
use luminome_io::reference::Reference;
use luminome_io::seqtable::{SeqTableOptions, SeqTableReader};
use luminome_io::table::FeatureTable;
use luminome_io::tensorfile::TensorFile;
use luminome_io::tss::{read_tss, BedTssMode, TssFormat};
use luminome_io::variants::VariantReader;
use proptest::prelude::*;

fn test_data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../test-data")
        .join(rel)
}

/// The first `max` bytes of a test-data file, cut at a line end (so the seed itself is valid).
fn seed(rel: &str, max: usize) -> Vec<u8> {
    let bytes = std::fs::read(test_data(rel)).unwrap();
    if bytes.len() <= max {
        return bytes;
    }
    let cut = bytes[..max].iter().rposition(|&b| b == b'\n').unwrap() + 1;
    bytes[..cut].to_vec()
}

/// The first eight reads of the bundled E. coli FASTQ (it ships gzipped).
fn fastq_seed() -> Vec<u8> {
    use std::io::Read;
    let gz = std::fs::File::open(test_data("ecoli/reads.fastq.gz")).unwrap();
    let mut text = Vec::new();
    flate2::read::MultiGzDecoder::new(gz)
        .read_to_end(&mut text)
        .unwrap();
    let lines: Vec<&[u8]> = text.split_inclusive(|&b| b == b'\n').take(32).collect();
    lines.concat()
}

/// Tokens that break parsers when dropped into a file.
const TOKENS: &[&[u8]] = &[
    b"\t",
    b"\n",
    b"\r\n",
    b" ",
    b",",
    b"nan",
    b"inf",
    b"-1",
    b"0",
    b"1e300",
    b"18446744073709551615",
    b"-9223372036854775808",
    b">",
    b"@",
    b"+",
    b"#",
    b"\"",
    b"=",
    b";",
    b"\xff\xfe",
    b"\0",
    b"MOTIF",
    b"letter-probability matrix:",
    b"[",
    b"]",
    b"##fileformat=VCFv4.2",
    b"\x1f\x8b",
];

#[derive(Debug, Clone)]
enum Edit {
    Flip(usize, u8),
    Insert(usize, usize),
    Delete(usize, usize),
    Truncate(usize),
    DuplicateLine(usize),
    SwapLines(usize, usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), 1u8..=255).prop_map(|(i, x)| Edit::Flip(i, x)),
        (any::<usize>(), 0..TOKENS.len()).prop_map(|(i, t)| Edit::Insert(i, t)),
        (any::<usize>(), 1usize..64).prop_map(|(i, n)| Edit::Delete(i, n)),
        any::<usize>().prop_map(Edit::Truncate),
        any::<usize>().prop_map(Edit::DuplicateLine),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Edit::SwapLines(a, b)),
    ]
}

fn edits() -> impl Strategy<Value = Vec<Edit>> {
    prop::collection::vec(edit(), 1..6)
}

fn apply(mut data: Vec<u8>, edits: &[Edit]) -> Vec<u8> {
    for e in edits {
        let n = data.len();
        match *e {
            Edit::Flip(i, x) if n > 0 => data[i % n] ^= x,
            Edit::Insert(i, t) => {
                let at = i % (n + 1);
                data.splice(at..at, TOKENS[t].iter().copied());
            }
            Edit::Delete(i, k) if n > 0 => {
                let at = i % n;
                data.drain(at..(at + k).min(n));
            }
            Edit::Truncate(i) => data.truncate(i % (n + 1)),
            Edit::DuplicateLine(i) | Edit::SwapLines(i, _) => {
                let mut lines: Vec<Vec<u8>> = data
                    .split_inclusive(|&b| b == b'\n')
                    .map(<[u8]>::to_vec)
                    .collect();
                if lines.is_empty() {
                    continue;
                }
                let a = i % lines.len();
                match *e {
                    Edit::DuplicateLine(_) => {
                        let l = lines[a].clone();
                        lines.insert(a, l);
                    }
                    Edit::SwapLines(_, j) => {
                        let b = j % lines.len();
                        lines.swap(a, b);
                    }
                    _ => unreachable!(),
                }
                data = lines.concat();
            }
            _ => {}
        }
    }
    data
}

/// Write `data` as `name` in a fresh folder and run `read` on it: an error must name the file.
fn check<T, E: std::fmt::Display>(
    name: &str,
    data: &[u8],
    read: impl FnOnce(&Path) -> Result<T, E>,
) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, data).unwrap();
    if let Err(e) = read(&path) {
        let msg = e.to_string();
        prop_assert!(
            msg.contains(name),
            "the message does not name {name}: {msg}"
        );
    }
    Ok(())
}

fn config() -> ProptestConfig {
    // Honours PROPTEST_CASES for a long run; 64 per parser keeps `cargo test` quick.
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64);
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

const GTF: &str = "chr22\tsrc\tgene\t101\t900\t.\t+\t.\tgene_id \"G1\"; gene_name \"A\";\n\
chr22\tsrc\ttranscript\t101\t900\t.\t+\t.\tgene_id \"G1\"; transcript_id \"T1\";\n\
chr22\tsrc\tgene\t2001\t3000\t.\t-\t.\tgene_id \"G2\"; gene_name \"B%3B\";\n";

const GFF3: &str = "##gff-version 3\n\
chr22\tsrc\tgene\t101\t900\t.\t+\t.\tID=gene:G1;Name=A\n\
chr22\tsrc\tgene\t2001\t3000\t.\t-\t.\tID=gene:G2;Name=B%3B\n";

/// A small safetensors file: a u32 [2, 3] tensor, an f32 [2] one, metadata.
fn safetensors_seed() -> Vec<u8> {
    let header = br#"{"__metadata__":{"kind":"tokens","vocab":"ACGT"},"input_ids":{"dtype":"U32","shape":[2,3],"data_offsets":[0,24]},"labels":{"dtype":"F32","shape":[2],"data_offsets":[24,32]}}"#;
    let mut h = header.to_vec();
    while !h.len().is_multiple_of(8) {
        h.push(b' ');
    }
    let mut out = (h.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(&h);
    out.extend((0u8..32).collect::<Vec<_>>());
    out
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn fasta_and_fastq_records(e in edits(), fastq in any::<bool>()) {
        let (name, data) = if fastq {
            ("reads.fastq", fastq_seed())
        } else {
            ("seqs.fa", seed("celegans/celegans_small.fa", 4096))
        };
        check(name, &apply(data, &e), |p| {
            let mut r = luminome_io::fastx::open(p, 1)?;
            let mut buf = Vec::new();
            while r.next_header()?.is_some() {
                buf.clear();
                r.read_sequence(&mut buf)?;
            }
            Ok::<_, luminome_io::error::InputError>(())
        })?;
    }

    #[test]
    fn indexed_reference_and_its_fai(e in edits(), damage_fai in any::<bool>()) {
        let dir = tempfile::tempdir().unwrap();
        let fa = dir.path().join("ref.fa");
        let fai = dir.path().join("ref.fa.fai");
        let (mut fa_bytes, mut fai_bytes) = (
            std::fs::read(test_data("chr22_slice/chr22_slice.fa")).unwrap(),
            std::fs::read(test_data("chr22_slice/chr22_slice.fa.fai")).unwrap(),
        );
        if damage_fai { fai_bytes = apply(fai_bytes, &e) } else { fa_bytes = apply(fa_bytes, &e) }
        std::fs::write(&fa, fa_bytes).unwrap();
        std::fs::write(&fai, fai_bytes).unwrap();
        let read = || -> Result<(), luminome_io::error::InputError> {
            let mut r = Reference::open(&fa)?;
            for (name, len) in r.sequences().to_vec() {
                r.fetch(&name, 0, len)?;
                r.fetch(&name, len / 3, len / 2)?;
            }
            Ok(())
        };
        if let Err(err) = read() {
            let msg = err.to_string();
            prop_assert!(msg.contains("ref.fa"), "{msg}");
        }
    }

    #[test]
    fn sequence_tables(e in edits()) {
        check("train.csv", &apply(seed("gue_prom_core_all/dev.csv", 3000), &e), |p| {
            for row in SeqTableReader::open(p, &SeqTableOptions::default())? {
                row?;
            }
            Ok::<_, luminome_io::error::InputError>(())
        })?;
    }

    #[test]
    fn feature_tables(e in edits()) {
        check("table.tsv", &apply(seed("tabular/breast_cancer.tsv", 3000), &e), |p| {
            FeatureTable::read(p, None)
        })?;
    }

    #[test]
    fn bed_and_narrowpeak(e in edits(), narrow in any::<bool>()) {
        let (name, data) = if narrow {
            ("peaks.narrowPeak", seed("chr22_slice/peaks.narrowPeak", 2000))
        } else {
            ("intervals.bed", seed("chr22_slice/intervals.bed", 2000))
        };
        check(name, &apply(data, &e), luminome_io::bed::read_all)?;
    }

    #[test]
    fn gene_starts_from_gtf_gff3_and_bed(e in edits(), which in 0usize..3) {
        let (name, data, format) = match which {
            0 => ("genes.gtf", GTF.as_bytes().to_vec(), TssFormat::Gtf),
            1 => ("genes.gff3", GFF3.as_bytes().to_vec(), TssFormat::Gff3),
            _ => ("genes.bed", seed("chr22_slice/genes_tss.bed", 2000), TssFormat::Bed),
        };
        check(name, &apply(data, &e), |p| read_tss(p, format, "gene", BedTssMode::Center))?;
    }

    #[test]
    fn motif_files_in_every_format(e in edits(), which in 0usize..3, sniff in any::<bool>()) {
        let (name, data, format) = match which {
            0 => ("m.meme", seed("motifs/jaspar_small.meme", 3000), MotifFormat::Meme),
            1 => ("m.jaspar", seed("motifs/jaspar_small.jaspar", 3000), MotifFormat::Jaspar),
            _ => ("m.meme", seed("motifs/vierstra_small.meme", 3000), MotifFormat::Meme),
        };
        let format = (!sniff).then_some(format);
        check(name, &apply(data, &e), |p| read_motifs(p, format))?;
    }

    #[test]
    fn transfac_and_homer_motifs(e in edits(), homer in any::<bool>()) {
        let (name, text, format) = if homer {
            (
                "m.motif",
                ">ACGT\tM1\t5.0\n0.9\t0.05\t0.03\t0.02\n0.1\t0.7\t0.1\t0.1\n0.2\t0.2\t0.5\t0.1\n",
                MotifFormat::Homer,
            )
        } else {
            (
                "m.transfac",
                "AC M1\nXX\nID M1\nP0 A C G T\n01 8 1 0 1 A\n02 0 9 1 0 C\n03 1 1 7 1 G\nXX\n//\n",
                MotifFormat::Transfac,
            )
        };
        check(name, &apply(text.as_bytes().to_vec(), &e), |p| read_motifs(p, Some(format)))?;
    }

    #[test]
    fn vcf_variants(e in edits()) {
        check("snv.vcf", &apply(seed("celegans/celegans_small.snv.vcf", 3000), &e), |p| {
            let mut r = VariantReader::open(p, 1, &[])?;
            while r.next()?.is_some() {}
            Ok::<_, luminome_io::error::InputError>(())
        })?;
    }

    #[test]
    fn expression_tables(e in edits()) {
        check("tpm.tsv", &apply(seed("expression/k562_tpm_slice.tsv", 2000), &e), |p| {
            read_expression(p, &ColumnRef::Index(1), &ColumnRef::Last)
        })?;
    }

    #[test]
    fn safetensors_headers(e in edits()) {
        check("d.safetensors", &apply(safetensors_seed(), &e), |p| {
            TensorFile::open(p).map(|f| (f.names().len(), f.metadata().len()))
        })?;
    }
}
