//! Read counting from BAM (noodles): the 5' end of each kept alignment, which for ATAC/DNase
//! reads is the Tn5/DNase cut site.
//!
//! Kept: mapped, primary (not secondary, not supplementary), not QC-failed, not a duplicate (when
//! `drop_duplicates`), mapping quality >= `min_mapq` (255, "unavailable", counts as failing any
//! positive threshold).

use std::path::Path;

use noodles::bam;
use noodles::sam::alignment::Record as _;

use crate::error::InputError;

#[derive(Debug, Clone, Copy)]
pub struct BamFilter {
    pub min_mapq: u8,
    pub drop_duplicates: bool,
}

/// Counts of what the filter did.
#[derive(Debug, Clone, Copy, Default)]
pub struct BamStats {
    pub records: u64,
    pub kept: u64,
}

/// The reference sequence names in the BAM header.
pub fn reference_names(path: &Path) -> Result<Vec<String>, InputError> {
    let mut reader = bam::io::reader::Builder
        .build_from_path(path)
        .map_err(|e| InputError::file(path, format!("cannot open as BAM: {e}")))?;
    let header = reader
        .read_header()
        .map_err(|e| InputError::file(path, format!("cannot read the BAM header: {e}")))?;
    Ok(header
        .reference_sequences()
        .keys()
        .map(|k| String::from_utf8_lossy(k).into_owned())
        .collect())
}

/// Call `visit(chrom, position)` with the 0-based 5' end of every kept alignment.
pub fn for_each_cut_site(
    path: &Path,
    filter: BamFilter,
    mut visit: impl FnMut(&str, u64),
) -> Result<BamStats, InputError> {
    let mut reader = bam::io::reader::Builder
        .build_from_path(path)
        .map_err(|e| InputError::file(path, format!("cannot open as BAM: {e}")))?;
    let header = reader
        .read_header()
        .map_err(|e| InputError::file(path, format!("cannot read the BAM header: {e}")))?;
    let names: Vec<String> = header
        .reference_sequences()
        .keys()
        .map(|k| String::from_utf8_lossy(k).into_owned())
        .collect();
    let mut stats = BamStats::default();
    for (i, result) in reader.records().enumerate() {
        let n = i as u64 + 1;
        let record = result
            .map_err(|e| InputError::record(path, n, None, format!("corrupt BAM record: {e}")))?;
        stats.records += 1;
        let flags = record.flags();
        if flags.is_unmapped()
            || flags.is_secondary()
            || flags.is_supplementary()
            || flags.is_qc_fail()
            || (filter.drop_duplicates && flags.is_duplicate())
        {
            continue;
        }
        let mapq = record.mapping_quality().map(u8::from).unwrap_or(255);
        if filter.min_mapq > 0 && (mapq == 255 || mapq < filter.min_mapq) {
            continue;
        }
        let (Some(Ok(tid)), Some(Ok(start))) =
            (record.reference_sequence_id(), record.alignment_start())
        else {
            continue;
        };
        let Some(chrom) = names.get(tid) else {
            return Err(InputError::record(
                path,
                n,
                None,
                format!("reference id {tid} is not in the header"),
            ));
        };
        let start0 = usize::from(start) as u64 - 1;
        let pos = if flags.is_reverse_complemented() {
            let span = record
                .alignment_span()
                .transpose()
                .map_err(|e| InputError::record(path, n, None, format!("bad CIGAR: {e}")))?
                .unwrap_or(1) as u64;
            start0 + span.max(1) - 1
        } else {
            start0
        };
        stats.kept += 1;
        visit(chrom, pos);
    }
    Ok(stats)
}
