//! Base cleaning: every input byte becomes one of A, C, G, T, N (uppercase) plus a soft-mask
//! flag for lowercase (repeat-masked) bases.
//!
//! IUPAC ambiguity codes and other letters are either mapped to N (and counted) or refused,
//! by `--non-acgt`. Non-letters are always refused: they mean the input is not DNA.

use std::collections::BTreeMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum NonAcgtPolicy {
    /// Map IUPAC codes and other letters to N, and report how many were changed.
    N,
    /// Refuse the input at the first letter that is not A, C, G, T or N.
    Error,
}

/// Counts of input letters that were changed to N.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChangeCounts(pub BTreeMap<u8, u64>);

impl ChangeCounts {
    pub fn total(&self) -> u64 {
        self.0.values().sum()
    }

    pub fn merge(&mut self, other: &ChangeCounts) {
        for (k, v) in &other.0 {
            *self.0.entry(*k).or_default() += v;
        }
    }

    /// `R=3 Y=1` style summary.
    pub fn summary(&self) -> String {
        self.0
            .iter()
            .map(|(k, v)| format!("{}={v}", *k as char))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// A base that cannot be tokenized: its 0-based position in the sequence and the byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadBase {
    pub position: usize,
    pub byte: u8,
}

impl BadBase {
    pub fn describe(&self) -> String {
        let shown = if self.byte.is_ascii_graphic() {
            format!("'{}'", self.byte as char)
        } else {
            format!("byte 0x{:02x}", self.byte)
        };
        format!(
            "position {}: {shown} is not a nucleotide (A, C, G, T, N{})",
            self.position + 1,
            if self.byte.is_ascii_alphabetic() {
                "; use --non-acgt n to map IUPAC codes and other letters to N"
            } else {
                ""
            }
        )
    }
}

/// What a byte is: 0 = refuse, otherwise the uppercase base, with bit 7 set for lowercase input
/// and `CHANGED` set when the letter was mapped to N.
const CHANGED: u16 = 0x100;

const fn classify(b: u8) -> u16 {
    match b {
        b'A' | b'C' | b'G' | b'T' | b'N' => b as u16,
        b'a' | b'c' | b'g' | b't' | b'n' => (b.to_ascii_uppercase() as u16) | 0x80,
        b'A'..=b'Z' => CHANGED | b'N' as u16,
        b'a'..=b'z' => CHANGED | 0x80 | b'N' as u16,
        _ => 0,
    }
}

/// [`classify`] for every byte, so the hot loop is a table lookup.
static CLASS: [u16; 256] = {
    let mut t = [0u16; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = classify(i as u8);
        i += 1;
    }
    t
};

#[inline(always)]
fn is_acgtn_either_case(b: u8) -> bool {
    let u = b & !0x20;
    (u == b'A') | (u == b'C') | (u == b'G') | (u == b'T') | (u == b'N')
}

/// The fastest path's loops, with clones for AVX2 and AVX-512 beside the baseline (SSE2),
/// chosen at run time; integer work, so every clone gives the same bytes.
// multiversion's dispatcher calls a clone only after detecting its features at run time; the
// unsafe it generates is that call.
#[allow(unsafe_code)]
mod vectorised {
    #[multiversion::multiversion(targets(
        "x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl+avx2+fma",
        "x86_64+avx2+fma"
    ))]
    pub(super) fn all_acgtn_either_case(raw: &[u8]) -> bool {
        raw.iter()
            .fold(true, |ok, &b| ok & super::is_acgtn_either_case(b))
    }

    #[multiversion::multiversion(targets(
        "x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl+avx2+fma",
        "x86_64+avx2+fma"
    ))]
    pub(super) fn uppercase_and_flag(raw: &[u8], bases: &mut [u8], soft: &mut [u8]) {
        for ((u, s), &b) in bases.iter_mut().zip(soft.iter_mut()).zip(raw) {
            *u = b & !0x20;
            *s = (b >> 5) & 1;
        }
    }
}

/// Cleans `raw`, appending to `bases` (uppercase ACGTN) and `soft` (1 = lowercase input).
/// A refused byte's position is counted from the start of `raw`.
pub fn clean(
    raw: &[u8],
    policy: NonAcgtPolicy,
    bases: &mut Vec<u8>,
    soft: &mut Vec<u8>,
    changes: &mut ChangeCounts,
) -> Result<(), BadBase> {
    // Fastest path, for input of only ACGTN in either case (nearly all of a genome): clearing
    // bit 5 uppercases a letter, bit 5 itself is the soft-mask flag, and a byte is one of
    // ACGTNacgtn exactly when its bit-5-cleared value is one of ACGTN. Plain arithmetic, so the
    // compiler vectorises the three loops (the table lookups below do not).
    if vectorised::all_acgtn_either_case(raw) {
        let (b0, s0) = (bases.len(), soft.len());
        bases.resize(b0 + raw.len(), 0);
        soft.resize(s0 + raw.len(), 0);
        vectorised::uppercase_and_flag(raw, &mut bases[b0..], &mut soft[s0..]);
        return Ok(());
    }
    // Fast path: one pass that also notes whether anything needs a closer look.
    let mut unusual = 0u16;
    let mut refused = false;
    bases.extend(raw.iter().map(|&b| {
        let c = CLASS[b as usize];
        unusual |= c;
        refused |= c == 0;
        (c & 0x7f) as u8
    }));
    soft.extend(raw.iter().map(|&b| ((CLASS[b as usize] >> 7) & 1) as u8));
    if !refused && unusual & CHANGED == 0 {
        return Ok(());
    }
    for (i, &b) in raw.iter().enumerate() {
        let c = CLASS[b as usize];
        if c == 0 || (c & CHANGED != 0 && policy == NonAcgtPolicy::Error) {
            let keep = bases.len() - raw.len();
            bases.truncate(keep);
            soft.truncate(keep);
            return Err(BadBase {
                position: i,
                byte: b,
            });
        }
        if c & CHANGED != 0 {
            *changes.0.entry(b.to_ascii_uppercase()).or_default() += 1;
        }
    }
    Ok(())
}

/// Reverse complement of cleaned bases (ACGTN), with the soft mask reversed alongside.
pub fn reverse_complement(
    bases: &[u8],
    soft: &[u8],
    out_bases: &mut Vec<u8>,
    out_soft: &mut Vec<u8>,
) {
    out_bases.clear();
    out_soft.clear();
    out_bases.extend(bases.iter().rev().map(|&b| match b {
        b'A' => b'T',
        b'C' => b'G',
        b'G' => b'C',
        b'T' => b'A',
        _ => b'N',
    }));
    out_soft.extend(soft.iter().rev());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lowercase_is_soft_masked_and_iupac_becomes_n() {
        let (mut b, mut s, mut c) = (Vec::new(), Vec::new(), ChangeCounts::default());
        clean(b"ACgtRyN", NonAcgtPolicy::N, &mut b, &mut s, &mut c).unwrap();
        assert_eq!(b, b"ACGTNNN");
        assert_eq!(s, vec![0, 0, 1, 1, 0, 1, 0]);
        assert_eq!(c.summary(), "R=1 Y=1");
    }

    #[test]
    fn strict_policy_refuses_iupac_and_digits_are_always_refused() {
        let (mut b, mut s, mut c) = (Vec::new(), Vec::new(), ChangeCounts::default());
        let e = clean(b"ACGR", NonAcgtPolicy::Error, &mut b, &mut s, &mut c).unwrap_err();
        assert_eq!(
            e,
            BadBase {
                position: 3,
                byte: b'R'
            }
        );
        let e = clean(b"AC1G", NonAcgtPolicy::N, &mut b, &mut s, &mut c).unwrap_err();
        assert_eq!(e.position, 2);
        assert!(e.describe().contains("position 3"));
    }

    #[test]
    fn the_acgtn_fast_path_agrees_with_the_table_for_every_byte() {
        for b in 0..=255u8 {
            let want = matches!(CLASS[b as usize] & !0x80, 0x41 | 0x43 | 0x47 | 0x54 | 0x4e)
                && CLASS[b as usize] & CHANGED == 0;
            assert_eq!(is_acgtn_either_case(b), want, "byte {b:#04x}");
            if want {
                assert_eq!(b & !0x20, (CLASS[b as usize] & 0x7f) as u8);
                assert_eq!((b >> 5) & 1, ((CLASS[b as usize] >> 7) & 1) as u8);
            }
        }
    }

    #[test]
    fn reverse_complement_reverses_the_mask() {
        let (mut b, mut s) = (Vec::new(), Vec::new());
        reverse_complement(b"AACGN", &[1, 0, 0, 0, 1], &mut b, &mut s);
        assert_eq!(b, b"NCGTT");
        assert_eq!(s, vec![1, 0, 0, 0, 1]);
    }
}
