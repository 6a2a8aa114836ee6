//! `--shard I/N` and `--gather` for expression and tabular models: the parts hold each sample's
//! explained values, and the gather writes the TSV, bedGraph, npz and ranking one job writes,
//! byte for byte; parts of another run or of a sequence classifier are refused.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use luminome_engine::models::expression::ExpressionHead;
use luminome_engine::models::tabular::TabularArch;
use luminome_engine::testing::{write_expression_checkpoint, write_tabular_checkpoint};

fn importance(args: &[String]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_luminome-importance"))
        .args(args)
        .output()
        .unwrap()
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

fn path(p: &Path) -> String {
    p.to_str().unwrap().to_string()
}

/// Runs `common` + outputs as one job, as `n` parts and as their gather; asserts every output
/// (`-o` plus `extra` outputs named by flag) has the same bytes.
fn one_job_and_gathered(dir: &Path, common: &[String], outputs: &[(&str, &str)], n: usize) {
    let run = |stem: &str, more: &[String]| -> Vec<PathBuf> {
        let files: Vec<PathBuf> = outputs
            .iter()
            .map(|(_, ext)| dir.join(format!("{stem}.{ext}")))
            .collect();
        let mut a = common.to_vec();
        for ((flag, _), f) in outputs.iter().zip(&files) {
            a.extend([flag.to_string(), path(f)]);
        }
        a.extend(more.iter().cloned());
        let o = importance(&a);
        assert!(
            o.status.success(),
            "{a:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        files
    };
    let one = run("one", &[]);
    let parts: Vec<String> = (1..=n)
        .map(|i| {
            let part = path(&dir.join(format!("p{i}-of-{n}.part.safetensors")));
            let mut a = common.to_vec();
            a.extend(strings(&["--shard", &format!("{i}/{n}"), "-o", &part]));
            let o = importance(&a);
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            part
        })
        .collect();
    let mut gather = vec!["--gather".to_string()];
    gather.extend(parts.iter().rev().cloned());
    let gathered = run("gathered", &gather);
    for (a, b) in one.iter().zip(&gathered) {
        let (x, y) = (std::fs::read(a).unwrap(), std::fs::read(b).unwrap());
        assert!(
            !x.is_empty() && x == y,
            "{common:?}: {b:?} differs from {a:?}"
        );
    }
}

#[test]
fn expression_saliency_ig_and_pooling_gather_to_the_one_job_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let (ck, ds) =
        write_expression_checkpoint(dir.path(), ExpressionHead::AttentionPool { mlp_hidden: 8 })
            .unwrap();
    let base = strings(&[
        "--checkpoint",
        &path(&ck),
        "--dataset",
        &path(&ds),
        "--batch-size",
        "4",
    ]);
    let with = |more: &[&str]| [base.clone(), strings(more)].concat();
    let outputs = [("-o", "tsv"), ("--bedgraph", "bedgraph"), ("--npz", "npz")];
    one_job_and_gathered(
        dir.path(),
        &with(&["--method", "saliency", "--top", "3"]),
        &outputs,
        3,
    );
    one_job_and_gathered(
        dir.path(),
        &with(&["--method", "ig", "--ig-steps", "4", "--subset", "test"]),
        &outputs,
        2,
    );
    one_job_and_gathered(dir.path(), &with(&["--method", "pooling"]), &outputs, 4);
}

#[test]
fn tabular_scores_and_ranking_gather_to_the_one_job_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t.tsv");
    let rows: String = (0..11)
        .map(|i| {
            format!(
                "s{i}\t{}.5\t{}\t{}\t{}\n",
                i,
                (i * 7) % 5,
                ["A", "B"][i % 2],
                ["neg", "pos"][(i / 2) % 2]
            )
        })
        .collect();
    std::fs::write(&table, format!("sample\tx\ty\tgroup\tstatus\n{rows}")).unwrap();
    let ck = dir.path().join("ft.safetensors");
    let ft = TabularArch::FtTransformer {
        d_model: 8,
        num_layers: 1,
        num_heads: 2,
        ffn_dim: 16,
        dropout: 0.0,
        attention: luminome_engine::backbones::AttentionKind::Standard,
    };
    write_tabular_checkpoint(&ck, &table, "status", Some("sample"), ft, None, 5).unwrap();
    let common = strings(&[
        "--checkpoint",
        &path(&ck),
        "--dataset",
        &path(&table),
        "--batch-size",
        "2",
        "--method",
        "ig",
        "--ig-steps",
        "4",
        "--top",
        "2",
    ]);
    one_job_and_gathered(
        dir.path(),
        &common,
        &[("-o", "tsv"), ("--ranking", "ranking.tsv")],
        3,
    );
}

#[test]
fn a_gather_refuses_parts_of_another_run_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (ck, ds) =
        write_expression_checkpoint(dir.path(), ExpressionHead::AttentionPool { mlp_hidden: 8 })
            .unwrap();
    let run = |steps: &str, more: &[&str]| {
        let mut a = strings(&[
            "--checkpoint",
            &path(&ck),
            "--dataset",
            &path(&ds),
            "--method",
            "ig",
            "--ig-steps",
            steps,
        ]);
        a.extend(strings(more));
        importance(&a)
    };
    let part = |spec: &str, steps: &str| {
        let p = path(&dir.path().join(format!(
            "{}-{steps}.part.safetensors",
            spec.replace('/', "of")
        )));
        let o = run(steps, &["--shard", spec, "-o", &p]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        p
    };
    let (p1, p2_other) = (part("1/2", "4"), part("2/2", "8"));
    let out_dir = dir.path().join("out");
    std::fs::create_dir_all(&out_dir).unwrap();
    let out = path(&out_dir.join("x.tsv"));
    for (parts, expect) in [
        (vec![p1.as_str()], "parts 2/2 are missing"),
        (
            vec![p1.as_str(), p2_other.as_str()],
            "a part of another run",
        ),
    ] {
        let mut more = vec!["-o", out.as_str(), "--gather"];
        more.extend(parts);
        let o = run("4", &more);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{stderr}");
        assert!(
            stderr.contains(expect) && !stderr.contains("panicked"),
            "{stderr}"
        );
        assert_eq!(
            std::fs::read_dir(&out_dir).unwrap().count(),
            0,
            "files left behind"
        );
    }
}
