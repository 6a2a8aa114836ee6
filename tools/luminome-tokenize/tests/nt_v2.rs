//! The Nucleotide Transformer v2's published EsmTokenizer (tests/fixtures/nt_v2 of the engine):
//! `luminome-tokenize --scheme hf --tokenizer DIR` on a checkpoint folder writes the ids the
//! Python `transformers` package gives for the same sequences (`<cls>` first, no end token, as
//! published), and `--like` on such a dataset makes the same ids again.

mod common;

use common::*;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../luminome-engine/tests/fixtures/nt_v2")
}

fn write_csv(dir: &Path, seqs: &[&str]) -> PathBuf {
    let csv = dir.join("rows.csv");
    let body: String = seqs.iter().map(|s| format!("{s},0\n")).collect();
    std::fs::write(&csv, format!("sequence,label\n{body}")).unwrap();
    csv
}

fn tokenize(dir: &Path, seqs: &[&str]) -> Vec<Vec<u32>> {
    let csv = write_csv(dir, seqs);
    let out = dir.join("rows.safetensors");
    let ck = fixtures().join("tiny");
    run_ok(&[
        csv.to_str().unwrap(),
        "--scheme",
        "hf",
        "--tokenizer",
        ck.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    unpadded_rows(&out)
}

#[test]
fn gue_rows_and_edges_get_the_python_tokenizers_ids() {
    let dir = tempfile::tempdir().unwrap();
    // An empty record is refused by every scheme (nothing to tokenize).
    let cases: Vec<_> = expected_ids(&fixtures().join("tokenizer/expected_ids.tsv"))
        .into_iter()
        .filter(|(name, _, _)| name != "edge_empty")
        .collect();
    assert!(cases.len() >= 56, "{} rows", cases.len());
    let seqs: Vec<&str> = cases.iter().map(|(_, s, _)| s.as_str()).collect();
    let got = tokenize(dir.path(), &seqs);
    for ((name, _, ids), got) in cases.iter().zip(&got) {
        assert_eq!(got, ids, "row {name}");
    }
    let ds = TokenDataset::open(&dir.path().join("rows.safetensors")).unwrap();
    let t = ds.tokenizer();
    assert_eq!(t.vocab.len(), 4107);
    assert_eq!(
        (t.pad_id, t.cls_id, t.add_cls, t.add_sep),
        (1, Some(3), true, false)
    );

    // --like remakes the same tokenizer from the dataset alone.
    let out = dir.path().join("again.safetensors");
    let csv = write_csv(dir.path(), &seqs);
    let like = dir.path().join("rows.safetensors");
    run_ok(&[
        csv.to_str().unwrap(),
        "--like",
        like.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(unpadded_rows(&out), got);
}

#[test]
fn soft_masked_bases_are_bases_and_other_letters_are_n() {
    // The published tokenizer turns a run of lowercase or IUPAC letters into one <unk>
    // (expected_ids_raw.tsv); Luminome reads lowercase as bases (soft-masked genomes) and other
    // letters as N, before tokenizing, as for every scheme (docs/pretrained-models.md).
    let dir = tempfile::tempdir().unwrap();
    let raw = expected_ids(&fixtures().join("tokenizer/expected_ids_raw.tsv"));
    let find = |n: &str| raw.iter().find(|(name, _, _)| name == n).unwrap().clone();
    let (_, mixed, python_mixed) = find("raw_mixed_case");
    let (_, iupac, python_iupac) = find("raw_iupac_R");
    let got = tokenize(
        dir.path(),
        &[&mixed, &mixed.to_uppercase(), &iupac, "ACNGT"],
    );
    assert_eq!(got[0], got[1]);
    assert_ne!(got[0], python_mixed);
    assert_eq!(got[2], got[3], "R is read as N");
    assert_eq!(python_iupac, [3, 4102, 4104, 0, 4105, 4103]);
    assert_eq!(got[2], [3, 4102, 4104, 4106, 4105, 4103]);
}
