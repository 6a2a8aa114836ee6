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

#[cfg(test)]
mod tests {
    use super::*;
    use noodles::core::Position;
    use noodles::sam::alignment::io::Write as _;
    use noodles::sam::alignment::record::cigar::op::{Kind, Op};
    use noodles::sam::alignment::record::{Flags, MappingQuality};
    use noodles::sam::alignment::RecordBuf;
    use noodles::sam::header::record::value::{map::ReferenceSequence, Map};
    use std::num::NonZero;

    fn record(start: usize, flags: Flags, mapq: u8) -> RecordBuf {
        RecordBuf::builder()
            .set_flags(flags)
            .set_reference_sequence_id(0)
            .set_alignment_start(Position::try_from(start).unwrap())
            .set_mapping_quality(MappingQuality::new(mapq).unwrap())
            .set_cigar([Op::new(Kind::Match, 10)].into_iter().collect())
            .set_sequence(vec![b'A'; 10].into())
            .build()
    }

    #[test]
    fn cut_sites_respect_strand_mapq_and_flags() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.bam");
        let header = noodles::sam::Header::builder()
            .add_reference_sequence(
                "chr1",
                Map::<ReferenceSequence>::new(NonZero::new(1000).unwrap()),
            )
            .build();
        {
            let mut w = bam::io::Writer::new(std::fs::File::create(&path).unwrap());
            w.write_header(&header).unwrap();
            let records = [
                record(101, Flags::empty(), 60),              // kept: 5' end 100
                record(201, Flags::REVERSE_COMPLEMENTED, 60), // kept: 5' end 209
                record(301, Flags::empty(), 10),              // MAPQ too low
                record(401, Flags::DUPLICATE, 60),            // duplicate
                record(501, Flags::SECONDARY, 60),            // secondary
            ];
            for r in &records {
                w.write_alignment_record(&header, r).unwrap();
            }
            w.try_finish().unwrap();
        }
        assert_eq!(reference_names(&path).unwrap(), vec!["chr1".to_string()]);
        let mut sites = Vec::new();
        let filter = BamFilter {
            min_mapq: 30,
            drop_duplicates: true,
        };
        let stats =
            for_each_cut_site(&path, filter, |c, p| sites.push((c.to_string(), p))).unwrap();
        assert_eq!(
            sites,
            vec![("chr1".to_string(), 100), ("chr1".to_string(), 209)]
        );
        assert_eq!((stats.records, stats.kept), (5, 2));
        let keep_dups = BamFilter {
            min_mapq: 0,
            drop_duplicates: false,
        };
        let stats = for_each_cut_site(&path, keep_dups, |_, _| {}).unwrap();
        assert_eq!(stats.kept, 4);
    }
}
