//! Bad input refused: a clear message naming the file and line or record, a non-zero exit and
//! nothing at the output path.

mod common;

use common::*;

#[test]
fn a_mask_fraction_outside_zero_one_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let o = out.join("p.safetensors").display().to_string();
    for f in ["0", "1", "1.5", "-0.1", "nan"] {
        let flag = format!("--mask-fraction={f}");
        assert_refused(
            &[
                "--fasta",
                &test_data("ecoli/ecoli_50kb.fa.gz"),
                &flag,
                "-o",
                &o,
            ],
            &out,
            &["--mask-fraction must be in (0, 1)"],
        );
    }
}

#[test]
fn a_ref_allele_that_disagrees_with_the_reference_can_be_refused_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let (reference, vcf) = variant_inputs(dir.path());
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    assert_refused(
        &[
            "--reference",
            reference.to_str().unwrap(),
            "--variants",
            vcf.to_str().unwrap(),
            "--window",
            "16",
            "--ref-mismatch",
            "error",
            "-o",
            out.join("v.safetensors").to_str().unwrap(),
        ],
        &out,
        &["v.vcf", "line 9", "REF C of I:24 is T"],
    );
}

#[test]
fn chromosome_names_missing_from_the_reference_are_listed_with_a_hint() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let table = write(
        dir.path(),
        "v.tsv",
        "chrI\t3080\tgk1\tA\tT\nchrII\t7\tgk2\tG\tA\nchrI\t3412\tgk3\tG\tA\n",
    );
    let dest = out.join("v.safetensors").display().to_string();
    let reference = test_data("celegans/celegans_small.fa");
    let e = assert_refused(
        &[
            "--reference",
            &reference,
            "--variants",
            table.to_str().unwrap(),
            "-o",
            &dest,
        ],
        &out,
        &[
            "v.tsv",
            "chrI (2 records, first at line 1)",
            "chrII (1 records, first at line 2)",
            "--chrom-names toggle-chr",
        ],
    );
    assert!(e.contains("the reference has I, II"), "{e}");
    let o = run(&[
        "--reference",
        &reference,
        "--variants",
        table.to_str().unwrap(),
        "--window",
        "64",
        "--chrom-names",
        "toggle-chr",
        "-o",
        &dest,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn paired_records_of_different_lengths_or_names_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let dest = out.join("p.safetensors").display().to_string();
    let a = write(dir.path(), "a.fa", ">r1\nACGT\n>r2\nACGTAC\n");
    let b_len = write(dir.path(), "b_len.fa", ">r1\nACGT\n>r2\nACGTA\n");
    let b_name = write(dir.path(), "b_name.fa", ">r1\nACGT\n>r3\nACGTAC\n");
    assert_refused(
        &[
            "--fasta-a",
            a.to_str().unwrap(),
            "--fasta-b",
            b_len.to_str().unwrap(),
            "-o",
            &dest,
        ],
        &out,
        &["b_len.fa", "record 2", "r2", "5 bases", "has 6"],
    );
    assert_refused(
        &[
            "--fasta-a",
            a.to_str().unwrap(),
            "--fasta-b",
            b_name.to_str().unwrap(),
            "-o",
            &dest,
        ],
        &out,
        &["b_name.fa", "record 2", "r3", "names differ"],
    );
    let p = write(dir.path(), "p.fa", ">x/1\nACGT\n>y/2\nACGT\n");
    assert_refused(
        &["--paired", p.to_str().unwrap(), "-o", &dest],
        &out,
        &["p.fa", "record 2", "expected x/2"],
    );
}

#[test]
fn a_window_with_only_n_is_left_out_and_a_file_with_nothing_left_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let fa = write(dir.path(), "n.fa", ">n\nNNNNNNNNNNNNNNNN\n");
    assert_refused(
        &[
            "--fasta",
            fa.to_str().unwrap(),
            "--window",
            "8",
            "-o",
            out.join("p.safetensors").to_str().unwrap(),
        ],
        &out,
        &["no pairs to write", "windows_over_max_n 2"],
    );
}

#[test]
fn an_output_that_is_an_input_is_refused_and_the_input_kept() {
    let dir = tempfile::tempdir().unwrap();
    let fasta = dir.path().join("in.fa");
    std::fs::copy(test_data("celegans/celegans_small.fa"), &fasta).unwrap();
    let before = std::fs::read(&fasta).unwrap();
    let o = run(&[
        "--fasta",
        fasta.to_str().unwrap(),
        "--window",
        "128",
        "-o",
        fasta.to_str().unwrap(),
    ]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(
        e.contains("would destroy the input") && e.contains("--fasta"),
        "{e}"
    );
    assert_eq!(std::fs::read(&fasta).unwrap(), before);
}

#[test]
fn saturate_intervals_off_the_reference_are_refused_with_their_line() {
    let dir = tempfile::tempdir().unwrap();
    let (reference, _) = variant_inputs(dir.path());
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    for (bed, says) in [
        (
            "I\t10\t20\nchrZ\t0\t5\n",
            "line 2: chromosome chrZ is not in the reference",
        ),
        (
            "I\t10\t20\nI\t30\t100000\n",
            "line 2: end 100000 is past the end of I",
        ),
        ("# nothing\n", "no intervals to saturate"),
    ] {
        let bed = write(dir.path(), "s.bed", bed);
        assert_refused(
            &[
                "--reference",
                reference.to_str().unwrap(),
                "--saturate",
                bed.to_str().unwrap(),
                "--window",
                "16",
                "-o",
                out.join("s.safetensors").to_str().unwrap(),
            ],
            &out,
            &["s.bed", says],
        );
    }
}
