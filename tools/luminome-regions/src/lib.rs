//! `luminome-regions`: region × motif / accessibility matrices per gene and cell type, the input
//! of the region expression transformer (docs/regions.md).
//!
//! - `inputs`: regions with their raw accessibility, and the genes, before scanning.
//! - [`regions`]: peaks (BED/narrowPeak, union of several files), width filter, merging.
//! - [`accessibility`]: accessibility per region from bigWig, bedGraph, fragments, BAM or a counts
//!   table; normalisation; peak calling on coverage.
//! - [`motifs`]: pseudocounts, background, log-odds, p-value thresholds, motif → cluster map.
//! - [`scan`]: [`scan::MotifScanner`], packed SIMD scanning with lightmotif and hit aggregation.
//! - [`windows`]: the N regions of each gene's window.
//! - [`dataset`]: the dataset, samples table and region table of a run.
//! - [`reuse`]: reading an earlier run's region table instead of rescanning.
//! - `shard`: `--shard I/N` parts and their `--gather` (docs/scale-out.md).
//! - [`pipeline`]: the whole run and the dataset layout; [`args`]: the command line.

pub mod accessibility;
pub mod args;
pub mod dataset;
mod inputs;
pub mod motifs;
pub mod pipeline;
pub mod regions;
pub mod reuse;
mod samples;
pub mod scan;
mod shard;
pub mod windows;
