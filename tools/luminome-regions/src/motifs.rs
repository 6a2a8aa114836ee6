//! From motif records to scoring matrices: probabilities with pseudocounts, log-odds against a
//! background, score thresholds from p-values, and the optional motif → cluster map.
//!
//! Probabilities (as FIMO does it): a position with counts `c` (sum `n`) or probabilities `f`
//! (from `nsites` = `n` sites, 20 when the file does not say) becomes
//! `p_b = (f_b · n + α · bg_b) / (n + α)` with pseudocount `α` (default 0.1).
//! Log-odds are base 2: `score_b = log2(p_b / bg_b)`; an `N` in the sequence scores −∞, so no hit
//! can span one.
//! Thresholds: `--pvalue P` converts P to a score per motif with TFMPvalue, refined until it
//! converges or the score granularity reaches 0.01 bits (finer than FIMO, which bins a motif's score range into 1000 steps),
//! the same threshold on both strands; `--score-threshold S` uses S.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use anyhow::{bail, Result};
use lightmotif::abc::{Background, Dna, Nucleotide, Symbol};
use lightmotif::dense::DenseMatrix;
use lightmotif::pwm::{FrequencyMatrix, ScoringMatrix};
use lightmotif_tfmpvalue::TfmPvalue;
use luminome_io::motif::{MatrixKind, MotifRecord};
use luminome_io::InputError;

/// Sites assumed for a probability matrix that does not state `nsites` (MEME's default).
pub const DEFAULT_NSITES: f64 = 20.0;

/// Finest TFMPvalue granularity (bits): finer ones cost memory and time for no practical gain.
pub const TFM_GRANULARITY: f64 = 1e-2;

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Threshold {
    PValue(f64),
    Score(f64),
}

/// A motif ready to scan: both strands and its score threshold.
#[derive(Debug, Clone)]
pub struct ScanMotif {
    pub name: String,
    pub forward: ScoringMatrix<Dna>,
    pub reverse: ScoringMatrix<Dna>,
    pub threshold: f32,
}

impl ScanMotif {
    pub fn len(&self) -> usize {
        self.forward.len()
    }

    pub fn is_empty(&self) -> bool {
        self.forward.is_empty()
    }
}

/// `[A, C, G, T]` background frequencies; [`uniform`] or from a sequence's composition.
pub type BaseFreqs = [f64; 4];

pub fn uniform() -> BaseFreqs {
    [0.25; 4]
}

/// Base composition of a sequence (case-insensitive, non-ACGT ignored), made strand-symmetric
/// (A = T, C = G) because both strands are scanned.
pub fn composition(counts: [u64; 4]) -> Option<BaseFreqs> {
    let at = (counts[0] + counts[3]) as f64;
    let cg = (counts[1] + counts[2]) as f64;
    let total = at + cg;
    (total > 0.0).then(|| {
        let a = at / total / 2.0;
        let c = cg / total / 2.0;
        [a, c, c, a]
    })
}

/// Add `seq`'s A/C/G/T counts to `counts`.
pub fn count_bases(seq: &[u8], counts: &mut [u64; 4]) {
    let mut table = [4usize; 256];
    for (b, i) in [
        (b'A', 0),
        (b'C', 1),
        (b'G', 2),
        (b'T', 3),
        (b'a', 0),
        (b'c', 1),
        (b'g', 2),
        (b't', 3),
    ] {
        table[b as usize] = i;
    }
    let mut local = [0u64; 5];
    for &b in seq {
        local[table[b as usize]] += 1;
    }
    for k in 0..4 {
        counts[k] += local[k];
    }
}

fn lightmotif_background(bg: &BaseFreqs) -> Background<Dna> {
    // `Background::new` wants frequencies summing to exactly 1.0 in f32; counts avoid that.
    let mut counts = [0usize; 5];
    for (k, n) in [Nucleotide::A, Nucleotide::C, Nucleotide::G, Nucleotide::T]
        .iter()
        .enumerate()
    {
        counts[n.as_index()] = (bg[k] * 1e9).round() as usize;
    }
    Background::from_counts(&counts.into()).unwrap_or_default()
}

/// Position probabilities `[A, C, G, T]` with the pseudocount applied.
pub fn probabilities(record: &MotifRecord, bg: &BaseFreqs, pseudocount: f64) -> Vec<[f64; 4]> {
    record
        .rows
        .iter()
        .map(|row| {
            let sum: f64 = row.iter().sum();
            let (freqs, n) = match record.kind {
                MatrixKind::Counts => (row.map(|c| c / sum), sum),
                MatrixKind::Probabilities => (
                    row.map(|f| f / sum),
                    record.nsites.unwrap_or(DEFAULT_NSITES),
                ),
            };
            let mut p = [0.0; 4];
            for b in 0..4 {
                p[b] = (freqs[b] * n + pseudocount * bg[b]) / (n + pseudocount);
            }
            p
        })
        .collect()
}

/// The log2-odds scoring matrix of a motif.
pub fn scoring_matrix(
    record: &MotifRecord,
    bg: &BaseFreqs,
    pseudocount: f64,
) -> ScoringMatrix<Dna> {
    let probs = probabilities(record, bg, pseudocount);
    let mut data = DenseMatrix::<f32, <Dna as lightmotif::Alphabet>::K>::new(probs.len());
    for (i, p) in probs.iter().enumerate() {
        for (k, n) in [Nucleotide::A, Nucleotide::C, Nucleotide::G, Nucleotide::T]
            .iter()
            .enumerate()
        {
            data[i][n.as_index()] = p[k] as f32;
        }
    }
    FrequencyMatrix::<Dna>::new_unchecked(data).to_scoring(lightmotif_background(bg))
}

/// The lowest score `t` (to TFMPvalue's granularity) whose p-value `P(S >= t)` (one strand, one
/// position, background of the matrix) is at most `pvalue`.
pub fn score_for_pvalue(pssm: &ScoringMatrix<Dna>, pvalue: f64) -> f32 {
    let mut tfmp = TfmPvalue::new(pssm);
    let Some(it) = tfmp
        .approximate_score(pvalue)
        .find(|it| it.converged || it.granularity <= TFM_GRANULARITY)
    else {
        return f32::INFINITY;
    };
    // The approximate score may sit one granularity step low (inside a gap of the discrete score
    // distribution); step up until the p-value at the threshold is within the limit.
    let step = it.granularity.max(TFM_GRANULARITY);
    let mut t = it.score;
    for _ in 0..1000 {
        let p = tfmp
            .approximate_pvalue(t)
            .find(|it| it.converged || it.granularity <= TFM_GRANULARITY)
            .map(|it| *it.range.start())
            .unwrap_or(0.0);
        if p <= pvalue * (1.0 + 1e-9) {
            break;
        }
        t += step;
    }
    t as f32
}

/// Build every motif's matrices and threshold. `path` is the motif file, for messages.
///
/// A `--pvalue` threshold needs every log-odds finite: a probability that is 0 in 32-bit floats
/// after the pseudocount (`--pseudocount 0` on a zero count, or a count so large that the others
/// vanish beside it) scores −∞, which TFMPvalue cannot place on its integer grid — refused, naming
/// the motif and position. A `--score-threshold` scan handles −∞ (no hit spans that base).
pub fn prepare(
    records: &[MotifRecord],
    path: &Path,
    bg: &BaseFreqs,
    pseudocount: f64,
    threshold: Threshold,
) -> Result<Vec<ScanMotif>> {
    use rayon::prelude::*;
    if matches!(threshold, Threshold::PValue(_)) {
        for r in records {
            for (i, p) in probabilities(r, bg, pseudocount).iter().enumerate() {
                if let Some(b) = (0..4).find(|&b| !(p[b] as f32 > 0.0 && p[b].is_finite())) {
                    return Err(InputError::line(
                        path,
                        r.line,
                        format!(
                            "motif {:?} position {}: base {} has probability {:e} after the \
                             pseudocount, so its log-odds is -inf and --pvalue cannot be turned \
                             into a score threshold; use --pseudocount > 0 (and counts of a \
                             sensible size) or --score-threshold",
                            r.name,
                            i + 1,
                            ["A", "C", "G", "T"][b],
                            p[b]
                        ),
                    )
                    .into());
                }
            }
        }
    }
    Ok(records
        .par_iter()
        .map(|r| {
            let forward = scoring_matrix(r, bg, pseudocount);
            let reverse = forward.reverse_complement();
            let threshold = match threshold {
                Threshold::Score(s) => s as f32,
                Threshold::PValue(p) => score_for_pvalue(&forward, p),
            };
            ScanMotif {
                name: r.name.clone(),
                forward,
                reverse,
                threshold,
            }
        })
        .collect())
}

/// Motif → feature column. Without a cluster map every motif is its own column.
#[derive(Debug, Clone)]
pub struct FeatureMap {
    pub names: Vec<String>,
    /// Feature column of each motif (motif file order).
    pub column: Vec<usize>,
}

impl FeatureMap {
    /// One column per motif, named `name` or `name alt`.
    pub fn identity(records: &[MotifRecord]) -> Self {
        Self {
            names: records.iter().map(|r| r.label()).collect(),
            column: (0..records.len()).collect(),
        }
    }

    /// Read a CSV/TSV with a header naming `motif_column` and `cluster_column` (defaults:
    /// `Motif` and `Name`, the Vierstra annotation table). Feature columns are the distinct
    /// cluster names in sorted (byte) order. Every motif must be in the map.
    pub fn from_cluster_table(
        path: &Path,
        records: &[MotifRecord],
        motif_column: &str,
        cluster_column: &str,
    ) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| InputError::file(path, format!("cannot read: {e}")))?;
        let mut lines = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty());
        let (_, header) = lines
            .next()
            .ok_or_else(|| InputError::file(path, "empty cluster map"))?;
        let delim = if header.contains('\t') { '\t' } else { ',' };
        let cols: Vec<&str> = header
            .split(delim)
            .map(|s| s.trim().trim_matches('"'))
            .collect();
        let find = |want: &str| {
            cols.iter()
                .position(|c| c.eq_ignore_ascii_case(want))
                .ok_or_else(|| {
                    InputError::line(
                        path,
                        1,
                        format!("no column named {want:?} in the header {cols:?}"),
                    )
                })
        };
        let (mi, ci) = (find(motif_column)?, find(cluster_column)?);
        let mut map: HashMap<String, String> = HashMap::new();
        for (i, line) in lines {
            let f: Vec<&str> = line
                .split(delim)
                .map(|s| s.trim().trim_matches('"'))
                .collect();
            let (Some(m), Some(c)) = (f.get(mi), f.get(ci)) else {
                return Err(InputError::line(
                    path,
                    i as u64 + 1,
                    "row has fewer columns than the header",
                )
                .into());
            };
            if let Some(prev) = map.insert(m.to_string(), c.to_string()) {
                if &prev != c {
                    return Err(InputError::line(
                        path,
                        i as u64 + 1,
                        format!("motif {m:?} is mapped to two clusters ({prev:?} and {c:?})"),
                    )
                    .into());
                }
            }
        }
        let names: BTreeSet<&String> = records.iter().filter_map(|r| map.get(&r.name)).collect();
        let names: Vec<String> = names.into_iter().cloned().collect();
        let index: HashMap<&str, usize> = names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.as_str(), i))
            .collect();
        let mut column = Vec::with_capacity(records.len());
        let mut missing = Vec::new();
        for r in records {
            match map.get(&r.name) {
                Some(c) => column.push(index[c.as_str()]),
                None => missing.push(r.name.clone()),
            }
        }
        if !missing.is_empty() {
            bail!(InputError::file(
                path,
                format!(
                    "{} motif(s) of the motif file are not in the cluster map, e.g. {:?}",
                    missing.len(),
                    &missing[..missing.len().min(5)]
                )
            ));
        }
        Ok(Self { names, column })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(rows: Vec<[f64; 4]>, kind: MatrixKind, nsites: Option<f64>) -> MotifRecord {
        MotifRecord {
            name: "M".into(),
            alt_name: None,
            kind,
            rows,
            nsites,
            line: 1,
        }
    }

    #[test]
    fn pseudocount_maths_matches_hand_values() {
        // counts 3,1,0,0 (n = 4), pseudocount 0.1, uniform: p_A = (3 + 0.025) / 4.1
        let r = record(vec![[3.0, 1.0, 0.0, 0.0]], MatrixKind::Counts, None);
        let p = probabilities(&r, &uniform(), 0.1);
        assert!((p[0][0] - 3.025 / 4.1).abs() < 1e-12);
        assert!((p[0][2] - 0.025 / 4.1).abs() < 1e-12);
        // probabilities with nsites 20: p_A = (0.5 * 20 + 0.1 * 0.25) / 20.1
        let r = record(vec![[0.5, 0.5, 0.0, 0.0]], MatrixKind::Probabilities, None);
        let p = probabilities(&r, &uniform(), 0.1);
        assert!((p[0][0] - 10.025 / 20.1).abs() < 1e-12);
        assert!((p.iter().flatten().sum::<f64>() - 1.0).abs() < 1e-12);
    }

    #[test]
    fn log_odds_are_base_2_against_the_background() {
        let r = record(
            vec![[0.5, 0.25, 0.125, 0.125]],
            MatrixKind::Probabilities,
            Some(1e9),
        );
        let m = scoring_matrix(&r, &uniform(), 0.0);
        assert!((m.matrix()[0][Nucleotide::A.as_index()] - 1.0).abs() < 1e-5);
        assert!((m.matrix()[0][Nucleotide::G.as_index()] + 1.0).abs() < 1e-5);
    }

    #[test]
    fn pvalue_threshold_matches_a_hand_computed_case() {
        // Two positions, each A with probability 1/2 and the others 1/6: log2 scores
        // A = log2(2) = 1, other = log2(2/3) = -0.585. Scores: AA = 2 (p = 1/16),
        // one A = 0.415 (p up to 7/16), none = -1.17. For p = 1/16 the threshold is 2.
        let r = record(
            vec![[0.5, 1.0 / 6.0, 1.0 / 6.0, 1.0 / 6.0]; 2],
            MatrixKind::Probabilities,
            Some(1e12),
        );
        let m = scoring_matrix(&r, &uniform(), 0.0);
        // Any t in (0.415, 2] keeps only AA, so the threshold must lie there.
        let one_a = 1.0 + (2.0f32 / 3.0).log2();
        let t = score_for_pvalue(&m, 1.0 / 16.0);
        assert!(t > one_a && t <= 2.0, "{t}");
        // p = 7/16 admits the one-A words too: t in (-1.17, 0.415].
        let t = score_for_pvalue(&m, 7.0 / 16.0);
        assert!(t > 2.0 * (2.0f32 / 3.0).log2() && t <= one_a + 1e-4, "{t}");
    }

    #[test]
    fn a_zero_probability_is_refused_for_a_pvalue_threshold_only() {
        // --pseudocount 0 on a zero count: log-odds -inf, which TFMPvalue cannot handle.
        let r = record(vec![[4.0, 0.0, 0.0, 0.0]; 2], MatrixKind::Counts, None);
        let path = Path::new("motifs.jaspar");
        let err = prepare(
            std::slice::from_ref(&r),
            path,
            &uniform(),
            0.0,
            Threshold::PValue(1e-4),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("motifs.jaspar") && err.contains("position 1"),
            "{err}"
        );
        assert!(
            err.contains("base C") && err.contains("--pseudocount"),
            "{err}"
        );
        // A count so large that the others vanish in f32 is the same case.
        let huge = record(vec![[1e300, 81.0, 1.0, 1.0]], MatrixKind::Counts, None);
        assert!(prepare(&[huge], path, &uniform(), 0.1, Threshold::PValue(1e-4)).is_err());
        // A score threshold scans with -inf (no hit spans the base) and the pseudocount fixes it.
        assert!(prepare(
            std::slice::from_ref(&r),
            path,
            &uniform(),
            0.0,
            Threshold::Score(1.0)
        )
        .is_ok());
        assert!(prepare(&[r], path, &uniform(), 0.1, Threshold::PValue(1e-4)).is_ok());
    }

    #[test]
    fn composition_is_strand_symmetric() {
        let mut c = [0; 4];
        count_bases(b"AAAcgNn", &mut c);
        assert_eq!(c, [3, 1, 1, 0]);
        let f = composition(c).unwrap();
        assert_eq!(f, [0.3, 0.2, 0.2, 0.3]);
    }
}
