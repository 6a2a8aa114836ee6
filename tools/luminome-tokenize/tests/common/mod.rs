//! Helpers shared by this crate's integration tests.
#![allow(dead_code, unused_imports)]

pub use std::io::Write;
pub use std::path::{Path, PathBuf};
pub use std::process::Command;

pub use luminome_io::token_dataset::{read_index, TokenDataset};

pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_luminome-tokenize"))
}

pub fn test_data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../test-data")
        .join(rel)
}

pub fn run_ok(args: &[&str]) -> String {
    let out = bin().args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "failed: {args:?}\n{stderr}");
    stderr
}

/// Runs and expects a refusal: non-zero exit, every `expect` text in the message, and nothing
/// at all left in the output folder.
pub fn assert_refused(args: &[&str], out_dir: &Path, expect: &[&str]) -> String {
    let out = bin().args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "should have failed: {args:?}");
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    for e in expect {
        assert!(stderr.contains(e), "message lacks {e:?}: {stderr}");
    }
    assert!(!stderr.contains("panicked"), "{stderr}");
    if out_dir.exists() {
        let left: Vec<_> = std::fs::read_dir(out_dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert!(left.is_empty(), "files left behind: {left:?}");
    }
    stderr
}

/// Decodes a row's ids back to bases with the dataset's own vocabulary (specials and padding
/// dropped).
pub fn decode(ds: &TokenDataset, row: usize) -> String {
    let b = ds.batch(&[row]).unwrap();
    let vocab = &ds.tokenizer().vocab;
    b.input_ids
        .iter()
        .filter(|&&id| !vocab[id as usize].starts_with('['))
        .map(|&id| vocab[id as usize].as_str())
        .collect()
}

pub fn read_fasta(path: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut out: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        if let Some(h) = line.strip_prefix('>') {
            out.push((
                h.split_whitespace().next().unwrap().to_string(),
                String::new(),
            ));
        } else {
            out.last_mut().unwrap().1.push_str(line.trim());
        }
    }
    out
}

pub fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::File::create(&p).unwrap().write_all(bytes).unwrap();
    p
}

/// (name, sequence, ids) rows of an `expected_ids.tsv` written by a Python tokenizer (the
/// published-tokenizer fixtures of the engine).
pub fn expected_ids(path: &Path) -> Vec<(String, String, Vec<u32>)> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            let ids = f[2].split(',').map(|x| x.parse().unwrap()).collect();
            (f[0].to_string(), f[1].to_string(), ids)
        })
        .collect()
}

/// Each row's ids of a dataset, up to its padding.
pub fn unpadded_rows(out: &Path) -> Vec<Vec<u32>> {
    let ds = TokenDataset::open(out).unwrap();
    let b = ds.batch(&(0..ds.len()).collect::<Vec<_>>()).unwrap();
    (0..b.batch)
        .map(|r| {
            let s = r * b.max_length..(r + 1) * b.max_length;
            b.input_ids[s.clone()]
                .iter()
                .zip(&b.attention_mask[s])
                .filter(|(_, &m)| m == 1)
                .map(|(&id, _)| id)
                .collect()
        })
        .collect()
}
