//! Micro-batches for in-batch negatives. Every other passage of a micro-batch is a negative for
//! a query, so a batch must not hold two rows with the same passage (its copy would be a "negative"
//! identical to the positive) or the same query (the other row's passage is also a positive).
//! [`arrange`] orders an epoch so that every micro-batch is free of both; where that cannot be
//! done (one passage in more rows than the scan window holds batches), [`exclusions`] removes the
//! offending logits from the loss instead.

use std::collections::{HashSet, VecDeque};

use candle_core::{Device, Result, Tensor};

/// How far past the batch size the arrangement looks for a row that fits (bounds its cost on
/// data where one passage or query dominates).
const SCAN_BATCHES: usize = 64;

/// Reorders `order` (an epoch's shuffled rows) so that each consecutive chunk of `batch` rows
/// has no two rows with the same query group or passage group: greedily, in order, each chunk
/// takes the next rows that fit; rows that do not fit wait for a later chunk, keeping their
/// order. A chunk that cannot be filled from the next `SCAN_BATCHES × batch` waiting rows takes
/// them as they come (left to [`exclusions`]). Deterministic: the same input gives the same
/// order.
pub fn arrange(order: Vec<usize>, batch: usize, query: &[u32], passage: &[u32]) -> Vec<usize> {
    let batch = batch.max(1);
    let mut pending: VecDeque<usize> = order.into();
    let mut out = Vec::with_capacity(pending.len());
    let (mut used_q, mut used_p) = (HashSet::new(), HashSet::new());
    while !pending.is_empty() {
        used_q.clear();
        used_p.clear();
        let window = pending.len().min(batch.saturating_mul(SCAN_BATCHES));
        let mut waiting = Vec::new();
        let mut taken = 0;
        for r in pending.drain(..window) {
            if taken < batch && !used_q.contains(&query[r]) && !used_p.contains(&passage[r]) {
                used_q.insert(query[r]);
                used_p.insert(passage[r]);
                out.push(r);
                taken += 1;
            } else {
                waiting.push(r);
            }
        }
        // Could not fill the chunk without a repeat: take the next waiting rows as they are.
        let short = (batch - taken).min(waiting.len());
        let (fill, rest) = if taken < batch {
            let rest = waiting.split_off(short);
            (waiting, rest)
        } else {
            (Vec::new(), waiting)
        };
        out.extend(fill);
        for r in rest.into_iter().rev() {
            pending.push_front(r);
        }
    }
    out
}

/// `[B, B]` with 1.0 where j ≠ i shares row i's query or passage group (not a negative for
/// query i); `None` when no pair of rows does.
pub fn exclusions(
    records: &[usize],
    query: &[u32],
    passage: &[u32],
    device: &Device,
) -> Result<Option<Tensor>> {
    let b = records.len();
    let mut m = vec![0f32; b * b];
    let mut any = false;
    for (i, &ri) in records.iter().enumerate() {
        for (j, &rj) in records.iter().enumerate() {
            if i != j && (query[ri] == query[rj] || passage[ri] == passage[rj]) {
                m[i * b + j] = 1.0;
                any = true;
            }
        }
    }
    if !any {
        return Ok(None);
    }
    Tensor::from_vec(m, (b, b), device).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunks_are_clean(order: &[usize], batch: usize, q: &[u32], p: &[u32]) -> bool {
        order.chunks(batch).all(|c| {
            let qs: HashSet<u32> = c.iter().map(|&r| q[r]).collect();
            let ps: HashSet<u32> = c.iter().map(|&r| p[r]).collect();
            qs.len() == c.len() && ps.len() == c.len()
        })
    }

    #[test]
    fn duplicates_are_kept_out_of_the_same_batch() {
        // 12 rows; passage 0 appears 3 times, query 5 twice.
        let p = [0, 1, 0, 2, 3, 0, 4, 5, 6, 7, 8, 9];
        let q = [0, 1, 2, 3, 4, 5, 5, 6, 7, 8, 9, 10];
        let order: Vec<usize> = (0..12).collect();
        let arranged = arrange(order.clone(), 4, &q, &p);
        assert!(!chunks_are_clean(&order, 4, &q, &p));
        assert!(chunks_are_clean(&arranged, 4, &q, &p), "{arranged:?}");
        let mut sorted = arranged.clone();
        sorted.sort();
        assert_eq!(sorted, order, "every row exactly once");
        assert_eq!(arrange(order, 4, &q, &p), arranged, "deterministic");
    }

    #[test]
    fn an_impossible_batch_is_filled_and_its_repeats_excluded() {
        // Every row has the same passage: no clean batch of 2 exists.
        let (q, p) = ([0, 1, 2, 3], [0, 0, 0, 0]);
        let arranged = arrange(vec![0, 1, 2, 3], 2, &q, &p);
        assert_eq!(arranged.len(), 4);
        let ex = exclusions(&arranged[..2], &q, &p, &Device::Cpu)
            .unwrap()
            .unwrap();
        assert_eq!(ex.to_vec2::<f32>().unwrap(), [[0., 1.], [1., 0.]]);
        assert!(exclusions(&[0, 1], &q, &[0, 1, 2, 3], &Device::Cpu)
            .unwrap()
            .is_none());
    }
}
