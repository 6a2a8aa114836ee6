//! Helpers shared by this crate's integration tests.
#![allow(dead_code, unused_imports)]

pub use std::path::{Path, PathBuf};
pub use std::process::{Command, Output};

pub use luminome_engine::testing::{encode, nucleotide_tokenizer, toy_motif_task, write_dataset};
pub use luminome_io::token_dataset::{
    IndexRow, TokenDatasetWriter, TokenDatasetWriterOptions, TokenRow,
};

pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_luminome-train"))
}

pub fn run(args: &[&str]) -> Output {
    bin().args(args).output().unwrap()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub struct Data {
    pub _dir: tempfile::TempDir,
    pub root: PathBuf,
}

impl Data {
    pub fn path(&self, name: &str) -> String {
        self.root.join(name).display().to_string()
    }
}

/// train/dev/test with labels, an unlabelled set, a set with a label 2, a set of longer rows.
pub fn data() -> Data {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let (s, l) = toy_motif_task(96, 20, 1);
    write_dataset(&root.join("train.safetensors"), &s, Some(&l), 24).unwrap();
    let (s, l) = toy_motif_task(32, 20, 2);
    write_dataset(&root.join("dev.safetensors"), &s, Some(&l), 24).unwrap();
    write_dataset(&root.join("unlabelled.safetensors"), &s, None, 24).unwrap();
    let mut l3 = l.clone();
    l3[5] = 2;
    write_dataset(&root.join("three.safetensors"), &s, Some(&l3), 24).unwrap();
    let (s, l) = toy_motif_task(16, 36, 3);
    write_dataset(&root.join("long.safetensors"), &s, Some(&l), 40).unwrap();
    Data { _dir: dir, root }
}

pub const TINY: &[&str] = &[
    "--d-model",
    "16",
    "--layers",
    "1",
    "--heads",
    "2",
    "--ffn",
    "32",
    "--batch-size",
    "16",
    "--steps",
    "6",
    "--eval-every",
    "3",
    "--warmup",
    "2",
    "--threads",
    "1",
    "--quiet",
];

pub fn with(base: &[&str], extra: &[&str]) -> Vec<String> {
    base.iter().chain(extra).map(|s| s.to_string()).collect()
}

pub fn run_s(args: &[String]) -> Output {
    bin().args(args).output().unwrap()
}

pub fn nothing_written(dir: &Path) {
    assert!(!dir.join("best.safetensors").exists() && !dir.join("last.safetensors").exists());
}

/// The rows of a run folder's metrics.tsv, by column name.
pub fn metrics(dir: &Path) -> Vec<std::collections::HashMap<String, String>> {
    luminome_engine::testing::tsv_rows(&dir.join("metrics.tsv"))
}

/// Runs `args`, expects exit 1 with every needle on stderr and no run files in `out`.
pub fn refused(args: &[&str], out: &Path, needles: &[&str]) {
    let o = run(args);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    for n in needles {
        assert!(e.contains(n), "{n:?} not in {e}");
    }
    assert!(!out.join("best.safetensors").exists() && !out.join("metrics.tsv").exists());
}
