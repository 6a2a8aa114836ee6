//! `--shard I/N` / `--gather` for expression and tabular models: their parts carry what the
//! metrics are computed from, so the gathered predictions and metrics are one run's bytes.

use std::path::Path;
use std::process::{Command, Output};

use luminome_engine::models::expression::ExpressionHead;
use luminome_engine::models::tabular::TabularArch;
use luminome_engine::testing::{write_expression_checkpoint, write_tabular_checkpoint};

fn predict(args: &[String]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_luminome-predict"))
        .args(args)
        .output()
        .unwrap()
}

fn ok(o: &Output) {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// One run's TSV and metrics against `n` parts gathered (in reverse order).
fn one_run_and_gathered(dir: &Path, base: &[String], n: usize) {
    let p = |name: &str| dir.join(name).display().to_string();
    let with = |more: &[String]| [base.to_vec(), more.to_vec()].concat();
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    ok(&predict(&with(&s(&[
        "-o",
        &p("one.tsv"),
        "--metrics",
        &p("one.metrics.tsv"),
    ]))));
    let mut gather = s(&["--gather"]);
    for i in (1..=n).rev() {
        let part = p(&format!("p{i}.part.safetensors"));
        ok(&predict(&with(&s(&[
            "--shard",
            &format!("{i}/{n}"),
            "-o",
            &part,
        ]))));
        gather.push(part);
    }
    gather.extend(s(&["-o", &p("g.tsv"), "--metrics", &p("g.metrics.tsv")]));
    ok(&predict(&with(&gather)));
    for (a, b) in [("one.tsv", "g.tsv"), ("one.metrics.tsv", "g.metrics.tsv")] {
        let (x, y) = (std::fs::read(p(a)).unwrap(), std::fs::read(p(b)).unwrap());
        assert!(!x.is_empty() && x == y, "{base:?}: {b} differs from {a}");
    }
}

#[test]
fn an_expression_models_predictions_and_metrics_gather_to_one_runs() {
    let dir = tempfile::tempdir().unwrap();
    let (ck, ds) =
        write_expression_checkpoint(dir.path(), ExpressionHead::AttentionPool { mlp_hidden: 8 })
            .unwrap();
    let base: Vec<String> = [
        "--checkpoint",
        ck.to_str().unwrap(),
        "--dataset",
        ds.to_str().unwrap(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let with =
        |more: &[&str]| [base.clone(), more.iter().map(|s| s.to_string()).collect()].concat();
    one_run_and_gathered(dir.path(), &with(&["--batch-size", "4"]), 3);
    one_run_and_gathered(
        dir.path(),
        &with(&["--batch-size", "2", "--subset", "test"]),
        2,
    );
}

#[test]
fn a_tabular_models_predictions_and_metrics_gather_to_one_runs() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t.tsv");
    let rows: String = (0..13)
        .map(|i| {
            format!(
                "s{i}\t{}.25\t{}\t{}\n",
                i,
                ["A", "B", "C"][i % 3],
                ["neg", "pos"][(i / 3) % 2]
            )
        })
        .collect();
    std::fs::write(&table, format!("sample\tx\tgroup\tstatus\n{rows}")).unwrap();
    let ck = dir.path().join("mlp.safetensors");
    let mlp = TabularArch::Mlp {
        hidden: 8,
        num_layers: 1,
        dropout: 0.0,
        category_dim: 4,
    };
    write_tabular_checkpoint(&ck, &table, "status", Some("sample"), mlp, Some(0.4), 3).unwrap();
    let base: Vec<String> = [
        "--checkpoint",
        ck.to_str().unwrap(),
        "--dataset",
        table.to_str().unwrap(),
        "--batch-size",
        "3",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    one_run_and_gathered(dir.path(), &base, 3);
}
