//! Helpers shared by this crate's integration tests.
#![allow(dead_code, unused_imports)]

pub use std::collections::HashMap;
pub use std::path::{Path, PathBuf};
pub use std::process::{Command, Output};

pub use luminome_io::tensorfile::TensorFile;

pub fn data(rel: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../test-data");
    root.join(rel).to_string_lossy().into_owned()
}

/// The standard test-data run: both cell types, Vierstra clusters, expression, N = 50, 200 kb window.
pub fn base_args() -> Vec<String> {
    [
        "--reference",
        &data("chr22_slice/chr22_slice.fa"),
        "--peaks",
        &data("chr22_slice/peaks.narrowPeak"),
        "--accessibility",
        &format!("K562={}", data("chr22_slice/acc.K562.bedgraph")),
        "--accessibility",
        &format!("GM12878={}", data("chr22_slice/acc.GM12878.bedgraph")),
        "--motifs",
        &data("motifs/vierstra_small.meme"),
        "--motif-clusters",
        &data("motifs/vierstra_small_clusters.csv"),
        "--genes",
        &data("chr22_slice/genes_tss.bed"),
        "--bed-tss",
        "center",
        "--expression",
        &format!("K562={}", data("expression/k562_tpm_slice.tsv")),
        "--expression",
        &format!("GM12878={}", data("expression/gm12878_rampage_slice.tsv")),
        "--window",
        "200000",
        "--n-regions",
        "50",
        "--threads",
        "2",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

pub fn run(args: &[String], out: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_luminome-regions"))
        .args(args)
        .arg("-o")
        .arg(out)
        .output()
        .expect("binary runs")
}

/// Replace the value following `flag` (first occurrence), or drop flag+value when `value` is None.
pub fn with(mut args: Vec<String>, flag: &str, value: Option<&str>) -> Vec<String> {
    let i = args.iter().position(|a| a == flag).expect("flag present");
    match value {
        Some(v) => args[i + 1] = v.to_string(),
        None => {
            args.drain(i..i + 2);
        }
    }
    args
}

pub fn read_tsv(path: &Path) -> Vec<HashMap<String, String>> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split('\t').collect();
    lines
        .map(|l| {
            header
                .iter()
                .map(|h| h.to_string())
                .zip(l.split('\t').map(str::to_string))
                .collect()
        })
        .collect()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A bad input: non-zero exit, the message names `file` and `needle`, and nothing was written.
pub fn assert_refused(args: Vec<String>, file: &str, needle: &str) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("d.safetensors");
    let o = run(&args, &out);
    let err = stderr(&o);
    assert!(!o.status.success(), "should fail: {err}");
    assert!(
        err.contains(file) && err.contains(needle),
        "message should name {file} and {needle:?}: {err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(
        left.is_empty(),
        "nothing may be left behind, found {left:?}"
    );
}

pub const CTCF_REGION: (u64, u64) = (165_240, 165_492); // contains CCACCAGGTGG (CTCF core), minus strand

pub fn temp_file(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}
