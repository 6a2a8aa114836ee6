//! The three outputs: per-token TSV, per-base bedGraph on the genome, npz for TF-MoDISco.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use anyhow::Result;
use luminome_io::bedgraph::BedGraphWriter;
use luminome_io::npz::{NpyArraySpec, NpyElem};

use crate::sink::ArrayRows;
use luminome_io::token_dataset::TokenizerInfo;

use crate::bases::{base_scores, row_bases_from_tokens, GenomicWindow, TokenScore};

pub const TSV_HEADER: &str = "record\tname\tposition\ttoken\tstart\tend\tscore";

/// Writes the per-token TSV lines of one record.
pub fn write_tsv_record(
    out: &mut dyn Write,
    tok: &TokenizerInfo,
    record: u64,
    name: &str,
    tokens: &[TokenScore],
) -> Result<()> {
    for t in tokens {
        let token = tok
            .vocab
            .get(t.id as usize)
            .map(String::as_str)
            .unwrap_or("?");
        let (s, e) = match t.span {
            Some((s, e)) => (s.to_string(), e.to_string()),
            None => (".".into(), ".".into()),
        };
        writeln!(
            out,
            "{record}\t{name}\t{}\t{token}\t{s}\t{e}\t{}",
            t.position, t.score
        )?;
    }
    Ok(())
}

/// Per-base scores gathered on the genome: for each base, the sum and count of the scores
/// records gave it (a base covered by several records, e.g. both strands or overlapping
/// windows, gets their mean). Memory grows with the number of distinct bases covered.
#[derive(Default)]
pub struct GenomeTrack {
    bases: BTreeMap<String, BTreeMap<u64, (f64, u32)>>,
    pub records_placed: u64,
    pub records_without_coords: u64,
}

impl GenomeTrack {
    pub fn add(&mut self, row: &luminome_io::token_dataset::IndexRow, per_base: &[Option<f32>]) {
        let Some(w) = GenomicWindow::of_index(row) else {
            self.records_without_coords += 1;
            return;
        };
        let chrom = self.bases.entry(w.chrom.clone()).or_default();
        for (offset, score) in per_base.iter().enumerate() {
            if let (Some(s), Some(pos)) = (score, w.position(offset)) {
                let e = chrom.entry(pos).or_insert((0.0, 0));
                e.0 += f64::from(*s);
                e.1 += 1;
            }
        }
        self.records_placed += 1;
    }

    /// Writes the track (chromosomes in lexicographic order, as `sort -k1,1 -k2,2n` and
    /// bedGraphToBigWig expect) into an uncommitted writer.
    pub fn write(
        &self,
        dest: &Path,
        track_name: &str,
        chrom_sizes: Option<&Path>,
    ) -> Result<BedGraphWriter> {
        let sizes = chrom_sizes
            .map(luminome_io::bigwig::ChromSizes::read)
            .transpose()?;
        let mut w = BedGraphWriter::create_track(
            dest,
            Some(&format!("track type=bedGraph name=\"{track_name}\"")),
            sizes,
        )?;
        for (chrom, bases) in &self.bases {
            for (&pos, &(sum, n)) in bases {
                w.push(chrom, pos, pos + 1, (sum / f64::from(n)) as f32)?;
            }
        }
        Ok(w)
    }
}

/// The npz for TF-MoDISco-style tools: `contrib` and `onehot` (N, 4, L) float32, `record` and
/// `length` (N) int64.
pub struct ModiscoArrays {
    width: usize,
}

impl ModiscoArrays {
    pub fn new(width: usize) -> Self {
        Self { width }
    }

    /// The arrays of `n` records.
    pub fn specs(&self, n: usize) -> Vec<NpyArraySpec> {
        let shape = [n as u64, 4, self.width as u64];
        vec![
            NpyArraySpec::new("contrib", NpyElem::F32, &shape),
            NpyArraySpec::new("onehot", NpyElem::F32, &shape),
            NpyArraySpec::new("record", NpyElem::I64, &[n as u64]),
            NpyArraySpec::new("length", NpyElem::I64, &[n as u64]),
        ]
    }

    /// Adds one record: its per-base scores and bases (row orientation), zero-padded to L.
    pub fn push(
        &self,
        npz: &mut dyn ArrayRows,
        tok: &TokenizerInfo,
        record: u64,
        tokens: &[TokenScore],
        n_bases: usize,
    ) -> Result<()> {
        let scores = base_scores(tokens, n_bases);
        let bases = row_bases_from_tokens(tok, tokens, n_bases);
        let l = self.width;
        let mut onehot = vec![0f32; 4 * l];
        let mut contrib = vec![0f32; 4 * l];
        for (i, (b, s)) in bases.iter().zip(&scores).enumerate().take(l) {
            if let Some(b) = b {
                onehot[b * l + i] = 1.0;
                contrib[b * l + i] = s.unwrap_or(0.0);
            }
        }
        npz.push_f32(0, &contrib)?;
        npz.push_f32(1, &onehot)?;
        npz.push_i64(2, &[record as i64])?;
        npz.push_i64(3, &[n_bases as i64])?;
        Ok(())
    }
}
