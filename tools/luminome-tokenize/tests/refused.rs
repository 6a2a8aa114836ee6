//! Bad input refused: a clear message naming the file and line or record, a non-zero exit and
//! nothing at the output path.

mod common;

use common::*;

// ---- bad input: each refused with file + line/record, non-zero exit, nothing written ----

fn out_in(dir: &Path) -> (PathBuf, String) {
    let out_dir = dir.join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let out = out_dir.join("x.safetensors");
    let s = out.to_str().unwrap().to_string();
    (out_dir, s)
}

#[test]
fn refuses_empty_files() {
    let dir = tempfile::tempdir().unwrap();
    let (out_dir, out) = out_in(dir.path());
    let fa = write(dir.path(), "empty.fa", b"");
    assert_refused(
        &[fa.to_str().unwrap(), "-o", &out],
        &out_dir,
        &["empty.fa", "no FASTA/FASTQ records"],
    );
    let csv = write(dir.path(), "empty.csv", b"");
    assert_refused(
        &[csv.to_str().unwrap(), "-o", &out],
        &out_dir,
        &["empty.csv", "empty"],
    );
    let header_only = write(dir.path(), "header.csv", b"sequence,label\n");
    assert_refused(
        &[header_only.to_str().unwrap(), "-o", &out],
        &out_dir,
        &["header.csv", "no data rows"],
    );
}

#[test]
fn refuses_fasta_without_records() {
    let dir = tempfile::tempdir().unwrap();
    let (out_dir, out) = out_in(dir.path());
    let fa = write(dir.path(), "blank.fa", b"\n\n\n");
    assert_refused(
        &[fa.to_str().unwrap(), "-o", &out],
        &out_dir,
        &["blank.fa", "no FASTA/FASTQ records"],
    );
    let fa = write(dir.path(), "text.fa", b"\nACGTACGT\n");
    assert_refused(
        &[fa.to_str().unwrap(), "-o", &out],
        &out_dir,
        &["text.fa: line 2", "expected a FASTA"],
    );
}

#[test]
fn refuses_a_record_without_sequence() {
    let dir = tempfile::tempdir().unwrap();
    let (out_dir, out) = out_in(dir.path());
    let fa = write(dir.path(), "r.fa", b">one\nACGT\n>two\n>three\nGG\n");
    assert_refused(
        &[fa.to_str().unwrap(), "-o", &out],
        &out_dir,
        &["r.fa: record 2 (two)", "no sequence"],
    );
}

#[test]
fn refuses_truncated_gzip() {
    let dir = tempfile::tempdir().unwrap();
    let (out_dir, out) = out_in(dir.path());
    let gz = std::fs::read(test_data("ecoli/ecoli_50kb.fa.gz")).unwrap();
    let cut = write(dir.path(), "cut.fa.gz", &gz[..gz.len() / 2]);
    assert_refused(
        &[cut.to_str().unwrap(), "-o", &out],
        &out_dir,
        &["cut.fa.gz", "record 1", "truncated"],
    );
}

#[test]
fn accepts_crlf_and_lowercase() {
    let dir = tempfile::tempdir().unwrap();
    let fa = write(
        dir.path(),
        "w.fa",
        b">r1 desc\r\nACgt\r\nnN\r\n>r2\r\nTTTT\r\n",
    );
    let out = dir.path().join("w.safetensors");
    run_ok(&[
        fa.to_str().unwrap(),
        "--soft-mask",
        "-o",
        out.to_str().unwrap(),
    ]);
    let ds = TokenDataset::open(&out).unwrap();
    assert_eq!(decode(&ds, 0), "ACGTNN");
    assert_eq!(
        ds.batch(&[0]).unwrap().soft_mask.unwrap(),
        vec![0, 0, 0, 1, 1, 1, 0, 0]
    );
    assert_eq!(decode(&ds, 1), "TTTT");
}

#[test]
fn iupac_codes_map_to_n_or_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let fa = write(dir.path(), "iupac.fa", b">r1\nACGTRYK\n");
    let out = dir.path().join("i.safetensors");
    let log = run_ok(&[fa.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert!(log.contains("changed to N: K=1 R=1 Y=1"), "{log}");
    assert_eq!(decode(&TokenDataset::open(&out).unwrap(), 0), "ACGTNNN");
    let (out_dir, out) = out_in(dir.path());
    assert_refused(
        &[fa.to_str().unwrap(), "--non-acgt", "error", "-o", &out],
        &out_dir,
        &["iupac.fa: record 1 (r1)", "position 5", "'R'"],
    );
}

#[test]
fn refuses_a_table_without_the_named_column() {
    let dir = tempfile::tempdir().unwrap();
    let (out_dir, out) = out_in(dir.path());
    let csv = test_data("gue_prom_core_all/dev.csv");
    assert_refused(
        &[
            csv.to_str().unwrap(),
            "--sequence-column",
            "seq",
            "-o",
            &out,
        ],
        &out_dir,
        &["dev.csv: line 1", "no column named \"seq\""],
    );
}

#[test]
fn refuses_a_label_that_is_not_an_integer() {
    let dir = tempfile::tempdir().unwrap();
    let (out_dir, out) = out_in(dir.path());
    let csv = write(dir.path(), "l.csv", b"sequence,label\nACGT,1\nACGG,yes\n");
    assert_refused(
        &[csv.to_str().unwrap(), "-o", &out],
        &out_dir,
        &["l.csv: line 3", "\"yes\" is not an integer"],
    );
}

#[test]
fn refuses_bed_intervals_outside_the_reference() {
    let dir = tempfile::tempdir().unwrap();
    let (out_dir, out) = out_in(dir.path());
    let fa = test_data("chr22_slice/chr22_slice.fa");
    let past = test_data("chr22_slice/bad_past_end.bed");
    assert_refused(
        &[
            past.to_str().unwrap(),
            "--reference",
            fa.to_str().unwrap(),
            "-o",
            &out,
        ],
        &out_dir,
        &["bad_past_end.bed: line 1", "past the end of chr22_slice"],
    );
    let unknown = test_data("chr22_slice/bad_unknown_chrom.bed");
    assert_refused(
        &[
            unknown.to_str().unwrap(),
            "--reference",
            fa.to_str().unwrap(),
            "-o",
            &out,
        ],
        &out_dir,
        &[
            "bad_unknown_chrom.bed: line 1",
            "\"chrUn_nonexistent\" is not in the reference",
        ],
    );
}

#[test]
fn refuses_a_missing_output_folder() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no/such/dir/x.safetensors");
    let csv = test_data("gue_prom_core_all/dev.csv");
    let out = bin()
        .args([csv.to_str().unwrap(), "-o", missing.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let msg = String::from_utf8_lossy(&out.stderr);
    assert!(
        msg.contains("output folder") && msg.contains("does not exist"),
        "{msg}"
    );
    assert!(!dir.path().join("no").exists());
}

#[test]
fn refuses_records_too_long_with_overflow_error() {
    let dir = tempfile::tempdir().unwrap();
    let (out_dir, out) = out_in(dir.path());
    let csv = test_data("gue_prom_core_all/dev.csv");
    assert_refused(
        &[
            csv.to_str().unwrap(),
            "--max-length",
            "50",
            "--overflow",
            "error",
            "-o",
            &out,
        ],
        &out_dir,
        &["dev.csv: line 2", "longer than the maximum of 48"],
    );
}

#[test]
fn row_lengths_that_cannot_fit_in_memory_are_refused_before_allocating() {
    // u64::MAX overflowed a capacity computation (a panic); 10^9 allocated until the OOM killer.
    let dir = tempfile::tempdir().unwrap();
    let (out_dir, out) = out_in(dir.path());
    let csv = test_data("gue_prom_core_all/dev.csv");
    for l in ["18446744073709551615", "1000000000"] {
        assert_refused(
            &[csv.to_str().unwrap(), "--max-length", l, "-o", &out],
            &out_dir,
            &["--max-length", "--window"],
        );
    }
}

#[test]
fn an_output_that_is_an_input_is_refused_and_the_input_kept() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("in.csv");
    std::fs::copy(test_data("gue_prom_core_all/dev.csv"), &csv).unwrap();
    let before = std::fs::read(&csv).unwrap();
    for out in [csv.clone(), dir.path().join(".").join("in.csv")] {
        let o = bin()
            .args([csv.to_str().unwrap(), "-o", out.to_str().unwrap()])
            .output()
            .unwrap();
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{e}");
        assert!(e.contains("would destroy the input"), "{e}");
    }
    // The index written beside -o must not replace the input either.
    let idx_named = dir.path().join("x.index.tsv");
    std::fs::copy(&csv, &idx_named).unwrap();
    let o = bin()
        .args([idx_named.to_str().unwrap(), "-o"])
        .arg(dir.path().join("x.safetensors"))
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(std::fs::read(&csv).unwrap(), before, "input changed");
    assert_eq!(std::fs::read(&idx_named).unwrap(), before, "input changed");
}
