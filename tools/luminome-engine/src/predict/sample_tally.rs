//! A shard's tally for the expression predictors (Luminome's expression family and GET): what
//! their metrics are computed from, per predicted sample, so a gather computes the same metrics.

use super::Tally;

/// A shard's tally of an expression predictor: per predicted sample, why it has no prediction
/// (0: it has one; otherwise the predictor's own reason code), the prediction and the observed
/// value (NaN when none; f32 values, exact in f64) — all the metrics are computed from.
#[derive(Default)]
pub(crate) struct SampleTally(Option<Tally>);

/// A [`SampleTally`] row: reason, predicted, observed.
const SAMPLE_TALLY_WIDTH: usize = 3;

/// One replayed sample: its number, why it has no prediction (0: it has one), the prediction,
/// the observed value.
pub(crate) type TalliedSample = (usize, u8, Option<f32>, f32);

impl SampleTally {
    pub fn start(&mut self) {
        self.0 = Some(Tally {
            width: SAMPLE_TALLY_WIDTH,
            ..Tally::default()
        });
    }

    /// Sample number `record` (as the predictor numbers them), when a tally is kept.
    pub fn push(&mut self, record: usize, reason: u8, p: Option<f32>, observed: Option<f32>) {
        if let Some(t) = &mut self.0 {
            t.records.push(record as u64);
            t.values.extend([
                f64::from(reason),
                f64::from(p.unwrap_or(f32::NAN)),
                f64::from(observed.unwrap_or(f32::NAN)),
            ]);
        }
    }

    pub fn get(&self) -> Tally {
        self.0.clone().unwrap_or_default()
    }

    /// A part's rows as (sample number, reason, prediction, observed), checked to be this
    /// tally's shape and every sample number below `n`.
    pub fn rows(tally: &Tally, n: usize) -> anyhow::Result<Vec<TalliedSample>> {
        let w = SAMPLE_TALLY_WIDTH;
        if tally.width != w || tally.values.len() != w * tally.records.len() {
            anyhow::bail!(
                "a shard's tally holds {} values per sample, not an expression predictor's {w}",
                tally.width
            );
        }
        tally
            .records
            .iter()
            .zip(tally.values.chunks_exact(w))
            .map(|(&i, v)| {
                let i = usize::try_from(i).ok().filter(|&i| i < n);
                let i =
                    i.ok_or_else(|| anyhow::anyhow!("a shard's tally names a sample beyond {n}"))?;
                let reason = v[0] as u8;
                Ok((i, reason, (reason == 0).then_some(v[1] as f32), v[2] as f32))
            })
            .collect()
    }
}
