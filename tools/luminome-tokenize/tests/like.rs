//! `--like`: data tokenized to match a dataset or checkpoint; `--max-n`: genome windows without
//! assembly gaps.

mod common;

use common::*;
use luminome_io::token_dataset::TokenDataset;

fn ids(ds: &TokenDataset) -> Vec<Vec<u32>> {
    let b = ds.batch(&(0..ds.len()).collect::<Vec<_>>()).unwrap();
    (0..ds.len())
        .map(|i| b.input_ids[i * ds.max_length()..(i + 1) * ds.max_length()].to_vec())
        .collect()
}

#[test]
fn like_remakes_the_tokenization_of_a_dataset() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n).display().to_string();
    let csv = test_data("gue_prom_core_all/dev.csv");
    let tok = test_data("tokenizers/dna_bpe_256.json");
    let csv = csv.to_str().unwrap();
    for (name, flags) in [
        (
            "kmer",
            vec![
                "--scheme",
                "kmer",
                "-k",
                "3",
                "--kmer-mode",
                "non-overlapping",
                "--no-sep",
            ],
        ),
        (
            "hf",
            vec!["--scheme", "hf", "--tokenizer", tok.to_str().unwrap()],
        ),
    ] {
        let reference = p(&format!("{name}.safetensors"));
        let mut args = vec![csv, "-o", &reference];
        args.extend(flags);
        run_ok(&args);
        let like = p(&format!("{name}_like.safetensors"));
        run_ok(&[csv, "--like", &reference, "-o", &like]);
        let (a, b) = (
            TokenDataset::open(reference.as_ref()).unwrap(),
            TokenDataset::open(like.as_ref()).unwrap(),
        );
        assert!(a.tokenizer().same_tokenization(b.tokenizer()), "{name}");
        assert_eq!(ids(&a), ids(&b), "{name}: the same ids");
    }
    // Overlapping 3-mers share the vocabulary of non-overlapping ones, but not the tokenization.
    let over = p("over.safetensors");
    run_ok(&[csv, "--scheme", "kmer", "-k", "3", "-o", &over]);
    let (a, b) = (
        TokenDataset::open(p("kmer.safetensors").as_ref()).unwrap(),
        TokenDataset::open(over.as_ref()).unwrap(),
    );
    assert_eq!(a.tokenizer().vocab, b.tokenizer().vocab);
    assert!(!a.tokenizer().same_tokenization(b.tokenizer()));
    assert_eq!(
        a.tokenizer().tokenize_flags().unwrap(),
        "--scheme kmer -k 3 --kmer-mode non-overlapping --no-sep"
    );
}

#[test]
fn like_refuses_other_tokenizer_flags_and_files_without_a_tokenizer() {
    let dir = tempfile::tempdir().unwrap();
    let csv = test_data("gue_prom_core_all/dev.csv");
    let csv = csv.to_str().unwrap();
    let reference = dir.path().join("ref.safetensors").display().to_string();
    run_ok(&[csv, "-o", &reference]);
    let out_dir = dir.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let out = out_dir.join("x.safetensors").display().to_string();
    let o = bin()
        .args([csv, "--like", &reference, "--scheme", "kmer", "-o", &out])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--like"));
    assert!(std::fs::read_dir(&out_dir).unwrap().next().is_none());
    let not_luminome = write(dir.path(), "plain.safetensors", b"not a safetensors file");
    assert_refused(
        &[csv, "--like", not_luminome.to_str().unwrap(), "-o", &out],
        &out_dir,
        &["--like", "plain.safetensors"],
    );
}

#[test]
fn max_n_drops_windows_with_gaps_and_counts_them() {
    let dir = tempfile::tempdir().unwrap();
    let seq = format!(
        "{}{}{}",
        "ACGT".repeat(25),
        "N".repeat(100),
        "GATC".repeat(25)
    );
    let fa = write(dir.path(), "g.fa", format!(">g\n{seq}\n").as_bytes());
    let fa = fa.to_str().unwrap();
    let windows = |extra: &[&str], name: &str| {
        let out = dir.path().join(name).display().to_string();
        let mut args = vec![fa, "--overflow", "window", "--window", "50", "-o", &out];
        args.extend(extra);
        let log = run_ok(&args);
        (TokenDataset::open(out.as_ref()).unwrap(), log)
    };
    let (all, _) = windows(&[], "all.safetensors");
    assert_eq!(all.len(), 6);
    let (kept, log) = windows(&["--max-n", "0"], "kept.safetensors");
    assert_eq!(kept.len(), 4, "the two all-N windows are dropped");
    assert!(log.contains("2 windows/records skipped"), "{log}");
    let offsets: Vec<u64> = kept
        .read_index()
        .unwrap()
        .iter()
        .map(|r| r.window_offset)
        .collect();
    assert_eq!(offsets, [0, 50, 200, 250]);
    assert_eq!(decode(&kept, 2), "GATC".repeat(13)[..50]);
    let out_dir = dir.path().join("refused");
    std::fs::create_dir(&out_dir).unwrap();
    let out = out_dir.join("x.safetensors").display().to_string();
    assert_refused(
        &[fa, "--max-n", "1.5", "-o", &out],
        &out_dir,
        &["--max-n 1.5"],
    );
}
