//! A dataset with no records is refused before anything is written: an empty predictions table
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
