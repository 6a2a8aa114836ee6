//! luminome-importance on tabular models: every column of every sample ranked, the cell values
//! as the table has them, the global ranking; methods that do not apply refused.

use std::path::Path;
use std::process::{Command, Output};

use luminome_engine::models::tabular::TabularArch;
use luminome_engine::testing::write_tabular_checkpoint;

const TABLE: &str = "sample\tx\ty\tgroup\tstatus\n\
a\t1.0\t5\tA\tneg\nb\t2.0\tNA\tB\tpos\nc\t3.0\t7\tA\tneg\nd\t4.0\t1\t\tpos\n";

fn checkpoint(dir: &Path, arch: TabularArch) -> std::path::PathBuf {
    let p = dir.join("t.tsv");
    std::fs::write(&p, TABLE).unwrap();
    let ck = dir.join(format!("{}.safetensors", arch.name()));
    write_tabular_checkpoint(&ck, &p, "status", Some("sample"), arch, None, 5).unwrap();
    ck
}

const FT: TabularArch = TabularArch::FtTransformer {
    d_model: 8,
    num_layers: 1,
    num_heads: 2,
    ffn_dim: 16,
    dropout: 0.0,
    attention: luminome_engine::backbones::AttentionKind::Standard,
};
const MLP: TabularArch = TabularArch::Mlp {
    hidden: 8,
    num_layers: 1,
    dropout: 0.0,
    category_dim: 4,
};

fn importance(dir: &Path, ck: &Path, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_luminome-importance"))
        .arg("--checkpoint")
        .arg(ck)
        .arg("--dataset")
        .arg(dir.join("t.tsv"))
        .arg("-o")
        .arg(dir.join("imp.tsv"))
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn every_column_of_every_sample_is_ranked_with_its_value() {
    let dir = tempfile::tempdir().unwrap();
    let ck = checkpoint(dir.path(), FT);
    for method in ["saliency", "ig", "attention"] {
        let ranking = dir.path().join("rank.tsv");
        let o = importance(
            dir.path(),
            &ck,
            &["--method", method, "--ranking", ranking.to_str().unwrap()],
        );
        assert!(
            o.status.success(),
            "{method}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let text = std::fs::read_to_string(dir.path().join("imp.tsv")).unwrap();
        let rows: Vec<Vec<&str>> = text.lines().map(|l| l.split('\t').collect()).collect();
        assert_eq!(
            rows[0],
            ["sample", "feature", "value", "importance", "rank"]
        );
        assert_eq!(rows.len(), 1 + 4 * 3, "{method}: 4 samples x 3 columns");
        let b: Vec<&Vec<&str>> = rows.iter().filter(|r| r[0] == "b").collect();
        assert_eq!(b.iter().map(|r| r[4]).collect::<Vec<_>>(), ["1", "2", "3"]);
        let y = b.iter().find(|r| r[1] == "y").unwrap();
        assert_eq!(y[2], "NA");
        let scores: Vec<f64> = b
            .iter()
            .map(|r| r[3].parse::<f64>().unwrap().abs())
            .collect();
        assert!(
            scores.windows(2).all(|w| w[0] >= w[1]),
            "{method}: not ranked {scores:?}"
        );
        let g = std::fs::read_to_string(&ranking).unwrap();
        assert!(g.starts_with("feature\tmean_abs_importance\tmean_importance\tn\trank\n"));
        assert_eq!(g.lines().count(), 4);
    }
}

#[test]
fn methods_and_outputs_that_do_not_apply_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let ft = checkpoint(dir.path(), FT);
    let mlp = checkpoint(dir.path(), MLP);
    for (ck, extra, want) in [
        (&mlp, vec!["--method", "attention"], "FT-Transformer"),
        (&ft, vec!["--method", "gates"], "not for tabular models"),
        (
            &ft,
            vec!["--method", "saliency", "--target", "maybe"],
            "--target maybe",
        ),
        (&ft, vec!["--method", "saliency", "--npz", "x.npz"], "--npz"),
    ] {
        let o = importance(dir.path(), ck, &extra);
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{e}");
        assert!(e.contains(want), "expected {want:?} in {e}");
        assert!(!dir.path().join("imp.tsv").exists());
    }
}

#[test]
fn outputs_that_name_an_input_or_each_other_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let ck = checkpoint(dir.path(), MLP);
    let before = std::fs::read(&ck).unwrap();
    let table = dir.path().join("t.tsv");
    let table_before = std::fs::read(&table).unwrap();
    for (extra, want) in [
        (
            vec!["--method", "saliency", "--ranking", table.to_str().unwrap()],
            "would destroy the input",
        ),
        (
            vec!["--method", "saliency", "--ranking", ck.to_str().unwrap()],
            "would destroy the input",
        ),
        (
            vec![
                "--method",
                "saliency",
                "--ranking",
                dir.path().join("imp.tsv").to_str().unwrap(),
            ],
            "are the same file",
        ),
    ] {
        let o = importance(dir.path(), &ck, &extra);
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{extra:?}: {e}");
        assert!(e.contains(want), "{extra:?}: {e}");
    }
    assert_eq!(std::fs::read(&ck).unwrap(), before);
    assert_eq!(std::fs::read(&table).unwrap(), table_before);
    assert!(!dir.path().join("imp.tsv").exists());
}
