//! Gene windows: the N regions of a gene's window (default 2 Mbp centred on the TSS).
//!
//! Candidates are the regions that overlap `[tss − window/2, tss + window/2)`. Selection:
//! - `distance` (default): the N closest to the TSS, distance being 0 for a region that contains
//!   the TSS and otherwise the gap to its nearest base; ties go to the region that starts first.
//! - `accessibility`: the N most accessible in the cell type; ties by distance, then start.
//!
//! The chosen regions are returned in genomic order; `tss_index` is the position among them of
//! the region containing the TSS (None when no region contains it).

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Selection {
    Distance,
    Accessibility,
}

impl Selection {
    pub fn name(self) -> &'static str {
        match self {
            Selection::Distance => "distance",
            Selection::Accessibility => "accessibility",
        }
    }
}

/// Regions chosen for one gene: indices into the chromosome's region list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    pub regions: Vec<usize>,
    pub tss_index: Option<usize>,
    /// The TSS's slot: its region's, or the number of chosen regions that end before it (the
    /// slot it falls before), so models can tell every region's place relative to the TSS.
    pub tss_slot: usize,
}

pub fn distance(region: (u64, u64), tss: u64) -> u64 {
    if tss < region.0 {
        region.0 - tss
    } else if tss >= region.1 {
        tss - (region.1 - 1)
    } else {
        0
    }
}

/// Choose up to `n` regions of `regions` (sorted, non-overlapping) for a TSS.
/// `accessibility` (same length as `regions`) is used by [`Selection::Accessibility`].
pub fn select(
    regions: &[(u64, u64)],
    tss: u64,
    window: u64,
    n: usize,
    selection: Selection,
    accessibility: &[f32],
) -> Window {
    let lo = tss.saturating_sub(window / 2);
    // Saturating: a window wider than the genome reaches its end (a huge --window is not an error).
    let hi = tss.saturating_add(window - window / 2);
    let first = regions.partition_point(|r| r.1 <= lo);
    let last = regions.partition_point(|r| r.0 < hi);
    let mut cand: Vec<usize> = (first..last.max(first)).collect();
    match selection {
        Selection::Distance => cand.sort_by_key(|&i| (distance(regions[i], tss), regions[i].0)),
        Selection::Accessibility => cand.sort_by(|&a, &b| {
            accessibility[b]
                .total_cmp(&accessibility[a])
                .then(distance(regions[a], tss).cmp(&distance(regions[b], tss)))
                .then(regions[a].0.cmp(&regions[b].0))
        }),
    }
    cand.truncate(n);
    cand.sort_unstable();
    let tss_index = cand
        .iter()
        .position(|&i| regions[i].0 <= tss && tss < regions[i].1);
    let tss_slot =
        tss_index.unwrap_or_else(|| cand.iter().filter(|&&i| regions[i].1 <= tss).count());
    Window {
        regions: cand,
        tss_index,
        tss_slot,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const R: [(u64, u64); 5] = [(0, 10), (100, 110), (200, 210), (300, 310), (5000, 5010)];

    #[test]
    fn closest_regions_in_genomic_order_with_tss_index() {
        let w = select(&R, 205, 1000, 3, Selection::Distance, &[0.0; 5]);
        assert_eq!(w.regions, vec![1, 2, 3]);
        assert_eq!((w.tss_index, w.tss_slot), (Some(1), 1));
        // Between regions: the slot of the first region after the TSS.
        let w = select(&R, 150, 1000, 3, Selection::Distance, &[0.0; 5]);
        assert_eq!(
            (w.regions.clone(), w.tss_index, w.tss_slot),
            (vec![0, 1, 2], None, 2)
        );
    }

    #[test]
    fn a_window_wider_than_the_genome_takes_every_region_without_overflow() {
        let w = select(&R, 205, u64::MAX, 5, Selection::Distance, &[0.0; 5]);
        assert_eq!(w.regions, vec![0, 1, 2, 3, 4]);
        assert_eq!(w.tss_index, Some(2));
    }

    #[test]
    fn ties_go_to_the_earlier_region() {
        // TSS 155: region 1 ends at 109 (distance 46), region 2 starts at 200 (distance 45).
        let w = select(&R, 155, 1000, 1, Selection::Distance, &[0.0; 5]);
        assert_eq!(w.regions, vec![2]);
        let w = select(&R, 154, 1000, 1, Selection::Distance, &[0.0; 5]);
        assert_eq!(w.regions, vec![1]);
        // A true tie: TSS 115 is 6 bp from both (100,110) and (121,130): the earlier one wins.
        let rr = [(100, 110), (121, 130)];
        assert_eq!((distance(rr[0], 115), distance(rr[1], 115)), (6, 6));
        assert_eq!(
            select(&rr, 115, 100, 1, Selection::Distance, &[0.0; 2]).regions,
            vec![0]
        );
    }

    #[test]
    fn window_bounds_and_empty_windows() {
        let w = select(&R, 5005, 100, 10, Selection::Distance, &[0.0; 5]);
        assert_eq!((w.regions.clone(), w.tss_index), (vec![4], Some(0)));
        let w = select(&R, 2500, 100, 10, Selection::Distance, &[0.0; 5]);
        assert!(w.regions.is_empty() && w.tss_index.is_none() && w.tss_slot == 0);
    }

    #[test]
    fn accessibility_selection() {
        let acc = [5.0, 1.0, 0.0, 9.0, 0.0];
        let w = select(&R, 205, 1000, 2, Selection::Accessibility, &acc);
        assert_eq!(w.regions, vec![0, 3]);
        assert_eq!(w.tss_index, None);
    }
}
