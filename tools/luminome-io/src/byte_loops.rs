//! The token writer's per-element loops, compiled for AVX2 and AVX-512 beside the baseline
//! (x86-64's SSE2) and chosen at run time: a chromosome's ids pass through them once per base,
//! and at SSE2 width they were several percent of the tokenizer's CPU time. Integer work only,
//! so every clone gives the same bytes.

// multiversion's dispatcher calls a clone only after detecting its features at run time; the
// unsafe it generates is that call.
#![allow(unsafe_code)]

/// Appends `values` narrowed to bytes (the ids of a vocabulary of at most 256 tokens).
pub(crate) fn extend_narrowed_u8(values: &[u32], out: &mut Vec<u8>) {
    let start = out.len();
    out.resize(start + values.len(), 0);
    narrow_u8(values, &mut out[start..]);
}

/// Appends 1 for each id that is not `pad`, 0 for each that is: an attention mask.
pub(crate) fn extend_not_pad_mask(ids: &[u32], pad: u32, out: &mut Vec<u8>) {
    let start = out.len();
    out.resize(start + ids.len(), 0);
    not_pad_mask(ids, pad, &mut out[start..]);
}

#[multiversion::multiversion(targets(
    "x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl+avx2+fma",
    "x86_64+avx2+fma"
))]
fn narrow_u8(values: &[u32], out: &mut [u8]) {
    for (o, &v) in out.iter_mut().zip(values) {
        *o = v as u8;
    }
}

#[multiversion::multiversion(targets(
    "x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl+avx2+fma",
    "x86_64+avx2+fma"
))]
fn not_pad_mask(ids: &[u32], pad: u32, out: &mut [u8]) {
    for (o, &id) in out.iter_mut().zip(ids) {
        *o = u8::from(id != pad);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrowing_and_masking_match_the_plain_loops() {
        let values: Vec<u32> = (0..1000u32).map(|i| (i * 37) % 300).collect();
        let mut narrowed = vec![9u8];
        extend_narrowed_u8(&values, &mut narrowed);
        let want: Vec<u8> = std::iter::once(9)
            .chain(values.iter().map(|&v| v as u8))
            .collect();
        assert_eq!(narrowed, want);
        let mut mask = Vec::new();
        extend_not_pad_mask(&values, 0, &mut mask);
        assert_eq!(
            mask,
            values.iter().map(|&v| u8::from(v != 0)).collect::<Vec<_>>()
        );
    }
}
