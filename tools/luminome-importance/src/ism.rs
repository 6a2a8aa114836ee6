//! In-silico saturation mutagenesis (ISM) of sequence classifiers: every base of a row changed
//! to each other base, the model rerun on each copy, and the change in the explained output
//! f = logit[target] − mean_c logit[c] (the output saliency and IG explain; half the log-odds
//! for two classes) recorded per position and base.
//!
//! - The mutated rows are re-tokenized from the row's bases: with nucleotide (or a published
//!   model's character) tokens one id changes; with k-mers every k-mer covering the base does
//!   (a k-mer with an N becomes `[UNK]`, as `luminome-tokenize` writes it).
//! - A base the tokens do not tell (N, or only `[UNK]` k-mers over it) is mutated to all four
//!   bases; each of A, C, G, T is a substitution from it. Padding, `[CLS]` and `[SEP]` never
//!   change.
//! - Cost: 3 forward rows per known base (4 per unknown one) + 1 for the reference, run in passes
//!   of `--ism-rows` rows; no backward pass.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use anyhow::{bail, Context, Result};
use candle_core::{DType, Tensor};
use clap::ValueEnum;
use luminome_engine::input::tokens::real_length;
use luminome_engine::models::kmer_linear::features::{row_bases, NOT_ACGT};
use luminome_engine::models::token::{ClassifierInput, TokenClassifier};
use luminome_engine::models::FamilyConfig;
use luminome_io::npz::{NpyArraySpec, NpyElem};
use luminome_io::token_dataset::TokenizerInfo;

use crate::sink::ArrayRows;

const ACGT: [u8; 4] = *b"ACGT";

/// How a position's substitutions become its one score (TSV `score`, bedGraph, npz `contrib`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum IsmScore {
    /// f(reference) − mean over the substitutions of f(substituted): how much the reference
    /// base supports the explained class (positive: it does).
    RefMinusMean,
    /// The substitution with the largest |Δf|, signed (the strongest single change).
    MaxAbs,
}

/// One record's mutagenesis, in row orientation.
pub struct IsmRecord {
    /// The reference base of each position (0..3 = A, C, G, T; `None`: not known).
    pub bases: Vec<Option<usize>>,
    /// Whether each position was mutated (all, unless `--positions` restricts them).
    pub mutated: Vec<bool>,
    /// Δf when the position becomes A, C, G, T (0 for its own base).
    pub delta: Vec<[f32; 4]>,
    /// f of the unmutated row.
    pub reference: f32,
}

impl IsmRecord {
    /// The position's score under `how`.
    pub fn score(&self, i: usize, how: IsmScore) -> f32 {
        let alts = (0..4).filter(|&a| Some(a) != self.bases[i]);
        match how {
            IsmScore::RefMinusMean => {
                let (sum, n) = alts.fold((0f64, 0u32), |(s, n), a| {
                    (s + f64::from(self.delta[i][a]), n + 1)
                });
                (-sum / f64::from(n.max(1))) as f32
            }
            IsmScore::MaxAbs => {
                alts.map(|a| self.delta[i][a])
                    .fold(0f32, |m, d| if d.abs() > m.abs() { d } else { m })
            }
        }
    }
}

/// Re-tokenizes a row with one base changed.
pub struct Mutator<'a> {
    tok: &'a TokenizerInfo,
    ids_of: HashMap<&'a str, u32>,
}

impl<'a> Mutator<'a> {
    /// Refuses a tokenizer whose tokens are not fixed runs of bases (BPE).
    pub fn new(tok: &'a TokenizerInfo, dataset: &Path) -> Result<Self> {
        if !tok.scheme.has_base_spans() {
            bail!(
                "{}: --method ism changes bases and re-tokenizes them, which needs tokens of known bases (nucleotide or kmer scheme); this dataset uses the {} scheme",
                dataset.display(),
                tok.scheme
            );
        }
        let ids_of = tok
            .vocab
            .iter()
            .enumerate()
            .filter(|(id, _)| !tok.is_special(*id as u32))
            .map(|(id, s)| (s.as_str(), id as u32))
            .collect();
        Ok(Self { tok, ids_of })
    }

    /// The id of the bases `text` (upper case; `N` for an unknown base).
    fn id(&self, text: &str) -> Result<u32> {
        if let Some(&id) = self.ids_of.get(text) {
            return Ok(id);
        }
        match self.tok.unk_id {
            Some(unk) if text.contains('N') => Ok(unk),
            _ => bail!("the vocabulary has no token {text:?} for a mutated row"),
        }
    }

    /// `ids` with base `pos` (of `chars`, the row's bases) set to `alt`: every token whose
    /// span covers it re-read from the bases.
    fn mutate(
        &self,
        ids: &[u32],
        len: usize,
        chars: &[u8],
        pos: usize,
        alt: u8,
    ) -> Result<Vec<u32>> {
        let mut out = ids.to_vec();
        let mut text = Vec::new();
        for (t, &id) in ids.iter().enumerate().take(len) {
            let Some((s, e)) = self.tok.token_span(t, id) else {
                continue;
            };
            if !(s..e).contains(&pos) || e > chars.len() {
                continue;
            }
            text.clear();
            text.extend_from_slice(&chars[s..e]);
            text[pos - s] = alt;
            out[t] = self.id(std::str::from_utf8(&text)?)?;
        }
        Ok(out)
    }
}

/// ISM of one record: `ids`/`mask` its row (padding included), `weights` the `[C]` weights of
/// the explained output, `rows` the rows per forward pass, `only` the positions to mutate
/// (`None`: all).
pub fn mutagenesis<C: FamilyConfig>(
    input: &ClassifierInput<C>,
    mutator: &Mutator,
    (ids, mask): (&[u32], &[u8]),
    weights: &[f32],
    rows: usize,
    only: Option<&[bool]>,
) -> Result<IsmRecord>
where
    C::Model: TokenClassifier,
{
    let len = real_length(mask);
    let (ids, mask) = (&ids[..len], &mask[..len]);
    let codes = row_bases(mutator.tok, ids, mask).unwrap_or_default();
    let chars: Vec<u8> = codes
        .iter()
        .map(|&c| if c < NOT_ACGT { ACGT[c as usize] } else { b'N' })
        .collect();
    let bases: Vec<Option<usize>> = codes
        .iter()
        .map(|&c| (c < NOT_ACGT).then_some(c as usize))
        .collect();
    let mutated: Vec<bool> = (0..bases.len())
        .map(|p| only.is_none_or(|o| o.get(p).copied().unwrap_or(false)))
        .collect();
    // The reference row first, then each (position, base) that differs from it.
    let mutants: Vec<(usize, usize)> = (0..bases.len())
        .filter(|&p| mutated[p])
        .flat_map(|p| (0..4).map(move |a| (p, a)))
        .filter(|&(p, a)| bases[p] != Some(a))
        .collect();
    let mut f = Vec::with_capacity(mutants.len() + 1);
    let model = input.model()?;
    let mask_row: Vec<f32> = mask.iter().map(|&m| f32::from(m != 0)).collect();
    let jobs: Vec<Option<(usize, usize)>> = std::iter::once(None)
        .chain(mutants.iter().copied().map(Some))
        .collect();
    for pass in jobs.chunks(rows.max(1)) {
        let mut flat = Vec::with_capacity(pass.len() * len);
        for job in pass {
            match job {
                None => flat.extend_from_slice(ids),
                Some((p, a)) => flat.extend(mutator.mutate(ids, len, &chars, *p, ACGT[*a])?),
            }
        }
        let n = pass.len();
        let ids_t = Tensor::from_vec(flat, (n, len), &input.device)?;
        let mask_t = Tensor::from_slice(&mask_row, (1, len), &input.device)?
            .broadcast_as((n, len))?
            .contiguous()?;
        let logits = model
            .logits(&ids_t, &mask_t, None)?
            .to_dtype(DType::F32)?
            .to_vec2::<f32>()
            .context("cannot read the logits")?;
        f.extend(logits.iter().map(|l| {
            l.iter()
                .zip(weights)
                .map(|(&x, &w)| f64::from(x) * f64::from(w))
                .sum::<f64>()
        }));
    }
    let reference = f[0];
    let mut delta = vec![[0f32; 4]; bases.len()];
    for (&(p, a), &v) in mutants.iter().zip(&f[1..]) {
        delta[p][a] = (v - reference) as f32;
    }
    Ok(IsmRecord {
        bases,
        mutated,
        delta,
        reference: reference as f32,
    })
}

pub const ISM_TSV_HEADER: &str = "record\tname\tposition\tbase\tA\tC\tG\tT\tscore";

/// One record's TSV lines: per base, its reference base, Δf to each base, and its score.
pub fn write_tsv(
    out: &mut dyn Write,
    record: u64,
    name: &str,
    ism: &IsmRecord,
    how: IsmScore,
) -> Result<()> {
    for (i, d) in ism.delta.iter().enumerate() {
        if !ism.mutated[i] {
            continue;
        }
        let base = ism.bases[i].map_or('N', |b| ACGT[b] as char);
        writeln!(
            out,
            "{record}\t{name}\t{i}\t{base}\t{}\t{}\t{}\t{}\t{}",
            d[0],
            d[1],
            d[2],
            d[3],
            ism.score(i, how)
        )?;
    }
    Ok(())
}

/// The npz: `ism` (N, 4, L) Δf per base, `contrib` (N, 4, L) one-hot × the position's score
/// (what TF-MoDISco reads with `onehot`), `onehot`, `record` and `length` (N). Positions left
/// unmutated by `--positions` are 0 in `ism` and `contrib`.
pub struct IsmArrays {
    width: usize,
}

impl IsmArrays {
    pub fn new(width: usize) -> Self {
        Self { width }
    }

    /// The arrays of `n` records.
    pub fn specs(&self, n: usize) -> Vec<NpyArraySpec> {
        let shape = [n as u64, 4, self.width as u64];
        vec![
            NpyArraySpec::new("ism", NpyElem::F32, &shape),
            NpyArraySpec::new("contrib", NpyElem::F32, &shape),
            NpyArraySpec::new("onehot", NpyElem::F32, &shape),
            NpyArraySpec::new("record", NpyElem::I64, &[n as u64]),
            NpyArraySpec::new("length", NpyElem::I64, &[n as u64]),
        ]
    }

    pub fn push(
        &self,
        npz: &mut dyn ArrayRows,
        record: u64,
        ism: &IsmRecord,
        how: IsmScore,
    ) -> Result<()> {
        let l = self.width;
        let (mut delta, mut contrib, mut onehot) =
            (vec![0f32; 4 * l], vec![0f32; 4 * l], vec![0f32; 4 * l]);
        for i in 0..ism.delta.len().min(l) {
            for a in 0..4 {
                delta[a * l + i] = ism.delta[i][a];
            }
            if let Some(b) = ism.bases[i] {
                onehot[b * l + i] = 1.0;
                if ism.mutated[i] {
                    contrib[b * l + i] = ism.score(i, how);
                }
            }
        }
        npz.push_f32(0, &delta)?;
        npz.push_f32(1, &contrib)?;
        npz.push_f32(2, &onehot)?;
        npz.push_i64(3, &[record as i64])?;
        npz.push_i64(4, &[ism.delta.len() as i64])?;
        Ok(())
    }
}

/// `--positions`: BED intervals, or the REF bases of a VCF/BCF's records, by chromosome, sorted
/// and merged.
pub struct Positions {
    by_chrom: HashMap<String, Vec<(u64, u64)>>,
}

/// Whether `path` names a VCF or BCF (by its name: `.vcf`, `.vcf.gz`, `.vcf.bgz`, `.bcf`).
fn is_variants_file(path: &Path) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    [".vcf", ".vcf.gz", ".vcf.bgz", ".bcf"]
        .iter()
        .any(|s| name.ends_with(s))
}

impl Positions {
    pub fn read(path: &Path) -> Result<Self> {
        let mut by_chrom: HashMap<String, Vec<(u64, u64)>> = HashMap::new();
        if is_variants_file(path) {
            let mut reader = luminome_io::variants::VariantReader::open(path, 1, &[])?;
            while let Some(v) = reader.next()? {
                let start = v.pos - 1;
                let end = start + v.reference.len().max(1) as u64;
                by_chrom.entry(v.chrom).or_default().push((start, end));
            }
        } else {
            for r in luminome_io::bed::read_all(path)? {
                by_chrom.entry(r.chrom).or_default().push((r.start, r.end));
            }
        }
        for v in by_chrom.values_mut() {
            v.sort_unstable();
            let mut merged: Vec<(u64, u64)> = Vec::with_capacity(v.len());
            for &(s, e) in v.iter() {
                match merged.last_mut() {
                    Some(last) if s <= last.1 => last.1 = last.1.max(e),
                    _ => merged.push((s, e)),
                }
            }
            *v = merged;
        }
        Ok(Self { by_chrom })
    }

    fn contains(&self, chrom: &str, pos: u64) -> bool {
        self.by_chrom.get(chrom).is_some_and(|v| {
            let i = v.partition_point(|&(_, e)| e <= pos);
            v.get(i).is_some_and(|&(s, _)| s <= pos)
        })
    }

    /// Which bases of a record's row (its index row, `n` bases) lie in an interval; `None` when
    /// the record has no coordinates.
    pub fn of_row(
        &self,
        row: &luminome_io::token_dataset::IndexRow,
        n: usize,
    ) -> Option<Vec<bool>> {
        let w = crate::bases::GenomicWindow::of_index(row)?;
        Some(
            (0..n)
                .map(|o| w.position(o).is_some_and(|p| self.contains(&w.chrom, p)))
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(bases: Vec<Option<usize>>, delta: Vec<[f32; 4]>) -> IsmRecord {
        IsmRecord {
            mutated: vec![true; bases.len()],
            bases,
            delta,
            reference: 0.0,
        }
    }

    #[test]
    fn scores_read_the_substitutions_of_each_position() {
        let r = record(
            vec![Some(0), None],
            vec![[0.0, -1.0, -2.0, 0.5], [1.0, -3.0, 0.0, 2.0]],
        );
        // A: substitutions C, G, T → −(−1 − 2 + 0.5)/3.
        assert!((r.score(0, IsmScore::RefMinusMean) - 2.5 / 3.0).abs() < 1e-6);
        assert_eq!(r.score(0, IsmScore::MaxAbs), -2.0);
        // Unknown base: all four are substitutions.
        assert!((r.score(1, IsmScore::RefMinusMean) - 0.0).abs() < 1e-6);
        assert_eq!(r.score(1, IsmScore::MaxAbs), -3.0);
    }

    fn set(mask: &[bool]) -> Vec<usize> {
        (0..mask.len()).filter(|&i| mask[i]).collect()
    }

    /// An index row of a version 1 index's `chr:start-end(strand)`.
    fn row(coords: &str) -> luminome_io::token_dataset::IndexRow {
        luminome_io::token_dataset::IndexRow {
            record: 0,
            shard: 0,
            name: "r".into(),
            interval: luminome_io::token_dataset::Interval::parse_v1(coords),
            seq_length: 10,
            window_offset: 0,
            window_length: 10,
            strand: if coords.ends_with("(-)") { '-' } else { '+' },
        }
    }

    #[test]
    fn positions_map_intervals_onto_both_strands_of_a_row() {
        let dir = tempfile::tempdir().unwrap();
        let bed = dir.path().join("p.bed");
        std::fs::write(&bed, "chr1\t102\t104\nchr1\t103\t105\nchr2\t0\t9\n").unwrap();
        let p = Positions::read(&bed).unwrap();
        // chr1:100-110, + strand: bases 102..105 (the two intervals merged) are offsets 2..5.
        assert_eq!(
            set(&p.of_row(&row("chr1:100-110(+)"), 10).unwrap()),
            vec![2, 3, 4]
        );
        // The minus-strand row reads the window backwards: offset o is base 109 − o.
        assert_eq!(
            set(&p.of_row(&row("chr1:100-110(-)"), 10).unwrap()),
            vec![5, 6, 7]
        );
        assert!(p.of_row(&row("."), 10).is_none());
        assert!(set(&p.of_row(&row("chr3:0-5(+)"), 5).unwrap()).is_empty());
        // A VCF: each record's REF bases (POS 103, REF AC → bases 102 and 103).
        let vcf = dir.path().join("p.vcf");
        std::fs::write(
            &vcf,
            "##fileformat=VCFv4.2\n##contig=<ID=chr1,length=1000>\n#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\nchr1\t103\t.\tAC\tA\t.\t.\t.\nchr1\t108\t.\tG\tT\t.\t.\t.\n",
        )
        .unwrap();
        let p = Positions::read(&vcf).unwrap();
        assert_eq!(
            set(&p.of_row(&row("chr1:100-110(+)"), 10).unwrap()),
            vec![2, 3, 7]
        );
    }

    #[test]
    fn a_mutation_re_reads_every_kmer_over_the_base() {
        // Overlapping 3-mers with [CLS]/[SEP] over ACGTA: ACG CGT GTA.
        let tok = TokenizerInfo::kmer(3, 1, true, true);
        let m = Mutator::new(&tok, Path::new("x")).unwrap();
        let id = |s: &str| tok.vocab.iter().position(|v| v == s).unwrap() as u32;
        let ids = vec![1, id("ACG"), id("CGT"), id("GTA"), 2, 0];
        let out = m.mutate(&ids, 5, b"ACGTA", 2, b'T').unwrap();
        assert_eq!(out, vec![1, id("ACT"), id("CTT"), id("TTA"), 2, 0]);
        // A base at the edge is in one k-mer only; N gives [UNK].
        let out = m.mutate(&ids, 5, b"ACGTA", 0, b'N').unwrap();
        assert_eq!(
            out,
            vec![1, tok.unk_id.unwrap(), id("CGT"), id("GTA"), 2, 0]
        );
        // Nucleotides: one id.
        let nt = TokenizerInfo::nucleotide(true, false);
        let m = Mutator::new(&nt, Path::new("x")).unwrap();
        assert_eq!(
            m.mutate(&[1, 5, 6], 3, b"AC", 1, b'G').unwrap(),
            vec![1, 5, 7]
        );
    }
}
