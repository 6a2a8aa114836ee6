//! Normalising raw accessibility per cell type, and calling peaks on coverage when no peak file
//! is given.

use luminome_io::bigwig::CoverageInterval;

/// How raw accessibility becomes the feature value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Normalisation {
    /// log2(CPM + 1), CPM = 1e6 · x / Σ x over all regions of the cell type (the spec's logCPM).
    LogCpm,
    /// log10(CPM + 1) / max over regions of log10(CPM + 1), in [0, 1] (GET's scaling).
    GetLog10Cpm,
    /// The raw value.
    Raw,
}

impl Normalisation {
    pub fn name(self) -> &'static str {
        match self {
            Normalisation::LogCpm => "logcpm",
            Normalisation::GetLog10Cpm => "get-log10cpm",
            Normalisation::Raw => "raw",
        }
    }

    pub fn apply(self, raw: &[f64]) -> Vec<f32> {
        let total: f64 = raw.iter().sum();
        let cpm = |x: f64| if total > 0.0 { x / total * 1e6 } else { 0.0 };
        match self {
            Normalisation::Raw => raw.iter().map(|&x| x as f32).collect(),
            Normalisation::LogCpm => raw.iter().map(|&x| (cpm(x) + 1.0).log2() as f32).collect(),
            Normalisation::GetLog10Cpm => {
                let logs: Vec<f64> = raw.iter().map(|&x| (cpm(x) + 1.0).log10()).collect();
                let max = logs.iter().cloned().fold(0.0, f64::max);
                logs.iter()
                    .map(|&l| if max > 0.0 { (l / max) as f32 } else { 0.0 })
                    .collect()
            }
        }
    }
}

/// Call peaks on coverage: bases whose signal is at least `fold` times the chromosome's mean
/// per-base signal, runs closer than `merge_gap` bp joined, runs shorter than `min_width` dropped.
pub fn call_peaks(
    intervals: &[CoverageInterval],
    chrom_length: u64,
    fold: f64,
    merge_gap: u64,
    min_width: u64,
) -> Vec<(u64, u64)> {
    let total: f64 = intervals
        .iter()
        .map(|i| i.value as f64 * (i.end - i.start) as f64)
        .sum();
    if total <= 0.0 || chrom_length == 0 {
        return Vec::new();
    }
    let threshold = fold * total / chrom_length as f64;
    let mut runs: Vec<(u64, u64)> = Vec::new();
    for iv in intervals.iter().filter(|i| i.value as f64 >= threshold) {
        match runs.last_mut() {
            Some(last) if iv.start <= last.1.saturating_add(merge_gap) => {
                last.1 = last.1.max(iv.end)
            }
            _ => runs.push((iv.start, iv.end)),
        }
    }
    runs.retain(|r| r.1 - r.0 >= min_width);
    runs
}
