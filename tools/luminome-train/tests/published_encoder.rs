//! `luminome-train bistrand --encoder`: the strand encoders start from a published Caduceus
//! checkpoint (the authors'-code fixture of the engine), frozen or fine-tuned, and the trained
//! model scores variants under luminome-predict.

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use candle_core::{Device, Tensor};
use clap::Parser;
use common::*;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../luminome-engine/tests/fixtures/caduceus")
}

fn encoder() -> String {
    fixtures().join("ps_rcps_fused").display().to_string()
}

fn mask_pairs(args: &[&str]) -> anyhow::Result<()> {
    let mut all = vec!["luminome-mask-pairs", "--quiet"];
    all.extend(args);
    luminome_mask_pairs::run(&luminome_mask_pairs::args::Args::parse_from(all)).map(|_| ())
}

/// Random-masked pairs of the fixture reference in the encoder's vocabulary.
fn pairs(dir: &Path, like: Option<&str>) -> String {
    let out = dir.join(format!("pairs_{}.safetensors", like.is_some()));
    let reference = fixtures().join("variants/ref.fa");
    let mut args = vec![
        "--fasta",
        reference.to_str().unwrap(),
        "--window",
        "40",
        "--stride",
        "8",
        "--mask-fraction",
        "0.2",
        "-o",
        out.to_str().unwrap(),
    ];
    if let Some(l) = like {
        args.extend(["--like", l]);
    }
    mask_pairs(&args).unwrap();
    out.display().to_string()
}

fn tensors(path: &Path) -> HashMap<String, Tensor> {
    candle_core::safetensors::load(path, &Device::Cpu).unwrap()
}

fn same(a: &Tensor, b: &Tensor) -> bool {
    a.dims() == b.dims()
        && (a - b)
            .unwrap()
            .abs()
            .unwrap()
            .flatten_all()
            .unwrap()
            .max(0)
            .unwrap()
            .to_scalar::<f32>()
            .unwrap()
            == 0.0
}

fn train(dir: &Path, train: &str, out: &str, extra: &[&str]) -> std::process::Output {
    let mut args: Vec<String> = [
        "bistrand",
        "--train",
        train,
        "--dev",
        train,
        "-o",
        dir.join(out).to_str().unwrap(),
        "--encoder",
        &encoder(),
        "--cross-heads",
        "2",
        "--steps",
        "4",
        "--batch-size",
        "4",
        "--eval-every",
        "4",
        "--threads",
        "1",
        "--quiet",
    ]
    .map(String::from)
    .to_vec();
    args.extend(extra.iter().map(|s| s.to_string()));
    run_s(&args)
}

#[test]
fn a_frozen_encoder_keeps_the_published_weights_and_the_heads_train() {
    let dir = tempfile::tempdir().unwrap();
    let ds = pairs(dir.path(), Some(&encoder()));
    let o = train(dir.path(), &ds, "frozen", &["--freeze-encoder"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let published = tensors(&fixtures().join("ps_rcps_fused/model.safetensors"));
    let trained = tensors(&dir.path().join("frozen/last.safetensors"));
    let mut encoder_tensors = 0;
    for (name, t) in &trained {
        if let Some(p) = name
            .strip_prefix("strand_a.")
            .or(name.strip_prefix("strand_b."))
        {
            assert!(same(t, &published[p]), "{name} changed although frozen");
            encoder_tensors += 1;
        }
    }
    assert!(encoder_tensors > 20, "{encoder_tensors} encoder tensors");
    assert!(trained.contains_key("head_a.weight") && trained.contains_key("cross_ab.q.weight"));

    // Fine-tuned, the encoder moves.
    let o = train(dir.path(), &ds, "tuned", &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let tuned = tensors(&dir.path().join("tuned/last.safetensors"));
    let emb = "caduceus.backbone.embeddings.word_embeddings.embedding.weight";
    assert!(!same(&tuned[&format!("strand_a.{emb}")], &published[emb]));

    // The trained model scores variants (in the encoder's vocabulary) like any bi-strand model.
    let v = fixtures().join("variants");
    let snvs = dir.path().join("snvs.safetensors");
    mask_pairs(&[
        "--reference",
        v.join("ref.fa").to_str().unwrap(),
        "--variants",
        v.join("snvs.vcf").to_str().unwrap(),
        "--window",
        "40",
        "--like",
        &encoder(),
        "-o",
        snvs.to_str().unwrap(),
    ])
    .unwrap();
    let predictor = luminome_engine::models::bistrand::PairPredictor::open(
        &dir.path().join("frozen/best.safetensors"),
        &snvs,
        Device::Cpu,
    );
    let mut predictor = match predictor {
        Ok(p) => p,
        Err(e) => panic!("{e:#}"),
    };
    use luminome_engine::predict::Predictor;
    let rows = predictor
        .predict(&(0..predictor.len()).collect::<Vec<_>>())
        .unwrap();
    assert_eq!(rows.len(), 9);
    for r in rows {
        let llr: f32 = r.values[6].parse().unwrap();
        assert!(llr.is_finite(), "{:?}", r.values);
    }
}

#[test]
fn pairs_in_another_vocabulary_are_refused_naming_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let ds = pairs(dir.path(), None);
    let o = train(dir.path(), &ds, "x", &["--freeze-encoder"]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(
        e.contains("another vocabulary") && e.contains("--like"),
        "{e}"
    );
    nothing_written(&dir.path().join("x"));
}
