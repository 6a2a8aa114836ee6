//! Variant-effect scores written back as a VCF (noodles): every record of the input, in input
//! order, with INFO fields added for the alleles that were scored and declared in the header.
//! A headerless `CHROM POS ID REF ALT` table becomes a VCF with a header of its own (contigs from
//! the reference). The output is BGZF-compressed when its name ends in `.gz`, plain text
//! otherwise; a BGZF one whose records are sorted gets its tabix index beside it (`.tbi`, or
//! `.csi` for a contig past 2^29 bases), as `bcftools view -W` writes one.

use std::collections::HashMap;
use std::io::{BufRead, Read, Write};
use std::path::Path;

use anyhow::{bail, Context, Result};
use noodles::bcf;
use noodles::core::Position;
use noodles::vcf;
use noodles::vcf::header::record::value::map::info::{Number, Type};
use noodles::vcf::header::record::value::map::{Contig, Info, Map};
use noodles::vcf::variant::io::Write as _;
use noodles::vcf::variant::record_buf::info::field::value::Array;
use noodles::vcf::variant::record_buf::info::field::Value;
use noodles::vcf::variant::RecordBuf;

use crate::atomic::{AtomicFile, Commit};
use crate::variants::VariantReader;

/// The scores of one ALT allele.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AlleleScore {
    /// ln P(ALT) − ln P(REF), the mean of the two strands'.
    pub llr: f32,
    pub llr_a: f32,
    pub llr_b: f32,
}

/// Scores keyed by the input record's line (or BCF record number) and ALT allele.
#[derive(Debug, Default, Clone)]
pub struct VariantScores {
    pub alleles: HashMap<(u64, String), AlleleScore>,
    /// Whether each scored record's REF equals the reference FASTA's base.
    pub ref_match: HashMap<u64, bool>,
    /// The chromosome and 1-based position each scored line had when the dataset was built: a
    /// variants file whose records moved (another file, or the same one edited) is refused
    /// rather than given another record's scores.
    pub sites: HashMap<u64, (String, u64)>,
    /// The header descriptions of LLR, LLR_A and LLR_B, when the model that made them is not a
    /// bi-strand model (the default: [`SCORE_FIELDS`]).
    pub descriptions: Option<[&'static str; 3]>,
}

/// The INFO fields added, with their header descriptions.
pub const SCORE_FIELDS: [(&str, &str); 3] = [
    ("LLR", "ln P(ALT) - ln P(REF) at the masked site, mean of the two strands' heads (negative: the model finds ALT less likely)"),
    ("LLR_A", "ln P(ALT) - ln P(REF) from strand A's head"),
    ("LLR_B", "ln P(ALT) - ln P(REF) from strand B's head"),
];
pub const REF_MATCH_FIELD: &str = "REF_MATCH";

fn add_definitions(header: &mut vcf::Header, scores: &VariantScores) {
    let described = SCORE_FIELDS.map(|(k, d)| (k, d));
    let fields = match scores.descriptions {
        Some(own) => [0, 1, 2].map(|i| (described[i].0, own[i])),
        None => described,
    };
    for (key, description) in fields {
        header.infos_mut().insert(
            key.into(),
            Map::<Info>::new(Number::AlternateBases, Type::Float, description),
        );
    }
    header.infos_mut().insert(
        REF_MATCH_FIELD.into(),
        Map::<Info>::new(
            Number::Count(1),
            Type::Integer,
            "1 if REF equals the reference FASTA's base at POS, 0 if not (the scores then compare the VCF's REF and ALT)",
        ),
    );
}

/// Adds the scores of record `line` to its INFO (nothing when none of its alleles was scored);
/// returns how many of its alleles were scored. A record that is not where the dataset saw it
/// (another chromosome or position at that line) is an error.
fn annotate(
    record: &mut RecordBuf,
    line: u64,
    scores: &VariantScores,
    source: &Path,
) -> Result<usize> {
    if let Some((chrom, pos)) = scores.sites.get(&line) {
        let here = (
            record.reference_sequence_name().to_string(),
            record.variant_start().map_or(0, usize::from) as u64,
        );
        if here.0 != *chrom || here.1 != *pos {
            bail!(
                "{}: line {line} is {}:{}, but the dataset's variant from line {line} was {chrom}:{pos}: \
                 give --variants the file the dataset was built from",
                source.display(),
                here.0,
                here.1
            );
        }
    }
    let alts: Vec<String> = record.alternate_bases().as_ref().to_vec();
    let per_alt: Vec<Option<&AlleleScore>> = alts
        .iter()
        .map(|a| scores.alleles.get(&(line, a.clone())))
        .collect();
    let scored = per_alt.iter().flatten().count();
    if scored == 0 {
        return Ok(0);
    }
    let fields: [fn(&AlleleScore) -> f32; 3] = [|s| s.llr, |s| s.llr_a, |s| s.llr_b];
    for ((key, _), f) in SCORE_FIELDS.iter().zip(fields) {
        // A score the model did not make (NaN: the reverse complement with --strands forward)
        // is missing, `.`.
        let values: Vec<Option<f32>> = per_alt
            .iter()
            .map(|s| s.map(f).filter(|x| !x.is_nan()))
            .collect();
        record
            .info_mut()
            .insert(key.to_string(), Some(Value::Array(Array::Float(values))));
    }
    if let Some(&m) = scores.ref_match.get(&line) {
        record
            .info_mut()
            .insert(REF_MATCH_FIELD.into(), Some(Value::Integer(i32::from(m))));
    }
    Ok(scored)
}

/// Where records go: plain text or BGZF.
enum Sink {
    Plain(vcf::io::Writer<AtomicFile>),
    Bgzf(vcf::io::Writer<noodles::bgzf::io::Writer<AtomicFile>>),
}

impl Sink {
    fn create(dest: &Path) -> Result<Self> {
        let file = AtomicFile::create(dest)?;
        Ok(if dest.to_string_lossy().ends_with(".gz") {
            Sink::Bgzf(vcf::io::Writer::new(noodles::bgzf::io::Writer::new(file)))
        } else {
            Sink::Plain(vcf::io::Writer::new(file))
        })
    }

    fn header(&mut self, h: &vcf::Header) -> std::io::Result<()> {
        match self {
            Sink::Plain(w) => w.write_header(h),
            Sink::Bgzf(w) => w.write_header(h),
        }
    }

    fn record(&mut self, h: &vcf::Header, r: &RecordBuf) -> std::io::Result<()> {
        match self {
            Sink::Plain(w) => w.write_variant_record(h, r),
            Sink::Bgzf(w) => w.write_variant_record(h, r),
        }
    }

    fn finish(self) -> Result<AtomicFile> {
        Ok(match self {
            Sink::Plain(w) => {
                let mut f = w.into_inner();
                f.flush()?;
                f
            }
            Sink::Bgzf(w) => w.into_inner().finish()?,
        })
    }
}

/// Header lines saying what wrote a file (`##KEY=VALUE`, after the input's own), as bcftools
/// adds `##bcftools_viewVersion` and `##bcftools_viewCommand`. No date: the same command on the
/// same inputs writes the same bytes.
pub fn add_provenance(header: &mut vcf::Header, provenance: &[(String, String)]) -> Result<()> {
    for (key, value) in provenance {
        let key = key
            .parse()
            .map_err(|e| anyhow::anyhow!("VCF header key {key:?}: {e}"))?;
        header
            .insert(key, vcf::header::record::Value::from(value.as_str()))
            .map_err(|e| anyhow::anyhow!("VCF header line ##{value}: {e}"))?;
    }
    Ok(())
}

/// Writes `source`'s records with the scores added to `dest` (uncommitted). `contigs`: the
/// reference's sequences, declared in the header of a VCF made from a table; `provenance`: the
/// `##source`/command lines of the tool writing it ([`add_provenance`]).
pub fn write_scored_vcf(
    source: &Path,
    dest: &Path,
    scores: &VariantScores,
    contigs: &[(String, u64)],
    provenance: &[(String, String)],
) -> Result<ScoredVcf> {
    let context = || format!("cannot write the scored VCF {}", dest.display());
    let (mut reader, _) = crate::compress::open(source, 1)?;
    let head = reader.fill_buf()?.to_vec();
    let mut sink = Sink::create(dest)?;
    let mut matched = 0usize;
    if head.starts_with(b"BCF") {
        let mut r = bcf::io::Reader::from(reader);
        let mut header = r
            .read_header()
            .with_context(|| format!("{}: unreadable header", source.display()))?;
        add_definitions(&mut header, scores);
        add_provenance(&mut header, provenance)?;
        sink.header(&header).with_context(context)?;
        for (i, record) in r.record_bufs(&header).enumerate() {
            let mut record = record
                .with_context(|| format!("{}: record {}: unreadable", source.display(), i + 1))?;
            matched += annotate(&mut record, i as u64 + 1, scores, source)?;
            sink.record(&header, &record).with_context(context)?;
        }
    } else if head.starts_with(b"##fileformat=VCF") {
        let mut r = vcf::io::Reader::new(reader);
        let mut raw = String::new();
        r.header_reader().read_to_string(&mut raw)?;
        let mut header: vcf::Header = raw
            .parse()
            .map_err(|e| anyhow::anyhow!("{}: unreadable header: {e}", source.display()))?;
        let first_line = raw.lines().count() as u64 + 1;
        let read_header = header.clone();
        add_definitions(&mut header, scores);
        add_provenance(&mut header, provenance)?;
        sink.header(&header).with_context(context)?;
        for (i, record) in r.record_bufs(&read_header).enumerate() {
            let line = first_line + i as u64;
            let mut record = record
                .with_context(|| format!("{}: line {line}: unreadable record", source.display()))?;
            matched += annotate(&mut record, line, scores, source)?;
            sink.record(&header, &record).with_context(context)?;
        }
    } else {
        let mut header = vcf::Header::builder()
            .set_file_format(vcf::header::FileFormat::new(4, 4))
            .build();
        for (name, len) in contigs {
            let mut contig = Map::<Contig>::default();
            *contig.length_mut() = Some(*len as usize);
            header.contigs_mut().insert(name.clone(), contig);
        }
        add_definitions(&mut header, scores);
        add_provenance(&mut header, provenance)?;
        sink.header(&header).with_context(context)?;
        drop(reader);
        let mut table = VariantReader::open(source, 1, &[])?;
        while let Some(v) = table.next()? {
            let Ok(pos) = Position::try_from(v.pos as usize) else {
                bail!("{}: line {}: POS 0", source.display(), v.line);
            };
            let mut record = RecordBuf::builder()
                .set_reference_sequence_name(v.chrom.clone())
                .set_variant_start(pos)
                .set_ids([v.id.clone()].into_iter().filter(|i| i != ".").collect())
                .set_reference_bases(v.reference.clone())
                .set_alternate_bases(v.alternates.clone().into())
                .build();
            matched += annotate(&mut record, v.line, scores, source)?;
            sink.record(&header, &record).with_context(context)?;
        }
    }
    if matched != scores.alleles.len() {
        bail!(
            "{}: {} of the dataset's {} scored alleles are not in this file: give --variants the file the dataset was built from",
            source.display(),
            scores.alleles.len() - matched,
            scores.alleles.len()
        );
    }
    let bgzf = matches!(sink, Sink::Bgzf(_));
    let vcf = sink.finish().with_context(context)?;
    let index = if bgzf {
        index_vcf(&vcf)?
    } else {
        Indexing::NotCompressed
    };
    Ok(ScoredVcf { vcf, index })
}

/// A written scored VCF (uncommitted) and its index, committed after it so the index is never
/// older than the file it indexes (tabix warns about that).
pub struct ScoredVcf {
    pub vcf: AtomicFile,
    pub index: Indexing,
}

/// Whether a scored VCF got an index, and why not.
pub enum Indexing {
    Written(AtomicFile),
    /// Plain text: tabix indexes BGZF files only.
    NotCompressed,
    /// Records out of order (the input's order is kept): the reason, for the log.
    Unsorted(String),
}

impl ScoredVcf {
    /// The VCF, then its index, with no SIGINT/SIGTERM between them.
    pub fn commit(self) -> Result<()> {
        let (vcf, index) = (self.vcf, self.index);
        crate::temps::commit_section(|| {
            vcf.commit()?;
            match index {
                Indexing::Written(index) => index.commit(),
                _ => Ok(()),
            }
        })
    }
}

impl Commit for ScoredVcf {
    fn commit_boxed(self: Box<Self>) -> Result<()> {
        (*self).commit()
    }
}

/// Indexes a finished BGZF VCF from its temporary file: `.tbi` beside its final name, or
/// `.csi` when a contig is too long for tabix.
fn index_vcf(vcf: &AtomicFile) -> Result<Indexing> {
    let index = match vcf::fs::index(vcf.temp_path()) {
        Ok(index) => index,
        Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
            return Ok(Indexing::Unsorted(e.to_string()))
        }
        Err(e) => return Err(e).with_context(|| format!("cannot index {}", vcf.dest().display())),
    };
    let name = |ext: &str| {
        let mut p = vcf.dest().as_os_str().to_owned();
        p.push(ext);
        std::path::PathBuf::from(p)
    };
    let mut file = match &index {
        vcf::Index::Tabix(i) => {
            let mut file = AtomicFile::create(name(".tbi"))?;
            let mut w = noodles::tabix::io::Writer::new(file.file());
            w.write_index(i)?;
            w.try_finish()?;
            drop(w);
            file
        }
        vcf::Index::Csi(i) => {
            let mut file = AtomicFile::create(name(".csi"))?;
            let mut w = noodles::csi::io::Writer::new(file.file());
            w.write_index(i)?;
            w.get_mut().try_finish()?;
            drop(w);
            file
        }
    };
    file.file().flush()?;
    Ok(Indexing::Written(file))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scores() -> VariantScores {
        let mut s = VariantScores::default();
        let score = |llr| AlleleScore {
            llr,
            llr_a: llr - 0.5,
            llr_b: llr + 0.5,
        };
        s.alleles.insert((5, "T".into()), score(-2.0));
        s.ref_match.insert(5, true);
        s.alleles.insert((7, "G".into()), score(0.25));
        s.ref_match.insert(7, false);
        s
    }

    fn text(path: &Path) -> String {
        let (mut r, _) = crate::compress::open(path, 1).unwrap();
        let mut s = String::new();
        r.read_to_string(&mut s).unwrap();
        s
    }

    #[test]
    fn an_unsorted_vcf_is_written_in_its_order_without_an_index() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("in.vcf");
        std::fs::write(
            &src,
            "##fileformat=VCFv4.3\n##contig=<ID=I>\n#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\nI\t9\t.\tC\tG\t.\t.\t.\nI\t5\trs1\tA\tT\t.\tPASS\t.\n",
        )
        .unwrap();
        let mut s = VariantScores::default();
        s.alleles
            .insert((5, "T".into()), scores().alleles[&(5, "T".to_string())]);
        s.ref_match.insert(5, true);
        let dest = dir.path().join("out.vcf.gz");
        let written = write_scored_vcf(&src, &dest, &s, &[], &[]).unwrap();
        assert!(matches!(written.index, Indexing::Unsorted(_)));
        written.commit().unwrap();
        let positions: Vec<String> = text(&dest)
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| l.split('\t').nth(1).unwrap().to_string())
            .collect();
        assert_eq!(positions, ["9", "5"]);
        assert!(!dir.path().join("out.vcf.gz.tbi").exists());
    }

    #[test]
    fn a_vcf_keeps_every_record_with_scores_added_and_declared() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("in.vcf");
        std::fs::write(
            &src,
            "##fileformat=VCFv4.3\n##contig=<ID=I>\n#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\nI\t5\trs1\tA\tT,AC\t.\tPASS\tDP=3\nI\t9\t.\tC\tG\t.\t.\t.\n",
        )
        .unwrap();
        // The first record is line 4 (after 3 header lines); its indel ALT has no score.
        let mut s = VariantScores::default();
        let first = scores().alleles[&(5, "T".to_string())];
        s.alleles.insert((4, "T".into()), first);
        s.ref_match.insert(4, true);
        for dest in ["out.vcf", "out.vcf.gz"] {
            let dest = dir.path().join(dest);
            write_scored_vcf(&src, &dest, &s, &[], &[])
                .unwrap()
                .commit()
                .unwrap();
            let tbi = dir.path().join(format!(
                "{}.tbi",
                dest.file_name().unwrap().to_string_lossy()
            ));
            assert_eq!(
                tbi.exists(),
                dest.extension().unwrap() == "gz",
                "{}",
                tbi.display()
            );
            let t = text(&dest);
            assert!(t.contains("##INFO=<ID=LLR,Number=A,Type=Float"), "{t}");
            assert!(
                t.contains("##INFO=<ID=REF_MATCH,Number=1,Type=Integer"),
                "{t}"
            );
            let records: Vec<&str> = t.lines().filter(|l| !l.starts_with('#')).collect();
            assert_eq!(records.len(), 2);
            assert!(
                records[0].contains("DP=3;LLR=-2,.;LLR_A=-2.5,.;LLR_B=-1.5,.;REF_MATCH=1"),
                "{}",
                records[0]
            );
            assert!(records[1].ends_with("\t.\t.\t."), "{}", records[1]);
        }
        // BGZF, as tabix needs: the first bytes are a gzip member with the BC extra field.
        let gz = std::fs::read(dir.path().join("out.vcf.gz")).unwrap();
        assert_eq!(&gz[..4], &[0x1f, 0x8b, 8, 4]);
        assert_eq!(&gz[12..14], b"BC");
    }

    #[test]
    fn a_table_becomes_a_vcf_with_contigs() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("in.tsv");
        std::fs::write(&src, "# c\n\n\n\nI\t3\tgk1\tA\tT\n\nI\t4\tgk2\tC\tG\n").unwrap();
        let dest = dir.path().join("out.vcf");
        write_scored_vcf(&src, &dest, &scores(), &[("I".into(), 100)], &[])
            .unwrap()
            .commit()
            .unwrap();
        let t = text(&dest);
        assert!(t.starts_with("##fileformat=VCFv4.4"), "{t}");
        assert!(t.contains("##contig=<ID=I,length=100>"), "{t}");
        let records: Vec<&str> = t.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(
            records[0],
            "I\t3\tgk1\tA\tT\t.\t.\tLLR=-2;LLR_A=-2.5;LLR_B=-1.5;REF_MATCH=1"
        );
        assert_eq!(
            records[1],
            "I\t4\tgk2\tC\tG\t.\t.\tLLR=0.25;LLR_A=-0.25;LLR_B=0.75;REF_MATCH=0"
        );
    }
}
