//! Which rows train, validate and test a tabular run: stratified k folds and a stratified
//! hold-out, both seeded.

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// `rows` split by class.
pub(super) fn by_class(rows: &[usize], classes: &[u32], n_classes: usize) -> Vec<Vec<usize>> {
    let mut out = vec![Vec::new(); n_classes];
    for &r in rows {
        out[classes[r] as usize].push(r);
    }
    out
}

/// Stratified folds: each class's rows shuffled (seeded) and dealt round-robin, so every fold
/// holds about 1/k of every class. Returns each fold's rows, ascending.
pub fn stratified_folds(classes: &[u32], n_classes: usize, k: usize, seed: u64) -> Vec<Vec<usize>> {
    let all: Vec<usize> = (0..classes.len()).collect();
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0xf01d);
    let mut folds = vec![Vec::new(); k];
    let mut next = 0;
    for mut rows in by_class(&all, classes, n_classes) {
        rows.shuffle(&mut rng);
        for r in rows {
            folds[next % k].push(r);
            next += 1;
        }
    }
    for f in &mut folds {
        f.sort_unstable();
    }
    folds
}

/// Stratified hold-out: `fraction` of each class's rows (at least one when the class has two or
/// more) go to the second part. Both parts ascending.
pub(super) fn stratified_split(
    rows: &[usize],
    classes: &[u32],
    n_classes: usize,
    fraction: f64,
    seed: u64,
) -> (Vec<usize>, Vec<usize>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5a11);
    let (mut keep, mut held) = (Vec::new(), Vec::new());
    for mut r in by_class(rows, classes, n_classes) {
        r.shuffle(&mut rng);
        let n_held = if r.len() < 2 {
            0
        } else {
            ((r.len() as f64 * fraction).round() as usize).clamp(1, r.len() - 1)
        };
        held.extend_from_slice(&r[..n_held]);
        keep.extend_from_slice(&r[n_held..]);
    }
    keep.sort_unstable();
    held.sort_unstable();
    (keep, held)
}
