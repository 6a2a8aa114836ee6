//! Several labelled inputs into one dataset, and `--split` into train/dev/test: how a user with
//! a positives FASTA and a negatives FASTA gets the three datasets `classify` takes.

mod common;
use common::*;
use std::collections::{BTreeMap, BTreeSet};

fn names_and_labels(path: &Path) -> Vec<(String, i64)> {
    let ds = TokenDataset::open(path).unwrap();
    let labels = ds
        .batch(&(0..ds.len()).collect::<Vec<_>>())
        .unwrap()
        .labels
        .unwrap();
    let index = read_index(&luminome_io::token_dataset::index_path_for(path)).unwrap();
    index.into_iter().map(|r| r.name).zip(labels).collect()
}

#[test]
fn labelled_fasta_files_split_whole_records_stratified_and_reproducibly() {
    let dir = tempfile::tempdir().unwrap();
    let pos = test_data("gue_prom_core_all/promoters.fa");
    let neg = test_data("gue_prom_core_all/non_promoters.fa");
    let truth: BTreeMap<String, i64> = read_fasta(&pos)
        .into_iter()
        .map(|(n, _)| (n, 1))
        .chain(read_fasta(&neg).into_iter().map(|(n, _)| (n, 0)))
        .collect();
    let out = dir.path().join("prom.safetensors");
    let args = |seed: &str, out: &Path| {
        vec![
            pos.to_str().unwrap().to_string(),
            neg.to_str().unwrap().to_string(),
            "--label".into(),
            "1,0".into(),
            "--split".into(),
            "0.8,0.1,0.1".into(),
            "--seed".into(),
            seed.into(),
            "-o".into(),
            out.to_str().unwrap().to_string(),
        ]
    };
    let a: Vec<String> = args("1", &out);
    let log = run_ok(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(log.contains("1600 / 200 / 200 rows"), "{log}");

    let mut seen = BTreeSet::new();
    for (split, share) in [("train", 0.8), ("dev", 0.1), ("test", 0.1)] {
        let rows = names_and_labels(&dir.path().join(format!("prom.{split}.safetensors")));
        for label in [0, 1] {
            let in_class = truth.values().filter(|&&l| l == label).count() as f64;
            let got = rows.iter().filter(|(_, l)| *l == label).count();
            assert_eq!(
                got,
                (in_class * share).round() as usize,
                "{split} label {label}"
            );
        }
        for (name, label) in rows {
            assert_eq!(truth[&name], label, "{name} keeps its file's label");
            assert!(seen.insert(name.clone()), "{name} is in two splits");
        }
    }
    assert_eq!(seen.len(), truth.len(), "every record is in a split");

    // The same seed gives the same bytes; another seed another assignment.
    let again = dir.path().join("again");
    std::fs::create_dir(&again).unwrap();
    let b = args("1", &out);
    run_ok(&b.iter().map(String::as_str).collect::<Vec<_>>());
    let before = std::fs::read(dir.path().join("prom.dev.safetensors")).unwrap();
    let other = args("2", &again.join("prom.safetensors"));
    run_ok(&other.iter().map(String::as_str).collect::<Vec<_>>());
    run_ok(&b.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(
        std::fs::read(dir.path().join("prom.dev.safetensors")).unwrap(),
        before
    );
    assert_ne!(
        names_and_labels(&again.join("prom.dev.safetensors")),
        names_and_labels(&dir.path().join("prom.dev.safetensors"))
    );
}

#[test]
fn windows_and_reverse_complements_of_a_record_stay_in_one_split() {
    let dir = tempfile::tempdir().unwrap();
    let mut fasta = String::new();
    for r in 0..20 {
        let seq: String = (0..250)
            .map(|i| b"ACGT"[(i * 7 + r * 3) % 4] as char)
            .collect();
        fasta += &format!(">rec{r}\n{seq}\n");
    }
    let input = write(dir.path(), "genome.fa", fasta.as_bytes());
    let out = dir.path().join("w.safetensors");
    run_ok(&[
        input.to_str().unwrap(),
        "--overflow",
        "window",
        "--window",
        "100",
        "--rc",
        "both",
        "--split",
        "0.5,0.25,0.25",
        "-o",
        out.to_str().unwrap(),
    ]);
    let mut owner: BTreeMap<String, &str> = BTreeMap::new();
    let mut rows = 0;
    for split in ["train", "dev", "test"] {
        let index = dir.path().join(format!("w.{split}.index.tsv"));
        for row in read_index(&index).unwrap() {
            rows += 1;
            let first = *owner.entry(row.name.clone()).or_insert(split);
            assert_eq!(first, split, "{} has rows in {first} and {split}", row.name);
        }
    }
    // 20 records × 3 windows × 2 strands; records 10 / 5 / 5.
    assert_eq!(rows, 120);
    let count = |s: &str| owner.values().filter(|&&v| v == s).count();
    assert_eq!((count("train"), count("dev"), count("test")), (10, 5, 5));
}

#[test]
fn several_inputs_concatenate_in_order_with_one_label_each() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.fa", b">a1\nACGT\n>a2\nGGCC\n");
    let b = write(dir.path(), "b.fa", b">b1\nTTTT\n");
    let out = dir.path().join("ab.safetensors");
    run_ok(&[
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--label",
        "3,0",
        "-o",
        out.to_str().unwrap(),
    ]);
    let rows = names_and_labels(&out);
    assert_eq!(
        rows,
        vec![("a1".into(), 3), ("a2".into(), 3), ("b1".into(), 0)]
    );
    let meta = TokenDataset::open(&out).unwrap().meta().clone();
    assert_eq!(
        meta.sources.len(),
        2,
        "both inputs are named: {:?}",
        meta.sources
    );
}

#[test]
fn unclear_labels_and_unsplittable_inputs_are_refused_before_any_output() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.fa", b">a1\nACGT\n>a2\nGGCC\n");
    let b = write(dir.path(), "b.fa", b">b1\nTTTT\n");
    let out_dir = dir.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let out = out_dir.join("x.safetensors");
    let (a, b, o) = (
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        out.to_str().unwrap(),
    );
    assert_refused(
        &[a, b, "--label", "1,0,2", "-o", o],
        &out_dir,
        &["3 labels for 2 inputs"],
    );
    let table = write(dir.path(), "t.csv", b"sequence,label\nACGT,1\n");
    let t = table.to_str().unwrap();
    assert_refused(
        &[a, t, "-o", o],
        &out_dir,
        &["t.csv has labels and", "a.fa has none"],
    );
    // A table's labels are its label column: a --label it would ignore is refused.
    assert_refused(
        &[a, t, "--label", "1", "-o", o],
        &out_dir,
        &["t.csv: a table takes its labels from its --label-column"],
    );
    assert_refused(
        &[t, "--no-labels", "--label", "1", "-o", o],
        &out_dir,
        &["t.csv: a table takes its labels"],
    );
    // Three records cannot fill three splits at 0.9 / 0.05 / 0.05.
    assert_refused(
        &[a, b, "--label", "1", "--split", "0.9,0.05,0.05", "-o", o],
        &out_dir,
        &["the dev split got no rows", "3 records"],
    );
    assert_refused(
        &[a, "--split", "0.5,0.6", "-o", o],
        &out_dir,
        &["add up to 1.1"],
    );
    let out = bin()
        .args(["-", "--split", "0.5,0.5", "-o", o])
        .stdin(std::process::Stdio::piped())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("reads - twice"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_dir(&out_dir).unwrap().count(), 0);
}
