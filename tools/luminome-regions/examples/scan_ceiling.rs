//! Motif scanning benchmark: `MotifScanner` (what `luminome-regions` runs) against lightmotif's
//! raw scanning rate on the same data (the ceiling), side by side in one process.
//!
//! The ceiling runs lightmotif's thresholding `Scanner` per motif and strand over the packed,
//! striped regions and only counts hits: no region bookkeeping, no aggregation, one thread. Two
//! packings: every region in one N-separated sequence, and the ~256 kb chunks `MotifScanner` uses
//! (the ceiling for our design). `MotifScanner` is then timed on the same regions with 1 and 2
//! threads.
//!
//! usage: cargo run --release -p luminome-regions --example scan_ceiling -- \
//!          REFERENCE.fa REGIONS.tsv MOTIFS [PVALUE]
//! REGIONS.tsv: a `*.regions.tsv` from luminome-regions (columns region, chrom, start, end, ...).

use std::time::Instant;

use anyhow::{Context, Result};
use lightmotif::scan::Scanner;
use luminome_io::motif::read_motifs;
use luminome_io::reference::Reference;
use luminome_regions::motifs::{prepare, uniform, FeatureMap, Threshold};
use luminome_regions::scan::{pack, Aggregation, MotifScanner};

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!("usage: scan_ceiling REFERENCE.fa REGIONS.tsv MOTIFS [PVALUE]");
        std::process::exit(2);
    }
    let pvalue: f64 = args.get(4).map(|s| s.parse()).transpose()?.unwrap_or(1e-4);
    let mut reference = Reference::open(args[1].as_ref())?;
    let text = std::fs::read_to_string(&args[2]).context("regions table")?;
    let mut coords: Vec<(String, u64, u64)> = Vec::new();
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.splitn(5, '\t').collect();
        coords.push((f[1].to_string(), f[2].parse()?, f[3].parse()?));
    }
    let mut seqs = Vec::with_capacity(coords.len());
    let mut chrom_seq: (String, Vec<u8>) = (String::new(), Vec::new());
    for (c, s, e) in &coords {
        if &chrom_seq.0 != c {
            let len = reference.length(c).context("chromosome")?;
            chrom_seq = (c.clone(), reference.fetch(c, 0, len)?);
        }
        seqs.push(chrom_seq.1[*s as usize..*e as usize].to_vec());
    }
    let bases: usize = seqs.iter().map(Vec::len).sum();
    let records = read_motifs(args[3].as_ref(), None)?;
    let t0 = Instant::now();
    let motifs = prepare(
        &records,
        args[3].as_ref(),
        &uniform(),
        0.1,
        Threshold::PValue(pvalue),
    )?;
    let t_thresholds = t0.elapsed().as_secs_f64();
    let nm = motifs.len();
    let mbp_motifs = bases as f64 / 1e6 * nm as f64;
    let region_motifs = seqs.len() as f64 * nm as f64;
    println!(
        "regions\t{}\nbases\t{bases}\nmotifs\t{nm}\nthresholds_s\t{t_thresholds:.3}",
        seqs.len()
    );

    // Ceiling: one packed sequence, raw thresholding scan, hits counted.
    let spacer = motifs.iter().map(|m| m.len()).max().unwrap_or(1);
    let t0 = Instant::now();
    let (striped, _) = pack(&seqs, spacer);
    let t_pack = t0.elapsed().as_secs_f64();
    let t0 = Instant::now();
    let mut raw_hits = 0u64;
    for m in &motifs {
        for pssm in [&m.forward, &m.reverse] {
            let mut scanner = Scanner::new(pssm, &striped);
            scanner.threshold(m.threshold);
            raw_hits += scanner.count() as u64;
        }
    }
    let t_raw = t0.elapsed().as_secs_f64() + t_pack;
    println!(
        "ceiling_one_sequence_s\t{t_raw:.3}\thits\t{raw_hits}\tmbp_motifs_per_s\t{:.1}",
        mbp_motifs / t_raw
    );
    drop(striped);

    // Ceiling with MotifScanner's chunks (same rule: close a chunk once it reaches 2^18 bp).
    let t0 = Instant::now();
    let mut chunk_hits = 0u64;
    let mut begin = 0;
    let mut acc = 0;
    for i in 0..seqs.len() {
        acc += seqs[i].len() + spacer;
        if acc >= 1 << 18 || i + 1 == seqs.len() {
            let (striped, _) = pack(&seqs[begin..=i], spacer);
            for m in &motifs {
                for pssm in [&m.forward, &m.reverse] {
                    let mut scanner = Scanner::new(pssm, &striped);
                    scanner.threshold(m.threshold);
                    chunk_hits += scanner.count() as u64;
                }
            }
            begin = i + 1;
            acc = 0;
        }
    }
    let t_ceiling = t0.elapsed().as_secs_f64();
    println!(
        "ceiling_chunked_s\t{t_ceiling:.3}\thits\t{chunk_hits}\tmbp_motifs_per_s\t{:.1}",
        mbp_motifs / t_ceiling
    );

    let features = FeatureMap::identity(&records);
    for threads in [1usize, 2] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()?;
        let t0 = Instant::now();
        let (_, stats) =
            pool.install(|| MotifScanner::new(&motifs, &features, Aggregation::Sum).scan(&seqs));
        let t = t0.elapsed().as_secs_f64();
        println!(
            "scanner_threads\t{threads}\tscanner_s\t{t:.3}\tscanner_hits\t{}\tmbp_motifs_per_s\t{:.1}\tregions_motifs_per_s\t{:.0}\tfraction_of_ceiling\t{:.3}",
            stats.hits,
            mbp_motifs / t,
            region_motifs / t,
            t_ceiling / t
        );
    }
    Ok(())
}
