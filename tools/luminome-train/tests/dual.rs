//! `luminome-train dual`: a dual encoder learns to retrieve the genome window a fragment came
//! from; genetic attention trains too; the same seed gives the same bytes; bad settings refused.

mod common;

use common::*;
use luminome_engine::testing::{ecoli_retrieval_task, write_retrieval_pairs_k};

/// Train pairs (windows 0..48 of 64 bases, 4 fragments of 24 bases each, both strands) and dev
/// pairs (the next 24 windows, one fragment each), as overlapping 3-mers (the tokens under which
/// a fragment's tokens are a subset of its window's).
fn task() -> Data {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let (train, _) = ecoli_retrieval_task(0, 48, 64, 24, 4, true, 1);
    write_retrieval_pairs_k(&root.join("train.safetensors"), &train, 3).unwrap();
    let (dev, _) = ecoli_retrieval_task(48 * 64, 24, 64, 24, 1, false, 2);
    write_retrieval_pairs_k(&root.join("dev.safetensors"), &dev, 3).unwrap();
    Data { _dir: dir, root }
}

const SMALL: &[&str] = &[
    "--d-model",
    "32",
    "--layers",
    "1",
    "--heads",
    "2",
    "--ffn",
    "64",
    "--dropout",
    "0",
    "--batch-size",
    "16",
    "--lr",
    "2e-3",
    "--warmup",
    "10",
    "--eval-every",
    "40",
    "--threads",
    "1",
    "--quiet",
];

fn train(d: &Data, out: &str, extra: &[&str]) -> Output {
    let mut args = vec![
        "dual".to_string(),
        "--train".into(),
        d.path("train.safetensors"),
        "--dev".into(),
        d.path("dev.safetensors"),
        "-o".into(),
        d.path(out),
    ];
    args.extend(SMALL.iter().chain(extra).map(|s| s.to_string()));
    run_s(&args)
}

fn column(rows: &[std::collections::HashMap<String, String>], name: &str) -> Vec<f64> {
    rows.iter()
        .filter_map(|r| r.get(name).filter(|v| !v.is_empty()))
        .map(|v| v.parse().unwrap())
        .collect()
}

#[test]
fn a_dual_encoder_learns_to_find_the_window_of_a_fragment() {
    let d = task();
    let o = train(&d, "std", &["--steps", "160", "--shared-encoder"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rows = luminome_engine::testing::tsv_rows(&d.root.join("std/metrics.tsv"));
    let loss = column(&rows, "loss");
    let first: f64 = loss[..10].iter().sum::<f64>() / 10.0;
    let last: f64 = loss[loss.len() - 10..].iter().sum::<f64>() / 10.0;
    assert!(last < first - 0.3, "training loss {first} → {last}");
    // 24 dev passages: ranking at random gives MRR ≈ H(24)/24 ≈ 0.16.
    let mrr = column(&rows, "dev_mrr");
    assert!(*mrr.last().unwrap() > 0.5, "dev MRR by evaluation: {mrr:?}");
}

#[test]
fn genetic_attention_trains_and_the_same_seed_gives_the_same_bytes() {
    let d = task();
    // Two runs into the same folder name (the command line is recorded in the metadata).
    for out in ["gen_a", "gen_b"] {
        let o = train(
            &d,
            "gen",
            &["--steps", "40", "--attention", "genetic", "--seed", "3"],
        );
        assert!(o.status.success(), "{}", stderr(&o));
        std::fs::rename(d.root.join("gen"), d.root.join(out)).unwrap();
    }
    let a = std::fs::read(d.root.join("gen_a/best.safetensors")).unwrap();
    let b = std::fs::read(d.root.join("gen_b/best.safetensors")).unwrap();
    assert!(a == b, "same seed, different checkpoint bytes");
    let rows = luminome_engine::testing::tsv_rows(&d.root.join("gen_a/metrics.tsv"));
    assert!(column(&rows, "dev_mrr").iter().all(|v| v.is_finite()));
    let cfg = std::fs::read_to_string(d.root.join("gen_a/best.config.json")).unwrap();
    assert!(cfg.contains("\"attention\": \"genetic\""), "{cfg}");
    // Shared weights: one encoder's parameters.
    let o = train(&d, "shared", &["--steps", "2", "--shared-encoder"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let bytes = std::fs::read(d.root.join("shared/best.safetensors")).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let names = st.names();
    assert!(names.iter().all(|k| k.starts_with("encoder.")), "{names:?}");
}

#[test]
fn a_temperature_that_is_not_positive_is_refused() {
    let d = task();
    for t in ["0", "-1", "nan"] {
        let o = train(&d, "t", &["--steps", "2", "--temperature", t]);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        assert!(stderr(&o).contains("--temperature"), "{}", stderr(&o));
        assert!(!d.root.join("t").exists());
    }
}

#[test]
fn a_token_dataset_is_not_a_pairs_dataset() {
    let d = task();
    let (s, l) = toy_motif_task(16, 20, 1);
    write_dataset(&d.root.join("tokens.safetensors"), &s, Some(&l), 24).unwrap();
    let o = run_s(&[
        "dual".to_string(),
        "--train".into(),
        d.path("tokens.safetensors"),
        "-o".into(),
        d.path("x"),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("not a Luminome retrieval pairs dataset")
            && stderr(&o).contains("--format pairs"),
        "{}",
        stderr(&o)
    );
    assert!(!d.root.join("x").exists());
}
