//! Seeded dropout.

use candle_core::{Result, Tensor};

/// Dropout whose masks come from a seeded RNG, so a seed fixes every mask (candle's own dropout
/// draws from an unseedable generator).
pub struct DropoutRng {
    rng: std::cell::RefCell<rand_chacha::ChaCha8Rng>,
    /// Scratch for one mask's random words, kept across calls.
    words: std::cell::RefCell<Vec<u32>>,
}

impl DropoutRng {
    pub fn new(seed: u64) -> Self {
        use rand::SeedableRng;
        Self {
            rng: std::cell::RefCell::new(rand_chacha::ChaCha8Rng::seed_from_u64(seed)),
            words: std::cell::RefCell::new(Vec::new()),
        }
    }

    /// Zeroes each element with probability `p` and scales the rest by 1 / (1 − p).
    pub fn dropout(&self, x: &Tensor, p: f64) -> Result<Tensor> {
        if p <= 0.0 {
            return Ok(x.clone());
        }
        use rand::Rng;
        let n = x.elem_count();
        let scale = (1.0 / (1.0 - p)) as f32;
        let threshold = (p * u32::MAX as f64) as u32;
        // The random words in one bulk fill (the same words, in the same order, as one draw per
        // element: the generator hands out its block buffer word by word either way), then the
        // mask in a loop the compiler vectorises.
        let mut words = self.words.borrow_mut();
        words.clear();
        words.resize(n, 0);
        self.rng.borrow_mut().fill(&mut words[..]);
        let keep: Vec<f32> = words
            .iter()
            .map(|&r| if r >= threshold { scale } else { 0.0 })
            .collect();
        let mask = Tensor::from_vec(keep, x.shape(), x.device())?.to_dtype(x.dtype())?;
        x.mul(&mask)
    }
}

/// Applies dropout when training (an RNG is given), passes through otherwise.
pub fn maybe_dropout(x: &Tensor, p: f64, rng: Option<&DropoutRng>) -> Result<Tensor> {
    match rng {
        Some(r) => r.dropout(x, p),
        None => Ok(x.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{DType, Device};

    #[test]
    fn bulk_masks_are_the_masks_of_one_draw_per_element() {
        // The masks every earlier checkpoint was trained with: element i kept when the i-th
        // u32 drawn from ChaCha8(seed) is at least p × u32::MAX. Two calls, to cover the
        // generator's state carrying over (and a length that is not a multiple of its block).
        use rand::{Rng, SeedableRng};
        let p = 0.1;
        let threshold = (p * u32::MAX as f64) as u32;
        let mut reference = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let d = DropoutRng::new(11);
        for n in [1000usize, 77] {
            let x = Tensor::ones(n, DType::F32, &Device::Cpu).unwrap();
            let got: Vec<f32> = d.dropout(&x, p).unwrap().to_vec1().unwrap();
            for (i, g) in got.iter().enumerate() {
                let kept = reference.random::<u32>() >= threshold;
                assert_eq!(*g > 0.0, kept, "n {n}, element {i}");
            }
        }
    }

    #[test]
    fn seeded_dropout_is_reproducible_and_scales() {
        let x = Tensor::ones((64, 64), DType::F32, &Device::Cpu).unwrap();
        let a: Vec<f32> = DropoutRng::new(5)
            .dropout(&x, 0.25)
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1()
            .unwrap();
        let b: Vec<f32> = DropoutRng::new(5)
            .dropout(&x, 0.25)
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1()
            .unwrap();
        assert_eq!(a, b);
        let kept = a.iter().filter(|&&v| v > 0.0).count() as f64 / a.len() as f64;
        assert!((kept - 0.75).abs() < 0.03, "{kept}");
        assert!(a.iter().all(|&v| v == 0.0 || (v - 1.0 / 0.75).abs() < 1e-6));
    }
}
