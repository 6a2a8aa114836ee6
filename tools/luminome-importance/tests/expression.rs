//! `luminome-importance` on expression models: motifs ranked per sample, a region track,
//! pooling weights that sum to one, and pooling refused for a model that reads the TSS region.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use luminome_engine::models::expression::ExpressionHead;
use luminome_engine::testing::write_expression_checkpoint;

fn importance(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_luminome-importance"))
        .args(args)
        .output()
        .unwrap()
}

fn tsv(path: &Path) -> Vec<HashMap<String, String>> {
    luminome_engine::testing::tsv_rows(path)
}

fn setup(dir: &Path, head: ExpressionHead) -> (std::path::PathBuf, std::path::PathBuf) {
    write_expression_checkpoint(dir, head).unwrap()
}

#[test]
fn importance_names_regions_and_motifs_and_refuses_pooling_without_a_pooling_head() {
    let dir = tempfile::tempdir().unwrap();
    let (ckpt, ds) = setup(dir.path(), ExpressionHead::AttentionPool { mlp_hidden: 8 });
    let out = dir.path().join("sal.tsv");
    let bg = dir.path().join("sal.bedgraph");
    let o = importance(&[
        "--checkpoint",
        ckpt.to_str().unwrap(),
        "--dataset",
        ds.to_str().unwrap(),
        "--method",
        "saliency",
        "--top",
        "2",
        "--subset",
        "test",
        "-o",
        out.to_str().unwrap(),
        "--bedgraph",
        bg.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = tsv(&out);
    assert_eq!(rows.len(), 30, "two features for each of 15 test samples");
    for pair in rows.chunks(2) {
        assert_eq!(
            (pair[0]["rank"].as_str(), pair[1]["rank"].as_str()),
            ("1", "2")
        );
        let a: f64 = pair[0]["score"].parse().unwrap();
        let b: f64 = pair[1]["score"].parse().unwrap();
        assert!(a.abs() >= b.abs());
    }
    let track = std::fs::read_to_string(&bg).unwrap();
    assert!(
        track.starts_with("track type=bedGraph")
            && track.lines().nth(1).unwrap().starts_with("chrT\t")
    );
    // Pooling weights: one row per real region, summing to 1 per sample.
    let pool = dir.path().join("pool.tsv");
    let o = importance(&[
        "--checkpoint",
        ckpt.to_str().unwrap(),
        "--dataset",
        ds.to_str().unwrap(),
        "--method",
        "pooling",
        "-o",
        pool.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut sums: HashMap<String, f64> = HashMap::new();
    for r in tsv(&pool) {
        *sums.entry(r["sample"].clone()).or_default() += r["alpha"].parse::<f64>().unwrap();
    }
    assert_eq!(sums.len(), 60);
    assert!(sums.values().all(|s| (s - 1.0).abs() < 1e-4));
    // A TSS-region model has no pooling weights.
    let tss_dir = tempfile::tempdir().unwrap();
    let (tss_ckpt, tss_ds) = setup(tss_dir.path(), ExpressionHead::TssRegion);
    let o = importance(&[
        "--checkpoint",
        tss_ckpt.to_str().unwrap(),
        "--dataset",
        tss_ds.to_str().unwrap(),
        "--method",
        "pooling",
        "-o",
        pool.with_extension("x").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr)
        .contains("--method pooling needs an attention-pooling model"));
    assert!(!pool.with_extension("x").exists());
}

/// A regions table that is not the dataset's (here cut to its header) is refused naming it,
/// before any output: its rows are what the TSV and bedGraph name the regions by.
#[test]
fn a_regions_table_without_the_datasets_regions_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (ckpt, ds) = setup(dir.path(), ExpressionHead::AttentionPool { mlp_hidden: 8 });
    let table = ds.with_file_name("genes.regions.tsv");
    let text = std::fs::read_to_string(&table).unwrap();
    std::fs::write(&table, format!("{}\n", text.lines().next().unwrap())).unwrap();
    let out = dir.path().join("pool.tsv");
    let o = importance(&[
        "--checkpoint",
        ckpt.to_str().unwrap(),
        "--dataset",
        ds.to_str().unwrap(),
        "--method",
        "pooling",
        "-o",
        out.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(
        err.contains("genes.regions.tsv") && err.contains("do not belong together"),
        "{err}"
    );
    assert!(!out.exists());
}
