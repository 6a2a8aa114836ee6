//! `luminome-train tabular`: cross-validation and a split on a synthetic table with numbers,
//! categories and missing values; same seed, same bytes; bad tables refused before anything is
//! written.

mod common;

use common::*;

/// A table where the label follows x1 and the group: pos when x1 + (group C ? 2 : 0) > 1 (with
/// a few flips), x2 is noise, about 1 in 10 cells of x1 and group missing.
fn table(n: usize, seed: u64) -> String {
    let mut s = String::from("sample\tx1\tx2\tgroup\tstatus\n");
    let mut state = seed.wrapping_mul(0x9E3779B97F4A7C15) | 1;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    for i in 0..n {
        let x1 = next() * 4.0 - 1.0;
        let x2 = next() * 10.0;
        let g = ["A", "B", "C"][(next() * 3.0) as usize];
        let mut pos = x1 + if g == "C" { 2.0 } else { 0.0 } > 1.0;
        if next() < 0.03 {
            pos = !pos;
        }
        let x1 = if next() < 0.1 {
            "NA".to_string()
        } else {
            format!("{x1:.4}")
        };
        let g = if next() < 0.1 { "" } else { g };
        let label = if pos { "pos" } else { "neg" };
        s.push_str(&format!("s{i}\t{x1}\t{x2:.3}\t{g}\t{label}\n"));
    }
    s
}

fn write(d: &Data, name: &str, text: &str) -> String {
    std::fs::write(d.root.join(name), text).unwrap();
    d.path(name)
}

fn empty() -> Data {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    Data { _dir: dir, root }
}

const FAST: &[&str] = &[
    "--label",
    "status",
    "--id",
    "sample",
    "--classes",
    "neg,pos",
    "--steps",
    "150",
    "--eval-every",
    "10",
    "--threads",
    "1",
    "--quiet",
];

fn tsv(path: &Path) -> Vec<Vec<String>> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| l.split('\t').map(String::from).collect())
        .collect()
}

#[test]
fn cross_validation_learns_the_rule_and_reports_every_fold() {
    let d = empty();
    let t = write(&d, "t.tsv", &table(240, 1));
    let out = d.path("cv");
    let args = with(
        &[
            "tabular", "--train", &t, "--folds", "3", "--model", "mlp", "-o", &out,
        ],
        FAST,
    );
    let o = run_s(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let m = tsv(&d.root.join("cv/cv_metrics.tsv"));
    assert_eq!(m[0][..3], ["fold", "n", "accuracy"]);
    assert_eq!(m.len(), 1 + 3 + 2, "3 folds, mean, sd");
    assert_eq!(m[4][0], "mean");
    let n: usize = m[1..4].iter().map(|r| r[1].parse::<usize>().unwrap()).sum();
    assert_eq!(n, 240, "the folds cover the table once");
    // The rule is learnable: about 97 % are right; a constant guess gets about 60 %.
    let acc: f64 = m[4][2].parse().unwrap();
    assert!(acc > 0.85, "mean CV accuracy {acc}");
    let p = tsv(&d.root.join("cv/cv_predictions.tsv"));
    assert_eq!(
        p[0],
        [
            "sample",
            "fold",
            "label",
            "prob_neg",
            "prob_pos",
            "predicted"
        ]
    );
    assert_eq!(p.len(), 241);
    assert_eq!(p[1][0], "s0", "rows in table order");
    for f in 1..=3 {
        assert!(d
            .root
            .join(format!("cv/fold-{f}/best.safetensors"))
            .exists());
        assert!(d
            .root
            .join(format!("cv/fold-{f}/test_metrics.tsv"))
            .exists());
    }
}

#[test]
fn the_transformer_trains_on_a_split_and_the_same_seed_gives_the_same_bytes() {
    // Two runs in two folders with the same relative paths: the command lines (stored in
    // the metadata) are equal, so the whole files must be.
    let d = empty();
    let run_once = |name: &str| {
        let dir = d.root.join(name);
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("t.tsv"), table(200, 2)).unwrap();
        std::fs::write(dir.join("test.tsv"), table(80, 3)).unwrap();
        let args = with(
            &[
                "tabular",
                "--train",
                "t.tsv",
                "--test",
                "test.tsv",
                "--d-model",
                "16",
                "--layers",
                "1",
                "--heads",
                "2",
                "--threshold",
                "youden",
                "-o",
                "out",
            ],
            FAST,
        );
        let o = bin().args(&args).current_dir(&dir).output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
    };
    run_once("a");
    run_once("b");
    for f in [
        "best.safetensors",
        "last.safetensors",
        "test_predictions.tsv",
        "test_metrics.tsv",
    ] {
        let a = std::fs::read(d.root.join("a/out").join(f)).unwrap();
        let b = std::fs::read(d.root.join("b/out").join(f)).unwrap();
        assert!(a == b, "same seed, different {f}");
    }
    // The validation loss falls from the first evaluation to the best one.
    let log = tsv(&d.root.join("a/out/metrics.tsv"));
    let col = log[0].iter().position(|c| c == "dev_loss").unwrap();
    let losses: Vec<f64> = log[1..]
        .iter()
        .filter_map(|r| r[col].parse().ok())
        .collect();
    let best = losses.iter().cloned().fold(f64::INFINITY, f64::min);
    assert!(best < losses[0] * 0.8, "dev loss {losses:?}");
    let meta =
        luminome_engine::checkpoint::read_checkpoint_meta(&d.root.join("a/out/best.safetensors"))
            .unwrap();
    let cfg = serde_json::to_value(&meta.model).unwrap();
    assert_eq!(cfg["kind"], "tabular");
    assert!(cfg["threshold"].as_f64().is_some(), "{cfg}");
    assert_eq!(cfg["schema"]["columns"][2]["name"], "group");
    assert_eq!(cfg["schema"]["columns"][2]["categories"][0], "A");
    let m = tsv(&d.root.join("a/out/test_metrics.tsv"));
    let acc: f64 = m.iter().find(|r| r[0] == "accuracy").unwrap()[1]
        .parse()
        .unwrap();
    assert!(acc > 0.8, "test accuracy {acc}");
}

/// Runs tabular on `train` (and `--test test` when given) and expects a refusal naming `want`,
/// with nothing written.
fn refused(train: &str, test: Option<&str>, want: &[&str]) {
    let d = empty();
    let t = write(&d, "t.tsv", train);
    let out = d.path("out");
    let mut args = with(&["tabular", "--train", &t, "-o", &out], FAST);
    if let Some(test) = test {
        let p = write(&d, "test.tsv", test);
        args.extend(["--test".to_string(), p]);
    }
    let o = run_s(&args);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    for w in want {
        assert!(e.contains(w), "expected {w:?} in: {e}");
    }
    assert!(!d.root.join("out").exists(), "output written on a refusal");
}

#[test]
fn a_third_label_in_a_binary_task_is_refused_with_its_line() {
    let mut t = table(40, 4);
    t.push_str("s99\t0.5\t1.0\tA\tmaybe\n");
    refused(
        &t,
        None,
        &["t.tsv: line 42", "\"maybe\"", "neg, pos", "binary"],
    );
}

#[test]
fn an_all_missing_column_is_refused_by_name() {
    let t = table(40, 5).replace("\tstatus\n", "\tstatus\tempty\n");
    let t: String = t
        .lines()
        .enumerate()
        .map(|(i, l)| {
            if i == 0 {
                format!("{l}\n")
            } else {
                format!("{l}\tNA\n")
            }
        })
        .collect();
    refused(&t, None, &["column empty", "all missing", "--ignore empty"]);
}

#[test]
fn a_number_beyond_single_precision_is_blamed_on_its_own_cell() {
    // 1e308 is a finite f64; it used to overflow the column's variance and the error then named
    // another, valid cell of the column.
    let mut t = table(40, 10);
    t.push_str("s99\t1e308\t1.0\tA\tpos\n");
    refused(
        &t,
        None,
        &[
            "t.tsv: line 42",
            "column x1",
            "\"1e308\"",
            "beyond single precision",
        ],
    );
    // In a test table: the cell is named, not another.
    let mut test = table(20, 11);
    test.push_str("s98\t1e39\t1.0\tA\tpos\n");
    refused(
        &table(60, 12),
        Some(&test),
        &[
            "test.tsv: line 22",
            "column x1",
            "\"1e39\"",
            "beyond single precision",
        ],
    );
}

#[test]
fn duplicate_sample_ids_are_refused_with_both_lines() {
    let t = table(40, 6).replace("s7\t", "s3\t");
    refused(&t, None, &["line 9", "\"s3\"", "used twice", "line 5"]);
}

#[test]
fn text_where_training_had_numbers_and_a_missing_column_are_refused() {
    let train = table(60, 7);
    let mut test = table(20, 8);
    test = test.replacen("\n", "\nbad1\tabc\t1.0\tA\tpos\n", 1);
    refused(
        &train,
        Some(&test),
        &["test.tsv: line 2", "x1", "\"abc\"", "numbers"],
    );
    let no_x2: String = table(20, 9)
        .lines()
        .map(|l| {
            let c: Vec<&str> = l.split('\t').collect();
            format!("{}\t{}\t{}\t{}\n", c[0], c[1], c[3], c[4])
        })
        .collect();
    refused(&train, Some(&no_x2), &["test.tsv", "no column \"x2\""]);
}

#[test]
fn flags_out_of_range_are_refused() {
    let t = table(40, 10);
    for (flag, value) in [
        ("--folds", "1"),
        ("--val-fraction", "1.5"),
        ("--dropout", "NaN"),
        ("--batch-size", "0"),
        ("--lr", "0"),
    ] {
        let d = empty();
        let p = write(&d, "t.tsv", &t);
        let out = d.path("out");
        let args = with(&["tabular", "--train", &p, flag, value, "-o", &out], FAST);
        let o = run_s(&args);
        assert_eq!(o.status.code(), Some(1), "{flag} {value}: {}", stderr(&o));
        assert!(stderr(&o).contains(flag), "{flag}: {}", stderr(&o));
        assert!(!d.root.join("out").exists());
    }
}

#[test]
fn three_classes_with_balanced_weights_are_learned() {
    // The class is x1's third (low / mid / high), with a category that also tells it apart.
    let mut t = String::from("sample\tx1\tgroup\tlevel\n");
    for i in 0..150 {
        let x = (i * 37 % 150) as f64 / 150.0;
        let level = if x < 0.5 {
            "low"
        } else if x < 0.8 {
            "mid"
        } else {
            "high"
        };
        let g = if level == "high" { "H" } else { "L" };
        t.push_str(&format!("r{i}\t{x:.3}\t{g}\t{level}\n"));
    }
    let d = empty();
    let p = write(&d, "t.tsv", &t);
    let out = d.path("cv");
    let o = run_s(&with(
        &[
            "tabular",
            "--train",
            &p,
            "--label",
            "level",
            "--id",
            "sample",
            "--folds",
            "3",
            "--model",
            "mlp",
            "--class-weights",
            "balanced",
            "--steps",
            "200",
            "--threads",
            "1",
            "--quiet",
            "-o",
            &out,
        ],
        &[],
    ));
    assert!(o.status.success(), "{}", stderr(&o));
    let pred = tsv(&d.root.join("cv/cv_predictions.tsv"));
    assert_eq!(pred[0][3..6], ["prob_high", "prob_low", "prob_mid"]);
    let m = tsv(&d.root.join("cv/cv_metrics.tsv"));
    let acc: f64 = m[4][2].parse().unwrap();
    assert!(
        acc > 0.8,
        "mean CV accuracy {acc} (the largest class is half)"
    );
}

#[test]
fn a_table_inside_the_output_folder_under_a_run_file_name_is_refused() {
    let d = empty();
    std::fs::create_dir(d.root.join("run")).unwrap();
    let t = write(&d, "run/test_metrics.tsv", &table(40, 11));
    let before = std::fs::read(&t).unwrap();
    let out = d.path("run");
    let o = run_s(&with(&["tabular", "--train", &t, "-o", &out], FAST));
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(e.contains("would destroy the input"), "{e}");
    assert_eq!(std::fs::read(&t).unwrap(), before);
}
