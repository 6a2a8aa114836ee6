//! Published models (Caduceus/PlantCaduceus checkpoint folders): zero-shot variant scores through
//! luminome-mask-pairs --like and luminome-predict against the authors' model
//! (tests/fixtures/caduceus/variants/expected_llr.tsv, bench/reference/caduceus/
//! make_variant_scores.py), and what is refused.

mod common;
use common::predict;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use clap::Parser;

fn caduceus_fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../luminome-engine/tests/fixtures/caduceus")
}

fn mask_pairs(args: &[&str]) -> anyhow::Result<()> {
    let mut all = vec!["luminome-mask-pairs", "--quiet"];
    all.extend(args);
    luminome_mask_pairs::run(&luminome_mask_pairs::args::Args::parse_from(all)).map(|_| ())
}

/// The fixture's SNVs in 41-base windows, in `model`'s vocabulary.
fn dataset(dir: &Path, model: &str) -> PathBuf {
    let v = caduceus_fixtures().join("variants");
    let ds = dir.join(format!("{model}.safetensors"));
    mask_pairs(&[
        "--reference",
        v.join("ref.fa").to_str().unwrap(),
        "--variants",
        v.join("snvs.vcf").to_str().unwrap(),
        "--window",
        "41",
        "--like",
        caduceus_fixtures().join(model).to_str().unwrap(),
        "-o",
        ds.to_str().unwrap(),
    ])
    .unwrap();
    ds
}

/// (id, alt) → (llr_fwd, llr_rc, llr) of the authors' model.
fn expected(model: &str) -> HashMap<(String, String), [f64; 3]> {
    let text =
        std::fs::read_to_string(caduceus_fixtures().join("variants/expected_llr.tsv")).unwrap();
    text.lines()
        .skip(1)
        .map(|l| l.split('\t').collect::<Vec<_>>())
        .filter(|f| f[0] == model)
        .map(|f| {
            let x = |i: usize| f[i].parse::<f64>().unwrap();
            ((f[1].to_string(), f[4].to_string()), [x(5), x(6), x(7)])
        })
        .collect()
}

fn read_tsv(path: &Path) -> Vec<HashMap<String, String>> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split('\t').collect();
    lines
        .map(|l| {
            header
                .iter()
                .zip(l.split('\t'))
                .map(|(h, v)| (h.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

#[test]
fn zero_shot_scores_match_the_authors_model_on_both_strands() {
    let dir = tempfile::tempdir().unwrap();
    for model in ["ps_rcps_fused", "ph_fused"] {
        let ds = dataset(dir.path(), model);
        let out = dir.path().join(format!("{model}.tsv"));
        let vcf = dir.path().join(format!("{model}.vcf"));
        let ckpt = caduceus_fixtures().join(model);
        let run = predict(&[
            "--checkpoint",
            ckpt.to_str().unwrap(),
            "--dataset",
            ds.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--vcf",
            vcf.to_str().unwrap(),
            "-q",
        ]);
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        let want = expected(model);
        let rows = read_tsv(&out);
        assert_eq!(rows.len(), want.len(), "{model}: one row per ALT allele");
        for r in &rows {
            let w = want[&(r["id"].clone(), r["alt"].clone())];
            for (col, i) in [("llr_fwd", 0), ("llr_rc", 1), ("llr", 2)] {
                let got: f64 = r[col].parse().unwrap();
                assert!(
                    (got - w[i]).abs() < 1e-4,
                    "{model} {} {}: {col} {got} vs the authors' {}",
                    r["id"],
                    r["alt"],
                    w[i]
                );
            }
        }
        // The VCF carries the same scores, declared, one value per ALT (snv5 has two).
        let text = std::fs::read_to_string(&vcf).unwrap();
        assert!(text.contains("##INFO=<ID=LLR,Number=A,Type=Float"));
        let snv5 = text.lines().find(|l| l.contains("\tsnv5\t")).unwrap();
        let llr = snv5
            .split("LLR=")
            .nth(1)
            .unwrap()
            .split(';')
            .next()
            .unwrap();
        let want5 = [
            &want[&("snv5".into(), "A".into())],
            &want[&("snv5".into(), "T".into())],
        ];
        for (v, w) in llr.split(',').zip(want5) {
            assert!((v.parse::<f64>().unwrap() - w[2]).abs() < 1e-4, "{snv5}");
        }
    }
}

#[test]
fn forward_strand_only_is_plantcaduceus_script_score() {
    let dir = tempfile::tempdir().unwrap();
    let model = "ph_fused";
    let ds = dataset(dir.path(), model);
    let out = dir.path().join("fwd.tsv");
    let run = predict(&[
        "--checkpoint",
        caduceus_fixtures().join(model).to_str().unwrap(),
        "--dataset",
        ds.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--strands",
        "forward",
    ]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let want = expected(model);
    for r in read_tsv(&out) {
        let w = want[&(r["id"].clone(), r["alt"].clone())];
        let llr: f64 = r["llr"].parse().unwrap();
        assert!((llr - w[0]).abs() < 1e-4, "{}: {llr} vs {}", r["id"], w[0]);
        assert_eq!(r["llr_rc"], "NA");
    }
}

#[test]
fn a_dataset_in_another_vocabulary_is_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let ds = dataset(dir.path(), "ps_rcps_fused");
    let out = dir.path().join("x.tsv");
    let run = predict(&[
        "--checkpoint",
        caduceus_fixtures().join("ph_fused").to_str().unwrap(),
        "--dataset",
        ds.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(!run.status.success());
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(
        err.contains("another vocabulary") && err.contains("--like"),
        "{err}"
    );
    assert!(!out.exists());
}

#[test]
fn a_mistyped_or_uncached_hub_name_says_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let ds = dataset(dir.path(), "ps_rcps_fused");
    let out = dir.path().join("x.tsv");
    for (name, want) in [
        ("hf:kuleshov-group", "hf:ORG/NAME"),
        ("hf:kuleshov-group/PlantCaduceus_l20", "HF_HUB_OFFLINE"),
    ] {
        let run = Command::new(env!("CARGO_BIN_EXE_luminome-predict"))
            .args([
                "--checkpoint",
                name,
                "--dataset",
                ds.to_str().unwrap(),
                "-o",
            ])
            .arg(&out)
            .env("HF_HUB_OFFLINE", "1")
            .env("HF_HOME", dir.path().join("hf-home"))
            .output()
            .unwrap();
        assert!(!run.status.success());
        let err = String::from_utf8_lossy(&run.stderr);
        assert!(err.contains(want), "{name}: {err}");
        assert!(!out.exists());
    }
    // mask-pairs --like reads the vocabulary through the same path.
    let e = mask_pairs(&[
        "--reference",
        caduceus_fixtures()
            .join("variants/ref.fa")
            .to_str()
            .unwrap(),
        "--variants",
        caduceus_fixtures()
            .join("variants/snvs.vcf")
            .to_str()
            .unwrap(),
        "--like",
        "hf:org/",
        "-o",
        dir.path().join("y.safetensors").to_str().unwrap(),
    ])
    .unwrap_err();
    assert!(format!("{e:#}").contains("hf:ORG/NAME"), "{e:#}");
    assert!(!dir.path().join("y.safetensors").exists());
}

#[test]
fn a_ref_disagreeing_with_the_reference_is_scored_and_flagged() {
    let dir = tempfile::tempdir().unwrap();
    let v = caduceus_fixtures().join("variants");
    // snv1's REF is T; claim G.
    let text = std::fs::read_to_string(v.join("snvs.vcf"))
        .unwrap()
        .replace("\tsnv1\tT\tA", "\tsnv1\tG\tA");
    let vcf = dir.path().join("bad_ref.vcf");
    std::fs::write(&vcf, text).unwrap();
    let ds = dir.path().join("ds.safetensors");
    mask_pairs(&[
        "--reference",
        v.join("ref.fa").to_str().unwrap(),
        "--variants",
        vcf.to_str().unwrap(),
        "--window",
        "41",
        "--like",
        caduceus_fixtures().join("ps_rcps_fused").to_str().unwrap(),
        "-o",
        ds.to_str().unwrap(),
    ])
    .unwrap();
    let out = dir.path().join("s.tsv");
    let run = predict(&[
        "--checkpoint",
        caduceus_fixtures().join("ps_rcps_fused").to_str().unwrap(),
        "--dataset",
        ds.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let rows = read_tsv(&out);
    let snv1 = rows.iter().find(|r| r["id"] == "snv1").unwrap();
    assert_eq!(snv1["ref_match"], "0");
    assert_eq!(snv1["ref"], "G");
    assert!(rows
        .iter()
        .filter(|r| r["id"] != "snv1")
        .all(|r| r["ref_match"] == "1"));
}
