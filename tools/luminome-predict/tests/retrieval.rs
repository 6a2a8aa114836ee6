//! luminome-predict on a dual encoder: the metrics agree with a ranking recomputed from the
//! embeddings it writes; a corpus without a query's positive, a classifier given pairs and a
//! token dataset without --embeddings are refused; a token dataset is embedded.

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Output};

use common::*;
use luminome_engine::backbones::AttentionKind;
use luminome_engine::testing::{
    ecoli_retrieval_task, write_dual_checkpoint, write_retrieval_pairs,
};

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn p(dir: &Path, name: &str) -> String {
    dir.join(name).display().to_string()
}

/// Pairs from 12 windows of 48 bases (two fragments each: the same passage twice), and a corpus
/// of those 12 windows plus 20 others (records seq0.. in window order).
fn setup(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let (pairs, _) = ecoli_retrieval_task(0, 12, 48, 20, 2, true, 5);
    write_retrieval_pairs(&dir.join("pairs.safetensors"), &pairs).unwrap();
    let (_, windows) = ecoli_retrieval_task(0, 32, 48, 20, 1, false, 6);
    let recs: Vec<Rec> = windows
        .iter()
        .map(|(_, s)| rec(std::str::from_utf8(s).unwrap(), None))
        .collect();
    write_dataset(&dir.join("corpus.safetensors"), &recs, 50);
    write_dual_checkpoint(
        &dir.join("dual.safetensors"),
        64,
        AttentionKind::Genetic,
        false,
        2,
    )
    .unwrap();
    windows
}

fn tsv(path: &Path) -> Vec<HashMap<String, String>> {
    luminome_engine::testing::tsv_rows(path)
}

fn read_f32(st: &safetensors::SafeTensors, name: &str) -> (Vec<f32>, Vec<usize>) {
    let t = st.tensor(name).unwrap();
    let v = t
        .data()
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    (v, t.shape().to_vec())
}

#[test]
fn metrics_agree_with_a_ranking_recomputed_from_the_written_embeddings() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let windows = setup(d);
    let o = predict(&[
        "--checkpoint",
        &p(d, "dual.safetensors"),
        "--dataset",
        &p(d, "pairs.safetensors"),
        "--corpus",
        &p(d, "corpus.safetensors"),
        "-o",
        &p(d, "ranks.tsv"),
        "--metrics",
        &p(d, "metrics.tsv"),
        "--embeddings",
        &p(d, "emb.safetensors"),
        "--in-batch-size",
        "4",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let metrics: HashMap<String, f64> = tsv(&d.join("metrics.tsv"))
        .into_iter()
        .map(|r| (r["metric"].clone(), r["value"].parse().unwrap()))
        .collect();
    assert_eq!(metrics["queries"], 24.0);
    assert_eq!(metrics["corpus_size"], 32.0);
    assert_eq!(metrics["in_batch.size"], 4.0);
    // One relevant passage per query: MAP = MRR, R@5 = Hit@5, P@5 = Hit@5 / 5.
    assert!((metrics["full.map"] - metrics["full.mrr"]).abs() < 1e-9);
    assert!((metrics["full.r_at_5"] - metrics["full.hit_at_5"]).abs() < 1e-9);
    assert!((metrics["full.p_at_5"] * 5.0 - metrics["full.hit_at_5"]).abs() < 1e-9);
    assert!((metrics["query_norm"] - 1.0).abs() < 1e-5);

    // Recompute every query's rank from the embeddings and the index.
    let bytes = std::fs::read(d.join("emb.safetensors")).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let (q, qs) = read_f32(&st, "query");
    let (c, cs) = read_f32(&st, "passage");
    assert_eq!((qs[0], cs[0], qs[1]), (24, 32, 16));
    let index = tsv(&d.join("emb.index.tsv"));
    let passage_names: Vec<&str> = index
        .iter()
        .filter(|r| r["set"] == "passage")
        .map(|r| r["name"].as_str())
        .collect();
    let ranks = tsv(&d.join("ranks.tsv"));
    assert_eq!(ranks.len(), 24);
    let mut rr_sum = 0.0;
    for (i, row) in ranks.iter().enumerate() {
        // Pair row 2i is query i (two fragments per window); its window is window i / 2.
        let window = i / 2;
        let want = format!("seq{window}");
        assert_eq!(row["relevant"], want, "{row:?}");
        assert_eq!(
            windows[window].0,
            format!("NC_000913.3:{}-{}", 48 * window, 48 * (window + 1))
        );
        let rel = passage_names.iter().position(|n| *n == want).unwrap();
        let score = |j: usize| -> f32 { (0..16).map(|k| q[i * 16 + k] * c[j * 16 + k]).sum() };
        let s_rel = score(rel);
        let rank = 1 + (0..32).filter(|&j| j != rel && score(j) >= s_rel).count();
        assert_eq!(row["first_rank"].parse::<usize>().unwrap(), rank, "{row:?}");
        rr_sum += 1.0 / rank as f64;
    }
    assert!((metrics["full.mrr"] - rr_sum / 24.0).abs() < 1e-6);
    if python_has("numpy, safetensors") {
        let code = format!(
            "from safetensors.numpy import load_file; import numpy as np; e = load_file({:?}); assert e['query'].shape == (24, 16) and np.allclose(np.linalg.norm(e['passage'], axis=1), 1, atol=1e-5)",
            p(d, "emb.safetensors")
        );
        let st = Command::new("python3")
            .args(["-c", &code])
            .status()
            .unwrap();
        assert!(st.success(), "Python could not read the embeddings");
    }
}

#[test]
fn a_corpus_without_a_querys_positive_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let windows = setup(d);
    // Leave window 3 out of the corpus.
    let recs: Vec<Rec> = windows
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 3)
        .map(|(_, (_, s))| rec(std::str::from_utf8(s).unwrap(), None))
        .collect();
    write_dataset(&d.join("short.safetensors"), &recs, 50);
    let o = predict(&[
        "--checkpoint",
        &p(d, "dual.safetensors"),
        "--dataset",
        &p(d, "pairs.safetensors"),
        "--corpus",
        &p(d, "short.safetensors"),
        "-o",
        &p(d, "ranks.tsv"),
    ]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(
        e.contains("query q6")
            && e.contains("NC_000913.3:144-192")
            && e.contains("is not in the corpus"),
        "{e}"
    );
    assert!(!d.join("ranks.tsv").exists());
}

#[test]
fn a_classifier_given_pairs_and_retrieval_flags_elsewhere_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    setup(d);
    let classifier = fixture_checkpoint("cls");
    let o = predict(&[
        "--checkpoint",
        classifier.to_str().unwrap(),
        "--dataset",
        &p(d, "pairs.safetensors"),
        "-o",
        &p(d, "x.tsv"),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("evaluated by a dual encoder"),
        "{}",
        stderr(&o)
    );
    let o = predict(&[
        "--checkpoint",
        classifier.to_str().unwrap(),
        "--dataset",
        &p(d, "corpus.safetensors"),
        "--embeddings",
        &p(d, "e.safetensors"),
        "-o",
        &p(d, "x.tsv"),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("are for dual encoders"),
        "{}",
        stderr(&o)
    );
    assert!(!d.join("x.tsv").exists());
}

#[test]
fn a_token_dataset_is_embedded_with_its_record_names() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    setup(d);
    let base = [
        "--checkpoint",
        &p(d, "dual.safetensors"),
        "--dataset",
        &p(d, "corpus.safetensors"),
        "-o",
        &p(d, "rows.tsv"),
    ];
    let o = predict(&base);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("--embeddings"), "{}", stderr(&o));
    let mut args = base.to_vec();
    let emb = p(d, "c.safetensors");
    args.extend(["--embeddings", &emb, "--side", "query"]);
    let o = predict(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let bytes = std::fs::read(d.join("c.safetensors")).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    assert_eq!(st.tensor("embedding").unwrap().shape(), &[32, 16]);
    let rows = tsv(&d.join("rows.tsv"));
    assert_eq!((rows.len(), rows[5]["name"].as_str()), (32, "seq5"));
    assert_eq!(tsv(&d.join("c.index.tsv")).len(), 32);
}

#[test]
fn a_dash_writes_the_table_to_standard_output() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    setup(d);
    let o = predict(&[
        "--checkpoint",
        &p(d, "dual.safetensors"),
        "--dataset",
        &p(d, "pairs.safetensors"),
        "-o",
        "-",
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    assert_eq!(text.lines().count(), 25, "a header and 24 queries");
    assert!(text.starts_with("record\tname\trelevant"));
    assert!(!d.join("-").exists(), "no file named -");
}
