//! Sharded runs (`--shard I/N`, then `--gather`): the gathered outputs are those of one run,
//! byte for byte (TSV, scored VCF and its index, track, npz), whatever the shard boundaries cut
//! (a site's alleles split across parts); parts that do not make one run are refused.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::*;

/// luminome-predict run from `dir` (outputs named relative to it, so two folders' commands,
/// recorded in the VCF header, are the same).
fn predict_in(dir: &Path, args: &[&str]) -> Output {
    std::fs::create_dir_all(dir).unwrap();
    std::process::Command::new(env!("CARGO_BIN_EXE_luminome-predict"))
        .current_dir(dir)
        .args(args)
        .env("HF_HUB_OFFLINE", "1")
        .output()
        .unwrap()
}

fn ok(o: &Output) {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// A variant dataset of the Caduceus fixture's SNVs (nine alleles) or of every substitution of
/// two intervals (eighteen).
fn dataset(dir: &Path, saturate: bool) -> PathBuf {
    let v = caduceus_fixtures().join("variants");
    let bed = dir.join("sites.bed");
    std::fs::write(&bed, "chrT\t57\t61\nchrT\t110\t112\n").unwrap();
    let (flag, input) = if saturate {
        ("--saturate", bed)
    } else {
        ("--variants", v.join("snvs.vcf"))
    };
    let ds = dir.join(format!("{}.safetensors", &flag[2..]));
    mask_pairs(&[
        "--reference",
        v.join("ref.fa").to_str().unwrap(),
        flag,
        input.to_str().unwrap(),
        "--window",
        "41",
        "--like",
        caduceus_fixtures().join("ps_rcps_fused").to_str().unwrap(),
        "-o",
        ds.to_str().unwrap(),
    ])
    .unwrap();
    ds
}

/// Runs `outputs` once in `dir/one` and as `shards` parts gathered in `dir/many` (parts given
/// in reverse order), then compares every output file byte for byte.
fn one_run_and_gathered(dir: &Path, ds: &Path, batch: &str, shards: usize, outputs: &[&str]) {
    let model = caduceus_fixtures().join("ps_rcps_fused");
    let common = [
        "--checkpoint",
        model.to_str().unwrap(),
        "--dataset",
        ds.to_str().unwrap(),
    ];
    let tail: Vec<&str> = ["-o", "scores.tsv"]
        .into_iter()
        .chain(outputs.iter().copied())
        .chain(["--batch-size", batch, "-q"])
        .collect();
    ok(&predict_in(
        &dir.join("one"),
        &[&common[..], &tail].concat(),
    ));
    let many = dir.join("many");
    let parts: Vec<String> = (1..=shards)
        .map(|i| format!("p{i}.part.safetensors"))
        .collect();
    for (i, part) in parts.iter().enumerate() {
        let spec = format!("{}/{shards}", i + 1);
        let args = ["--shard", &spec, "-o", part, "--batch-size", batch, "-q"];
        ok(&predict_in(&many, &[&common[..], &args].concat()));
    }
    let mut gather = common.to_vec();
    gather.push("--gather");
    gather.extend(parts.iter().rev().map(String::as_str));
    gather.extend(&tail);
    ok(&predict_in(&many, &gather));
    let mut files = files_in(&dir.join("one"));
    files.sort();
    assert!(files.len() > outputs.len() / 2, "{files:?}");
    for f in &files {
        let a = std::fs::read(dir.join("one").join(f)).unwrap();
        let b = std::fs::read(many.join(f)).unwrap();
        assert!(a == b, "{f} differs between one run and the gathered parts");
    }
}

#[test]
fn gathered_variant_scores_are_the_bytes_of_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let ds = dataset(dir.path(), false);
    // Batches of 5 of the nine alleles: snv5's A and T fall in different parts.
    let outputs = ["--vcf", "scores.vcf.gz", "--bedgraph", "scores.bedgraph"];
    one_run_and_gathered(dir.path(), &ds, "5", 2, &outputs);
    assert!(dir.path().join("many/scores.vcf.gz.tbi").exists());
}

#[test]
fn gathered_saturation_npz_is_the_bytes_of_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let ds = dataset(dir.path(), true);
    let outputs = ["--npz", "scores.npz", "--bedgraph", "scores.bedgraph"];
    // Eighteen substitutions in batches of 4 over three parts (one site's three split).
    one_run_and_gathered(dir.path(), &ds, "4", 3, &outputs);
}

#[test]
fn parts_that_do_not_make_one_run_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let ds = dataset(dir.path(), false);
    let model = caduceus_fixtures().join("ps_rcps_fused");
    let run = |args: &[&str]| {
        let mut all = vec![
            "--checkpoint",
            model.to_str().unwrap(),
            "--dataset",
            ds.to_str().unwrap(),
            "-q",
        ];
        all.extend(args);
        predict_in(dir.path(), &all)
    };
    for (i, batch) in [(1, "2"), (2, "2"), (3, "2"), (3, "3")] {
        let part = format!("p{i}_b{batch}.part.safetensors");
        ok(&run(&[
            "--shard",
            &format!("{i}/3"),
            "-o",
            &part,
            "--batch-size",
            batch,
        ]));
    }
    let refused = |args: &[&str], says: &str| {
        let o = run(&[args, &["-o", "all.tsv", "--vcf", "all.vcf"]].concat());
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success() && err.contains(says), "{says}: {err}");
        assert!(!dir.path().join("all.tsv").exists() && !dir.path().join("all.vcf").exists());
    };
    let (p1, p2, p3) = (
        "p1_b2.part.safetensors",
        "p2_b2.part.safetensors",
        "p3_b2.part.safetensors",
    );
    refused(
        &["--gather", p1, p2, "--batch-size", "2"],
        "parts 3/3 are missing",
    );
    refused(
        &["--gather", p1, p2, p1, "--batch-size", "2"],
        "are both part 1/3",
    );
    // A part of a run with another --batch-size.
    let p3b3 = "p3_b3.part.safetensors";
    refused(
        &["--gather", p1, p2, p3b3, "--batch-size", "2"],
        "batch_size",
    );
    // The gather's own --batch-size must be the parts'.
    refused(&["--gather", p1, p2, p3, "--batch-size", "3"], "batch_size");
    refused(
        &["--gather", ds.to_str().unwrap(), "--batch-size", "2"],
        "not a part",
    );
    // Other scoring options than the parts': refused.
    let b2 = ["--batch-size", "2"];
    refused(
        &[&["--gather", p1, p2, p3, "--strands", "forward"], &b2[..]].concat(),
        "options",
    );
    let o = run(&[
        "--gather",
        p1,
        p2,
        p3,
        "--batch-size",
        "2",
        "-o",
        "a.tsv",
        "--embeddings",
        "e.safetensors",
    ]);
    assert!(!o.status.success() && !dir.path().join("e.safetensors").exists());
    // The same model with one weight changed (same size, a folder of the same names): refused.
    let other = dir.path().join("other_model");
    std::fs::create_dir(&other).unwrap();
    for f in std::fs::read_dir(&model).unwrap() {
        let f = f.unwrap().path();
        std::fs::copy(&f, other.join(f.file_name().unwrap())).unwrap();
    }
    let weights = other.join("model.safetensors");
    let mut bytes = std::fs::read(&weights).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x01;
    std::fs::write(&weights, bytes).unwrap();
    let o = predict_in(
        dir.path(),
        &[
            "--checkpoint",
            other.to_str().unwrap(),
            "--dataset",
            ds.to_str().unwrap(),
            "-q",
            "--gather",
            p1,
            p2,
            p3,
            "--batch-size",
            "2",
            "-o",
            "all.tsv",
        ],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("checkpoints"), "{err}");
    assert!(!dir.path().join("all.tsv").exists());
    // --shard writes a part, not a TSV; nothing else beside it.
    let o = run(&["--shard", "1/3", "-o", "x.tsv"]);
    assert!(!o.status.success());
    let o = run(&[
        "--shard",
        "1/3",
        "-o",
        "x.part.safetensors",
        "--vcf",
        "x.vcf",
    ]);
    assert!(!o.status.success());
    let o = run(&["--shard", "4/3", "-o", "x.part.safetensors"]);
    assert!(!o.status.success());
    assert!(!dir.path().join("x.part.safetensors").exists());
}

/// A classifier's parts carry its probabilities, an ensemble's its members' too: the gathered
/// TSV and metrics (the members' included) are one run's.
#[test]
fn a_classifier_gathers_its_rows_and_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let ds = dir.path().join("ds.safetensors");
    let seqs = [
        "ACGTTATAGC",
        "GGCATTA",
        "TTGA",
        "ACGTA",
        "GGGCCCAT",
        "TATATA",
        "CGCGA",
    ];
    let recs: Vec<Rec> = seqs
        .iter()
        .enumerate()
        .map(|(i, s)| rec(s, Some(i as i64 % 2)))
        .collect();
    write_dataset(&ds, &recs, 12);
    let p = |n: &str| dir.path().join(n).display().to_string();
    let (gated, mean) = (fixture_checkpoint("gated"), fixture_checkpoint("mean"));
    for (name, models) in [("one", vec![&gated]), ("ensemble", vec![&gated, &mean])] {
        let mut base = vec!["--checkpoint"];
        base.extend(models.iter().map(|m| m.to_str().unwrap()));
        base.extend(["--dataset", ds.to_str().unwrap(), "--batch-size", "2"]);
        let (tsv, metrics) = (p(&format!("{name}.tsv")), p(&format!("{name}.metrics.tsv")));
        ok(&predict(
            &[&base[..], &["-o", &tsv, "--metrics", &metrics]].concat(),
        ));
        let mut gather = base.clone();
        gather.push("--gather");
        let parts: Vec<String> = (1..=3)
            .map(|i| p(&format!("{name}{i}.part.safetensors")))
            .collect();
        for (i, part) in parts.iter().enumerate() {
            let spec = format!("{}/3", i + 1);
            ok(&predict(
                &[&base[..], &["--shard", &spec, "-o", part]].concat(),
            ));
            gather.push(part);
        }
        let (g_tsv, g_metrics) = (
            p(&format!("{name}.g.tsv")),
            p(&format!("{name}.g.metrics.tsv")),
        );
        gather.extend(["-o", &g_tsv]);
        ok(&predict(
            &[&gather[..], &["--metrics", &g_metrics]].concat(),
        ));
        assert_eq!(
            std::fs::read(&metrics).unwrap(),
            std::fs::read(&g_metrics).unwrap(),
            "{name}: gathered metrics"
        );
        assert_eq!(std::fs::read(&tsv).unwrap(), std::fs::read(&g_tsv).unwrap());
    }
}
