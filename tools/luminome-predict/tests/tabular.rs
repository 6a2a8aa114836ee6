//! luminome-predict on a tabular model: probabilities that match the model, metrics with the
//! stored threshold, unseen categories counted, and tables the model cannot read refused.

use std::path::Path;
use std::process::Command;

use luminome_engine::models::tabular::TabularArch;
use luminome_engine::testing::write_tabular_checkpoint;

const TRAIN: &str = "sample\tx\tgroup\tstatus\n\
a\t1.0\tA\tneg\nb\t2.0\tB\tpos\nc\t3.0\tA\tneg\nd\t4.0\tB\tpos\n";

/// A random-weight MLP fitted on TRAIN's schema, with threshold `threshold`.
fn checkpoint(dir: &Path, threshold: Option<f64>) -> std::path::PathBuf {
    let train = dir.join("train.tsv");
    std::fs::write(&train, TRAIN).unwrap();
    let arch = TabularArch::Mlp {
        hidden: 8,
        num_layers: 1,
        dropout: 0.0,
        category_dim: 4,
    };
    let path = dir.join("model.safetensors");
    write_tabular_checkpoint(&path, &train, "status", Some("sample"), arch, threshold, 3).unwrap();
    path
}

fn predict(dir: &Path, ckpt: &Path, table: &str) -> std::process::Output {
    std::fs::write(dir.join("new.tsv"), table).unwrap();
    Command::new(env!("CARGO_BIN_EXE_luminome-predict"))
        .args(["--checkpoint", ckpt.to_str().unwrap(), "--dataset"])
        .arg(dir.join("new.tsv"))
        .arg("-o")
        .arg(dir.join("p.tsv"))
        .arg("--metrics")
        .arg(dir.join("m.tsv"))
        .output()
        .unwrap()
}

#[test]
fn predictions_follow_the_threshold_and_unseen_categories_are_counted() {
    let dir = tempfile::tempdir().unwrap();
    // Threshold 0: every sample is called positive whatever the weights say.
    let ckpt = checkpoint(dir.path(), Some(0.0));
    let o = predict(
        dir.path(),
        &ckpt,
        "status\tgroup\tx\tsample\tnotes\nneg\tC\t2.5\tz1\tx\npos\t\tNA\tz2\ty\n",
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let p = std::fs::read_to_string(dir.path().join("p.tsv")).unwrap();
    let lines: Vec<Vec<&str>> = p.lines().map(|l| l.split('\t').collect()).collect();
    assert_eq!(
        lines[0],
        [
            "record",
            "name",
            "label",
            "prob_neg",
            "prob_pos",
            "predicted"
        ]
    );
    assert_eq!(lines[1][..3], ["0", "z1", "neg"]);
    let (a, b): (f64, f64) = (lines[1][3].parse().unwrap(), lines[1][4].parse().unwrap());
    assert!((a + b - 1.0).abs() < 1e-5);
    assert_eq!(lines[1][5], "pos");
    assert_eq!(lines[2][5], "pos");
    let m = std::fs::read_to_string(dir.path().join("m.tsv")).unwrap();
    assert!(m.contains("unknown_categories.group\t1"), "{m}");
    assert!(m.contains("threshold\t0.000000"), "{m}");
    // All called positive: sensitivity 1, specificity 0.
    assert!(
        m.contains("sensitivity\t1.000000") && m.contains("specificity\t0.000000"),
        "{m}"
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("read as unknown: group 1"));
}

#[test]
fn tables_the_model_cannot_read_are_refused_before_output() {
    let dir = tempfile::tempdir().unwrap();
    let ckpt = checkpoint(dir.path(), None);
    for (table, want) in [
        ("sample\tgroup\tstatus\nz1\tA\tneg\n", "no column \"x\""),
        (
            "sample\tx\tgroup\nz1\t1.0\tA\nz2\thigh\tB\n",
            "line 3: column x: \"high\"",
        ),
        (
            "sample\tx\tgroup\tstatus\nz1\t1.0\tA\tmaybe\n",
            "label \"maybe\"",
        ),
        ("sample\tx\tgroup\nz1\t1.0\tA\nz1\t2.0\tB\n", "used twice"),
    ] {
        let o = predict(dir.path(), &ckpt, table);
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{e}");
        assert!(
            e.contains(want) && e.contains("new.tsv"),
            "expected {want:?} in {e}"
        );
        assert!(!dir.path().join("p.tsv").exists());
    }
}
