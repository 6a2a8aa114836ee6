//! `luminome-predict` on expression models: one row per sample, the held-out subset exactly,
//! metrics overall and per cell type against a hand computation, and the models and datasets
//! that do not fit.

mod common;
use common::predict;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use candle_core::Device;
use luminome_engine::checkpoint::save_checkpoint;
use luminome_engine::models::expression::ExpressionHead;
use luminome_engine::testing::{
    write_expression_checkpoint, write_region_dataset, write_region_dataset_named,
};
use luminome_engine::ModelConfig;
use luminome_io::region_dataset::read_samples;
use luminome_metrics::RegressionMetrics;

fn tsv(path: &Path) -> Vec<HashMap<String, String>> {
    luminome_engine::testing::tsv_rows(path)
}

fn setup(dir: &Path, head: ExpressionHead) -> (PathBuf, PathBuf) {
    write_expression_checkpoint(dir, head).unwrap()
}

#[test]
fn the_test_subset_is_exactly_the_held_out_genes_with_metrics_per_cell_type() {
    let dir = tempfile::tempdir().unwrap();
    let (ckpt, ds) = setup(dir.path(), ExpressionHead::AttentionPool { mlp_hidden: 8 });
    let out = dir.path().join("p.tsv");
    let metrics = dir.path().join("m.tsv");
    let o = predict(&[
        "--checkpoint",
        ckpt.to_str().unwrap(),
        "--dataset",
        ds.to_str().unwrap(),
        "--subset",
        "test",
        "-o",
        out.to_str().unwrap(),
        "--metrics",
        metrics.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = tsv(&out);
    let samples = read_samples(&dir.path().join("genes.samples.tsv")).unwrap();
    // The last of 4 blocks of the 60 distinct TSSs: 15 genes, both cell types.
    assert_eq!(rows.len(), 15);
    let mut tss: Vec<u64> = samples.iter().map(|s| s.tss).collect();
    tss.sort_unstable();
    let cut = tss[45];
    for r in &rows {
        let s = &samples[r["record"].parse::<usize>().unwrap()];
        assert!(s.tss >= cut, "{r:?} is not in the last block");
        assert_eq!(
            (r["split"].as_str(), &r["name"], &r["cell_type"]),
            ("test", &s.gene, &s.cell_type)
        );
    }
    // Metrics recomputed from the rows.
    let m: HashMap<String, String> = tsv(&metrics)
        .into_iter()
        .map(|r| (r["metric"].clone(), r["value"].clone()))
        .collect();
    for cell in ["", "K562.", "GM12878."] {
        let chosen: Vec<&HashMap<String, String>> = rows
            .iter()
            .filter(|r| cell.is_empty() || r["cell_type"] == cell.trim_end_matches('.'))
            .collect();
        let y: Vec<f64> = chosen
            .iter()
            .map(|r| r["observed"].parse().unwrap())
            .collect();
        let p: Vec<f64> = chosen
            .iter()
            .map(|r| r["predicted"].parse().unwrap())
            .collect();
        let want = RegressionMetrics::compute(&y, &p);
        assert_eq!(m[&format!("{cell}n")], y.len().to_string());
        let got: f64 = m[&format!("{cell}pearson")].parse().unwrap();
        assert!(
            (got - want.pearson.unwrap()).abs() < 1e-4,
            "{cell}pearson {got} vs {:?}",
            want.pearson
        );
    }
    // All samples: every row, in dataset order, with its split.
    let o = predict(&[
        "--checkpoint",
        ckpt.to_str().unwrap(),
        "--dataset",
        ds.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    let rows = tsv(&out);
    assert_eq!(rows.len(), 60);
    assert_eq!(rows.iter().filter(|r| r["split"] == "dev").count(), 15);
}

#[test]
fn models_and_datasets_that_do_not_fit_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (ckpt, ds) = setup(dir.path(), ExpressionHead::TssRegion);
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let o_path = out.join("p.tsv");
    let o = o_path.to_str().unwrap();
    let refused = |args: &[&str], needles: &[&str]| {
        let r = predict(args);
        let e = String::from_utf8_lossy(&r.stderr).into_owned();
        assert_eq!(r.status.code(), Some(1), "{e}");
        for n in needles {
            assert!(e.contains(n), "{n:?} not in {e}");
        }
        assert!(std::fs::read_dir(&out).unwrap().next().is_none());
    };
    // Other feature names.
    let other = dir.path().join("other.safetensors");
    write_region_dataset_named(
        &other,
        10,
        8,
        &["K562"],
        1,
        Some(&|_, y| y),
        ["CTCF", "GATA", "SP", "accessibility"],
    )
    .unwrap();
    refused(
        &[
            "--checkpoint",
            ckpt.to_str().unwrap(),
            "--dataset",
            other.to_str().unwrap(),
            "-o",
            o,
        ],
        &[
            "other.safetensors: its 4 features differ",
            "first difference at feature 1: Some(\"CTCF\") vs Some(\"motif0\")",
        ],
    );
    // An expression model on a token dataset; a classifier on a region dataset.
    let tok = dir.path().join("tok.safetensors");
    common::write_dataset(&tok, &[common::rec("ACGT", Some(1))], 8);
    refused(
        &[
            "--checkpoint",
            ckpt.to_str().unwrap(),
            "--dataset",
            tok.to_str().unwrap(),
            "-o",
            o,
        ],
        &[
            "tok.safetensors: a token dataset",
            "expression model",
            "region features",
        ],
    );
    refused(
        &[
            "--checkpoint",
            common::fixture_checkpoint("gated").to_str().unwrap(),
            "--dataset",
            ds.to_str().unwrap(),
            "-o",
            o,
        ],
        &["genes.safetensors: a region dataset", "sequence classifier"],
    );
    // --subset on a model without a split, and on a classifier.
    let plain = dir.path().join("plain");
    std::fs::create_dir(&plain).unwrap();
    let unsplit = dir.path().join("unsplit.safetensors");
    write_region_dataset(&unsplit, 10, 8, &["K562"], 1, Some(&|_, y| y)).unwrap();
    let mut meta = luminome_engine::checkpoint::read_checkpoint_meta(&ckpt).unwrap();
    if let ModelConfig::Expression(c) = &mut meta.model {
        c.holdout = None;
    }
    let ck = luminome_engine::Checkpoint::load(&ckpt, &Device::Cpu).unwrap();
    let no_split = plain.join("e.safetensors");
    save_checkpoint(&no_split, &meta, &ck.varmap).unwrap();
    refused(
        &[
            "--checkpoint",
            no_split.to_str().unwrap(),
            "--dataset",
            unsplit.to_str().unwrap(),
            "--subset",
            "test",
            "-o",
            o,
        ],
        &["--subset test needs a model trained with --holdout"],
    );
}
