//! Inputs refused before anything is written. A dataset with no records: an empty predictions table
//! and a metrics file of nothing would read as a finished run.

mod common;

use luminome_engine::models::expression::ExpressionHead;

#[test]
fn a_dataset_without_records_is_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let (ckpt, _) = luminome_engine::testing::write_expression_checkpoint(
        dir.path(),
        ExpressionHead::TssRegion,
    )
    .unwrap();
    let ds = dir.path().join("empty.safetensors");
    luminome_engine::testing::write_region_dataset(
        &ds,
        0,
        8,
        &["K562", "GM12878"],
        4,
        Some(&|_, y| y),
    )
    .unwrap();
    let (out, metrics) = (dir.path().join("p.tsv"), dir.path().join("m.tsv"));
    let o = common::predict(&[
        "--checkpoint",
        ckpt.to_str().unwrap(),
        "--dataset",
        ds.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--metrics",
        metrics.to_str().unwrap(),
    ]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(
        e.contains("empty.safetensors") && e.contains("no records"),
        "{e}"
    );
    assert!(!out.exists() && !metrics.exists());
}

/// A Luminome run folder given as `--checkpoint` (its best.safetensors was meant) is named as
/// such: a folder reads as a published model, and the message spoke of paired datasets.
#[test]
fn a_run_folder_as_checkpoint_is_named_with_its_checkpoint_file() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    std::fs::create_dir(&run).unwrap();
    luminome_engine::testing::write_transformer_classifier_checkpoint(
        &run.join("best.safetensors"),
        1,
    )
    .unwrap();
    let ds = dir.path().join("tokens.safetensors");
    std::fs::write(&ds, b"not read").unwrap();
    let out = dir.path().join("p.tsv");
    let o = common::predict(&[
        "--checkpoint",
        run.to_str().unwrap(),
        "--dataset",
        ds.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(
        e.contains("a Luminome run folder") && e.contains("best.safetensors"),
        "{e}"
    );
    assert!(!e.contains("paired dataset"), "{e}");
    assert!(!out.exists());
}
