//! Pairs around variants: one window per SNV allele, centred on the variant (index window / 2),
//! read from the reference FASTA. Multi-allelic records are split per ALT; indels, MNPs and
//! symbolic alleles are left out and counted; a REF that disagrees with the FASTA is flagged,
//! skipped or refused (--ref-mismatch); windows past a contig end are padded or skipped
//! (--contig-ends); single-base alleles other than A/C/G/T and sites whose reference base is N
//! are left out. `--saturate BED` makes the variants instead: every base of the intervals to
//! each of the three other bases. Strand A is always the
//! reference genome's bases (with the site masked it is the context the model sees); strand B is
//! A's complement, or A with the ALT allele at the site (--pairing alleles).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::{bail, Result};
use luminome_io::pair_dataset::{PairIndexRow, Pairing, VariantSite};
use luminome_io::reference::Reference;
use luminome_io::token_dataset::Interval;
use luminome_io::variants::{Variant, VariantReader};
use luminome_io::InputError;

use crate::args::{ChromNames, ContigEnds, RefMismatch};
use crate::encode::{BaseVocab, PairSink};
use crate::sequences::Counts;

pub struct VariantOptions {
    pub window: usize,
    pub pairing: Pairing,
    pub ref_mismatch: RefMismatch,
    pub contig_ends: ContigEnds,
    pub chrom_names: ChromNames,
}

fn bump(counts: &mut Counts, key: &str) {
    *counts.entry(key.to_string()).or_default() += 1;
}

/// The reference's name for a variant chromosome, if any.
fn resolve<'a>(reference: &'a Reference, chrom: &str, mode: ChromNames) -> Option<&'a str> {
    let seqs = reference.sequences();
    let find = |name: &str| {
        seqs.iter()
            .find(|(n, _)| n == name)
            .map(|(n, _)| n.as_str())
    };
    find(chrom).or_else(|| match mode {
        ChromNames::Exact => None,
        ChromNames::ToggleChr => match chrom.strip_prefix("chr") {
            Some(bare) => find(bare),
            None => find(&format!("chr{chrom}")),
        },
    })
}

/// The window's ids on strand A (reference bases, padded past contig ends) and how many bases
/// were padded; `None` when the window must be skipped.
fn reference_window(
    vocab: &BaseVocab,
    reference: &mut Reference,
    chrom: &str,
    pos0: u64,
    opts: &VariantOptions,
) -> Result<Option<(Vec<u32>, u64, u64)>> {
    let len = reference.length(chrom).unwrap_or(0);
    let half = (opts.window / 2) as u64;
    let start = pos0 as i64 - half as i64;
    let end = start + opts.window as i64;
    let (from, to) = (start.max(0) as u64, (end.max(0) as u64).min(len));
    if (start < 0 || end as u64 > len) && opts.contig_ends == ContigEnds::Skip {
        return Ok(None);
    }
    let bases = reference.fetch(chrom, from, to)?;
    let mut ids = vec![vocab.pad; opts.window];
    let lead = (from as i64 - start) as usize;
    for (i, &b) in bases.iter().enumerate() {
        ids[lead + i] = vocab.id(b);
    }
    Ok(Some((ids, from, to)))
}

/// Where the variants come from.
pub enum VariantInput<'a> {
    /// A VCF/BCF or CHROM POS ID REF ALT table.
    File(&'a Path),
    /// Every base inside these BED intervals, each changed to the three other bases
    /// (`--saturate`): in-silico saturation mutagenesis for masked-LM scorers.
    Saturate(&'a Path),
}

/// The variants of `--saturate`: for each base of each interval (in file order, then
/// position), REF = the reference base and ALT = the other three of A, C, G, T; a base that is
/// not A/C/G/T is left out (counted). `line` numbers the sites 1, 2, … (one window each); the
/// variant ID names the site's interval as `chrom:start-end` (1-based, as `window_region`), which
/// is how luminome-predict --npz puts each interval's substitutions on one row.
struct SaturatedSites {
    intervals: Vec<(String, u64, u64)>,
    at: (usize, u64),
    site: u64,
}

impl VariantInput<'_> {
    /// How the dataset's metadata names the input (its second source): the path, or
    /// `saturate:PATH`, which luminome-predict reads as "no VCF records to annotate".
    pub fn source(&self) -> String {
        match self {
            Self::File(p) => p.display().to_string(),
            Self::Saturate(p) => format!("saturate:{}", p.display()),
        }
    }
}

impl SaturatedSites {
    /// Reads the BED and checks every interval against the reference (chromosome, end).
    fn open(bed: &Path, reference: &Reference, mode: ChromNames) -> Result<Self> {
        let mut intervals = Vec::new();
        for r in luminome_io::bed::read_all(bed)? {
            let Some(chrom) = resolve(reference, &r.chrom, mode) else {
                return Err(InputError::line(
                    bed,
                    r.line,
                    format!("chromosome {} is not in the reference", r.chrom),
                )
                .into());
            };
            let len = reference.length(chrom).unwrap_or(0);
            if r.end > len {
                return Err(InputError::line(
                    bed,
                    r.line,
                    format!("end {} is past the end of {chrom} (length {len})", r.end),
                )
                .into());
            }
            intervals.push((chrom.to_string(), r.start, r.end));
        }
        if intervals.is_empty() {
            bail!("{}: no intervals to saturate", bed.display());
        }
        let first = intervals[0].1;
        Ok(Self {
            intervals,
            at: (0, first),
            site: 0,
        })
    }

    fn next(&mut self, reference: &mut Reference, counts: &mut Counts) -> Result<Option<Variant>> {
        loop {
            let Some((chrom, start, end)) = self.intervals.get(self.at.0) else {
                return Ok(None);
            };
            if self.at.1 >= *end {
                self.at.0 += 1;
                self.at.1 = self.intervals.get(self.at.0).map_or(0, |i| i.1);
                continue;
            }
            let pos0 = self.at.1;
            self.at.1 += 1;
            let base = reference.fetch(chrom, pos0, pos0 + 1)?[0].to_ascii_uppercase();
            if !b"ACGT".contains(&base) {
                bump(counts, "saturated_sites_not_acgt_left_out");
                continue;
            }
            self.site += 1;
            return Ok(Some(Variant {
                line: self.site,
                chrom: chrom.clone(),
                pos: pos0 + 1,
                id: format!("{chrom}:{}-{end}", start + 1),
                reference: (base as char).to_string(),
                alternates: b"ACGT"
                    .iter()
                    .filter(|&&b| b != base)
                    .map(|&b| (b as char).to_string())
                    .collect(),
                info: Vec::new(),
            }));
        }
    }
}

/// Reads every variant and writes one window pair per SNV allele.
pub fn variant_windows(
    reference_path: &Path,
    input: VariantInput,
    info_keys: &[String],
    threads: usize,
    opts: &VariantOptions,
    sink: &mut PairSink,
    counts: &mut Counts,
) -> Result<()> {
    let mut reference = Reference::open(reference_path)?;
    let (variants_path, mut reader, mut saturated) = match input {
        VariantInput::File(p) => (p, Some(VariantReader::open(p, threads, info_keys)?), None),
        VariantInput::Saturate(p) => (
            p,
            None,
            Some(SaturatedSites::open(p, &reference, opts.chrom_names)?),
        ),
    };
    let mut missing: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let mut first_mismatch: Option<String> = None;
    loop {
        let v = match (&mut reader, &mut saturated) {
            (Some(r), _) => r.next()?,
            (None, Some(s)) => s.next(&mut reference, counts)?,
            (None, None) => None,
        };
        let Some(v) = v else {
            break;
        };
        bump(counts, "records");
        let Some(chrom) = resolve(&reference, &v.chrom, opts.chrom_names).map(str::to_string)
        else {
            let e = missing.entry(v.chrom.clone()).or_insert((v.line, 0));
            e.1 += 1;
            continue;
        };
        let len = reference.length(&chrom).unwrap_or(0);
        if v.pos > len {
            return Err(InputError::line(
                variants_path,
                v.line,
                format!("POS {} is past the end of {chrom} (length {len})", v.pos),
            )
            .into());
        }
        let pos0 = v.pos - 1;
        let fasta_base = reference.fetch(&chrom, pos0, pos0 + 1)?[0].to_ascii_uppercase();
        for alt in &v.alternates {
            bump(counts, "alleles");
            if !snv_allele_kept(&v, alt, fasta_base, &sink.vocab, counts) {
                continue;
            }
            let ref_match = v.reference.to_ascii_uppercase().as_bytes()[0] == fasta_base;
            let files = (variants_path, reference_path);
            if !ref_match
                && !kept_on_ref_mismatch(&v, fasta_base, files, opts, counts, &mut first_mismatch)?
            {
                continue;
            }
            let Some((a, from, to)) =
                reference_window(&sink.vocab, &mut reference, &chrom, pos0, opts)?
            else {
                bump(counts, "past_contig_end_left_out");
                continue;
            };
            if to - from < opts.window as u64 {
                bump(counts, "padded_windows");
            }
            let site = opts.window / 2;
            let alt_id = sink.vocab.id(alt.as_bytes()[0]);
            let b: Vec<u32> = match opts.pairing {
                Pairing::Complement => a.iter().map(|&i| sink.vocab.complement(i)).collect(),
                Pairing::Alleles | Pairing::Given => {
                    let mut b = a.clone();
                    b[site] = alt_id;
                    b
                }
            };
            let window = Interval {
                chrom: chrom.to_string(),
                start: from,
                end: to,
            };
            let index = allele_index_row(&v, alt, window, site, ref_match, saturated.is_some());
            sink.push(a, b, Some(site), index)?;
            bump(counts, "alleles_written");
        }
    }
    if !missing.is_empty() {
        bail!(missing_chromosomes(
            &missing,
            &reference,
            variants_path,
            reference_path,
            opts.chrom_names
        ));
    }
    if let Some(m) = first_mismatch {
        eprintln!(
            "luminome-mask-pairs: {} REF alleles disagree with the reference and are flagged (ref_match 0); the first: {m}",
            counts.get("ref_mismatch_flagged").copied().unwrap_or(0)
        );
    }
    Ok(())
}

/// What `--ref-mismatch` does with an allele whose REF is not the reference's base: an error
/// naming the line, left out (`false`, counted) or kept and flagged (`true`; the first one kept
/// for the closing message). `files`: the variants and the reference.
fn kept_on_ref_mismatch(
    v: &Variant,
    fasta_base: u8,
    files: (&Path, &Path),
    opts: &VariantOptions,
    counts: &mut Counts,
    first_mismatch: &mut Option<String>,
) -> Result<bool> {
    let (variants_path, reference_path) = files;
    let what = format!(
        "REF {} of {}:{} is {} in {}",
        v.reference,
        v.chrom,
        v.pos,
        fasta_base as char,
        reference_path.display()
    );
    match opts.ref_mismatch {
        RefMismatch::Error => Err(InputError::line(
            variants_path,
            v.line,
            format!("{what}; use --ref-mismatch flag or skip to keep going"),
        )
        .into()),
        RefMismatch::Skip => {
            bump(counts, "ref_mismatch_left_out");
            Ok(false)
        }
        RefMismatch::Flag => {
            bump(counts, "ref_mismatch_flagged");
            first_mismatch.get_or_insert_with(|| {
                format!("{}: line {}: {what}", variants_path.display(), v.line)
            });
            Ok(true)
        }
    }
}

/// Whether `alt` of `v` is a single-base substitution of A/C/G/T at a site whose reference base
/// the vocabulary has; an allele left out is counted under its reason.
fn snv_allele_kept(
    v: &Variant,
    alt: &str,
    fasta_base: u8,
    vocab: &BaseVocab,
    counts: &mut Counts,
) -> bool {
    let reason = if Variant::is_symbolic(alt) {
        "symbolic_alleles_left_out"
    } else if v.reference.len() != 1 || alt.len() != 1 {
        "indel_or_mnp_alleles_left_out"
    } else if !v.is_snv(alt) {
        "non_acgt_alleles_left_out"
    } else if vocab.id(fasta_base) == vocab.n {
        "reference_n_at_site_left_out"
    } else {
        return true;
    };
    bump(counts, reason);
    false
}

/// The index row of one allele's window pair.
fn allele_index_row(
    v: &Variant,
    alt: &str,
    window: Interval,
    site: usize,
    ref_match: bool,
    saturated: bool,
) -> PairIndexRow {
    PairIndexRow {
        record: 0,
        // A saturated site's ID is its interval, shared by all its substitutions.
        name: if v.id == "." || saturated {
            format!("{}:{}:{}>{}", v.chrom, v.pos, v.reference, alt)
        } else {
            v.id.clone()
        },
        window: Some(window),
        site: Some(site),
        variant: Some(VariantSite {
            id: v.id.clone(),
            chrom: v.chrom.clone(),
            pos: v.pos,
            reference: v.reference.clone(),
            alternate: alt.to_string(),
            ref_match,
            line: v.line,
        }),
        info: v
            .info
            .iter()
            .map(|x| x.clone().unwrap_or_else(|| ".".into()))
            .collect(),
    }
}

/// The error for variants on chromosomes the reference lacks: each with its count and first
/// line, the reference's names, and the flag when a `chr` prefix is all that differs.
fn missing_chromosomes(
    missing: &BTreeMap<String, (u64, u64)>,
    reference: &Reference,
    variants_path: &Path,
    reference_path: &Path,
    chrom_names: ChromNames,
) -> anyhow::Error {
    let names: BTreeSet<&str> = reference
        .sequences()
        .iter()
        .map(|(n, _)| n.as_str())
        .collect();
    let list: Vec<String> = missing
        .iter()
        .map(|(c, (line, n))| format!("{c} ({n} records, first at line {line})"))
        .collect();
    let toggles = missing.keys().all(|c| {
        let t = c
            .strip_prefix("chr")
            .map(str::to_string)
            .unwrap_or(format!("chr{c}"));
        names.contains(t.as_str())
    });
    anyhow::anyhow!(
        "{}: chromosomes not in the reference {}: {}; the reference has {}{}",
        variants_path.display(),
        reference_path.display(),
        list.join(", "),
        names
            .iter()
            .take(10)
            .cloned()
            .collect::<Vec<_>>()
            .join(", "),
        if toggles && chrom_names == ChromNames::Exact {
            ". They differ only by a 'chr' prefix: add --chrom-names toggle-chr"
        } else {
            ""
        }
    )
}
