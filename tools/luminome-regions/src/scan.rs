//! `MotifScanner`: scores every region against every motif on both strands and aggregates the
//! hits per (region, motif), then per feature column (cluster).
//!
//! Speed: many short regions are packed into one sequence, separated by runs of `N` at least as
//! long as the longest motif, and striped once for lightmotif's SIMD kernels; lightmotif's
//! `Scanner` then keeps only positions above the threshold as it goes (a u8 pre-filter, then the
//! exact f32 score). A hit is kept when it lies wholly inside one region (an `N` scores −∞, so
//! no hit spans a spacer anyway). Chunks of about `chunk_bp` are scanned in parallel (rayon).
//! Each region is scanned once, however many genes' windows contain it.

use lightmotif::abc::Dna;
use lightmotif::scan::Scanner;
use lightmotif::seq::{EncodedSequence, StripedSequence};
use rayon::prelude::*;

use crate::motifs::{FeatureMap, ScanMotif};

/// How the hits of one motif in one region become one number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aggregation {
    /// Sum of the scores of all hits on both strands (what GET does).
    Sum,
    /// Best hit score, 0 without hits.
    Max,
    /// Number of hits on both strands.
    Count,
}

impl Aggregation {
    pub fn name(self) -> &'static str {
        match self {
            Aggregation::Sum => "sum",
            Aggregation::Max => "max",
            Aggregation::Count => "count",
        }
    }

    fn add(self, acc: &mut f32, score: f32) {
        match self {
            Aggregation::Sum => *acc += score,
            Aggregation::Max => *acc = acc.max(score),
            Aggregation::Count => *acc += 1.0,
        }
    }

    /// Combine motif values into a cluster value: sums add, maxima take the max.
    fn combine(self, acc: &mut f32, value: f32) {
        match self {
            Aggregation::Max => *acc = acc.max(value),
            Aggregation::Sum | Aggregation::Count => *acc += value,
        }
    }
}

pub struct MotifScanner<'a> {
    motifs: &'a [ScanMotif],
    features: &'a FeatureMap,
    aggregation: Aggregation,
    spacer: usize,
    chunk_bp: usize,
}

/// Counters for the log and the benchmarks.
#[derive(Debug, Clone, Copy, Default)]
pub struct ScanStats {
    pub regions: u64,
    pub bases: u64,
    pub hits: u64,
}

impl<'a> MotifScanner<'a> {
    pub fn new(
        motifs: &'a [ScanMotif],
        features: &'a FeatureMap,
        aggregation: Aggregation,
    ) -> Self {
        let longest = motifs.iter().map(ScanMotif::len).max().unwrap_or(1);
        Self {
            motifs,
            features,
            aggregation,
            spacer: longest.max(1),
            chunk_bp: 1 << 18,
        }
    }

    /// Change the packed chunk size (bp); mainly for benchmarks.
    pub fn chunk_bp(mut self, bp: usize) -> Self {
        self.chunk_bp = bp.max(1);
        self
    }

    pub fn n_features(&self) -> usize {
        self.features.names.len()
    }

    /// Scan `sequences` (one per region, any case) and return the row-major
    /// `[regions × features]` matrix.
    pub fn scan(&self, sequences: &[Vec<u8>]) -> (Vec<f32>, ScanStats) {
        let nf = self.n_features();
        let bounds = self.chunk_bounds(sequences.iter().map(Vec::len));
        let parts: Vec<(Vec<f32>, u64)> = bounds
            .par_windows(2)
            .map(|w| self.scan_chunk(&sequences[w[0]..w[1]]))
            .collect();
        let mut out = Vec::with_capacity(sequences.len() * nf);
        let mut stats = ScanStats {
            regions: sequences.len() as u64,
            bases: sequences.iter().map(|s| s.len() as u64).sum(),
            hits: 0,
        };
        for (m, hits) in parts {
            out.extend(m);
            stats.hits += hits;
        }
        (out, stats)
    }

    /// Where [`MotifScanner::scan`] cuts regions of these lengths into chunks of about
    /// `chunk_bp`: 0, the end of each chunk, the number of regions. Scanning a run of whole
    /// chunks alone gives the same chunks, hence the same bits (a shard scans its chunks).
    pub fn chunk_bounds(&self, lengths: impl ExactSizeIterator<Item = usize>) -> Vec<usize> {
        let n = lengths.len();
        let mut bounds = vec![0];
        let mut acc = 0;
        for (i, len) in lengths.enumerate() {
            acc += len + self.spacer;
            if acc >= self.chunk_bp {
                bounds.push(i + 1);
                acc = 0;
            }
        }
        if *bounds.last().unwrap_or(&0) != n {
            bounds.push(n);
        }
        bounds
    }

    /// Pack, stripe and scan one chunk of regions.
    fn scan_chunk(&self, sequences: &[Vec<u8>]) -> (Vec<f32>, u64) {
        let nm = self.motifs.len();
        let nf = self.n_features();
        let (striped, starts) = pack(sequences, self.spacer);
        let ends: Vec<usize> = starts
            .iter()
            .zip(sequences)
            .map(|(s, q)| s + q.len())
            .collect();
        let mut per_motif = vec![0f32; sequences.len() * nm];
        let mut hits = 0u64;
        for (mi, motif) in self.motifs.iter().enumerate() {
            let len = motif.len();
            for pssm in [&motif.forward, &motif.reverse] {
                let mut scanner = Scanner::new(pssm, &striped);
                scanner.threshold(motif.threshold);
                for hit in scanner {
                    let pos = hit.position();
                    // Region whose start is the last one <= pos.
                    let k = starts.partition_point(|&s| s <= pos);
                    if k == 0 || pos + len > ends[k - 1] {
                        continue;
                    }
                    hits += 1;
                    self.aggregation
                        .add(&mut per_motif[(k - 1) * nm + mi], hit.score());
                }
            }
        }
        if self.features.column.len() == nm
            && self
                .features
                .column
                .iter()
                .enumerate()
                .all(|(i, &c)| i == c)
        {
            return (per_motif, hits);
        }
        let mut out = vec![0f32; sequences.len() * nf];
        for r in 0..sequences.len() {
            for mi in 0..nm {
                let v = per_motif[r * nm + mi];
                self.aggregation
                    .combine(&mut out[r * nf + self.features.column[mi]], v);
            }
        }
        (out, hits)
    }
}

/// Concatenate `sequences` with `spacer` Ns before each (uppercased, non-ACGT as N), stripe the
/// result for lightmotif and return it with each region's start in the packed sequence.
pub fn pack(sequences: &[Vec<u8>], spacer: usize) -> (StripedSequence<Dna>, Vec<usize>) {
    let total: usize = sequences.iter().map(|s| s.len() + spacer).sum::<usize>() + spacer;
    let mut packed = Vec::with_capacity(total);
    let mut starts = Vec::with_capacity(sequences.len());
    for s in sequences {
        packed.resize(packed.len() + spacer, b'N');
        starts.push(packed.len());
        packed.extend(s.iter().map(|b| b.to_ascii_uppercase()));
    }
    packed.resize(packed.len() + spacer, b'N');
    let encoded = EncodedSequence::<Dna>::encode_lossy(&packed);
    let mut striped = encoded.to_striped();
    striped.configure_wrap(spacer);
    (striped, starts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::motifs::{prepare, uniform, Threshold};
    use luminome_io::motif::{MatrixKind, MotifRecord};
    use std::path::Path;

    fn acgt_motif() -> MotifRecord {
        let one = |k: usize| {
            let mut r = [0.0; 4];
            r[k] = 1.0;
            r
        };
        MotifRecord {
            name: "ACGTT".into(),
            alt_name: None,
            kind: MatrixKind::Counts,
            rows: vec![one(0), one(1), one(2), one(3), one(3)],
            nsites: None,
            line: 1,
        }
    }

    fn acgt_scan_motifs(rec: &[MotifRecord]) -> Vec<crate::motifs::ScanMotif> {
        let path = Path::new("test.meme");
        prepare(rec, path, &uniform(), 0.1, Threshold::Score(5.0)).unwrap()
    }

    fn scan(seqs: &[&str], agg: Aggregation) -> Vec<f32> {
        let rec = [acgt_motif()];
        let motifs = acgt_scan_motifs(&rec);
        let fm = FeatureMap::identity(&rec);
        let seqs: Vec<Vec<u8>> = seqs.iter().map(|s| s.as_bytes().to_vec()).collect();
        MotifScanner::new(&motifs, &fm, agg).scan(&seqs).0
    }

    #[test]
    fn counts_hits_on_both_strands_inside_regions_only() {
        // region 0: one forward ACGTT and one reverse (AACGT); region 1: none;
        // region 2: lowercase hit at the very end.
        let got = scan(
            &["GGACGTTGGAACGTGG", "GGGGGGGG", "ccacgtt"],
            Aggregation::Count,
        );
        assert_eq!(got, vec![2.0, 0.0, 1.0]);
    }

    #[test]
    fn a_hit_split_between_two_regions_is_not_counted() {
        assert_eq!(
            scan(&["GGGACG", "TTGGG"], Aggregation::Count),
            vec![0.0, 0.0]
        );
    }

    #[test]
    fn sum_and_max_use_the_scores() {
        let s = scan(&["ACGTTACGTT"], Aggregation::Sum)[0];
        let m = scan(&["ACGTTACGTT"], Aggregation::Max)[0];
        assert!(m > 5.0 && (s - 2.0 * m).abs() < 1e-4, "{s} {m}");
    }

    #[test]
    fn chunking_does_not_change_the_result() {
        let rec = [acgt_motif()];
        let motifs = acgt_scan_motifs(&rec);
        let fm = FeatureMap::identity(&rec);
        let seqs: Vec<Vec<u8>> = (0..50)
            .map(|i| format!("{}ACGTT{}", "G".repeat(i % 7), "C".repeat(i % 5)).into_bytes())
            .collect();
        let a = MotifScanner::new(&motifs, &fm, Aggregation::Sum)
            .scan(&seqs)
            .0;
        let b = MotifScanner::new(&motifs, &fm, Aggregation::Sum)
            .chunk_bp(30)
            .scan(&seqs)
            .0;
        assert_eq!(a, b);
        assert!(a.iter().all(|&v| v > 5.0));
    }
}
