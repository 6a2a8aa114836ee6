//! DNABERT-2's published tokenizer.json (tests/fixtures/dnabert2 of the engine): the ids
//! `luminome-tokenize --scheme hf` writes are the ones the Python `tokenizers`/`transformers`
//! packages give for the same sequences ([CLS] … [SEP] included), and a checkpoint folder can be
//! named instead of its tokenizer.json.

mod common;

use common::*;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../luminome-engine/tests/fixtures/dnabert2")
}

fn tokenize(dir: &Path, seqs: &[&str], tokenizer: &Path) -> Vec<Vec<u32>> {
    let csv = dir.join("rows.csv");
    let body: String = seqs.iter().map(|s| format!("{s},0\n")).collect();
    std::fs::write(&csv, format!("sequence,label\n{body}")).unwrap();
    let out = dir.join("rows.safetensors");
    run_ok(&[
        csv.to_str().unwrap(),
        "--scheme",
        "hf",
        "--tokenizer",
        tokenizer.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    unpadded_rows(&out)
}

#[test]
fn gue_rows_get_the_python_tokenizers_ids() {
    let dir = tempfile::tempdir().unwrap();
    let gue: Vec<_> = expected_ids(&fixtures().join("tokenizer/expected_ids.tsv"))
        .into_iter()
        .filter(|(name, _, _)| !name.starts_with("edge"))
        .collect();
    assert_eq!(gue.len(), 200);
    let seqs: Vec<&str> = gue.iter().map(|(_, s, _)| s.as_str()).collect();
    let got = tokenize(
        dir.path(),
        &seqs,
        &fixtures().join("tokenizer/tokenizer.json"),
    );
    for ((name, _, ids), got) in gue.iter().zip(&got) {
        assert_eq!(got, ids, "row {name}");
    }
}

#[test]
fn uppercase_edges_match_and_lowercase_is_read_as_bases_not_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let edges = expected_ids(&fixtures().join("tokenizer/expected_ids.tsv"));
    let find = |n: &str| edges.iter().find(|(name, _, _)| name == n).unwrap().clone();
    let (_, n_seq, n_ids) = find("edge_with_N");
    let (_, one_seq, one_ids) = find("edge_single_base");
    let (_, mixed_seq, _) = find("edge_mixed_case");
    let got = tokenize(
        dir.path(),
        &[&n_seq, &one_seq, &mixed_seq, "ACGTACGTACGT"],
        &fixtures().join("tokenizer/tokenizer.json"),
    );
    assert_eq!(got[0], n_ids, "N is [UNK] as in Python");
    assert_eq!(got[1], one_ids);
    // The published tokenizer has no normalizer: Python gives [UNK] for each lowercase base.
    // Luminome reads soft-masked (lowercase) bases as bases, so a soft-masked genome is not
    // turned into [UNK]s (docs/pretrained-models.md); the uppercase sequence's ids.
    assert_eq!(got[2], got[3]);
}

#[test]
fn a_checkpoint_folder_gives_its_own_tokenizer() {
    let dir = tempfile::tempdir().unwrap();
    let seqs = ["ACGTTGCAAGGCTTAGCCACATAG", "GGGCCCAAATTT"];
    let by_folder = tokenize(dir.path(), &seqs, &fixtures().join("tiny"));
    let by_file = tokenize(dir.path(), &seqs, &fixtures().join("tiny/tokenizer.json"));
    assert_eq!(by_folder, by_file);
    let ds = TokenDataset::open(&dir.path().join("rows.safetensors")).unwrap();
    let json = std::fs::read_to_string(fixtures().join("tiny/tokenizer.json")).unwrap();
    assert_eq!(
        ds.tokenizer().hf_tokenizer_json.as_deref(),
        Some(json.as_str())
    );
}
