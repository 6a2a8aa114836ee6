//! Bad input refused with the file and line named, and nothing written.

mod common;

use common::*;

#[test]
fn peaks_on_unknown_contigs_or_past_the_end_are_refused() {
    assert_refused(
        with(
            base_args(),
            "--peaks",
            Some(&data("chr22_slice/bad_unknown_chrom.bed")),
        ),
        "bad_unknown_chrom.bed: line 1",
        "not a sequence of the reference",
    );
    assert_refused(
        with(
            base_args(),
            "--peaks",
            Some(&data("chr22_slice/bad_past_end.bed")),
        ),
        "bad_past_end.bed: line 1",
        "past the end",
    );
}

#[test]
fn inverted_peak_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = temp_file(
        dir.path(),
        "inv.bed",
        "chr22_slice\t100\t200\nchr22_slice\t500\t400\n",
    );
    assert_refused(
        with(base_args(), "--peaks", Some(p.to_str().unwrap())),
        "inv.bed: line 2",
        "less than end",
    );
}

#[test]
fn accessibility_chromosome_names_are_checked_and_mapped_on_request() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(data("chr22_slice/acc.K562.bedgraph")).unwrap();
    let p = temp_file(
        dir.path(),
        "renamed.bedgraph",
        &text.replace("chr22_slice", "22_slice"),
    );
    let args = with(
        base_args(),
        "--accessibility",
        Some(&format!("K562={}", p.display())),
    );
    assert_refused(
        args.clone(),
        "renamed.bedgraph",
        "--acc-chrom-names add-chr",
    );
    let mut mapped = args;
    mapped.extend(["--acc-chrom-names".to_string(), "add-chr".to_string()]);
    // GM12878's file keeps chr names, so map only makes sense with one cell type here.
    let mapped = with(
        mapped,
        "--accessibility",
        Some(&format!("K562={}", p.display())),
    );
    let i = mapped.iter().rposition(|a| a == "--accessibility").unwrap();
    let mut mapped = mapped;
    mapped.drain(i..i + 2);
    let ei = mapped.iter().rposition(|a| a == "--expression").unwrap();
    mapped.drain(ei..ei + 2);
    let out = dir.path().join("d.safetensors");
    let o = run(&mapped, &out);
    assert!(o.status.success(), "{}", stderr(&o));
    let regions = read_tsv(&dir.path().join("d.regions.tsv"));
    assert_ne!(regions[0]["acc_raw:K562"], "0");
}

#[test]
fn accessibility_past_the_chromosome_end_is_refused_with_its_line() {
    // The slice is 200,000 bases. A fragment ending at 2^64-1 used to be counted in every
    // region after its start; one ending past the slice (another assembly) was accepted.
    let dir = tempfile::tempdir().unwrap();
    for (name, row, needle) in [
        (
            "huge_fragments.tsv",
            "chr22_slice\t2300\t18446744073709551615\tB-1\t1",
            "past any chromosome",
        ),
        (
            "long_fragments.tsv",
            "chr22_slice\t199990\t200010\tB-1\t1",
            "past the end of chr22_slice (length 200000",
        ),
        (
            "long.bedgraph",
            "chr22_slice\t199990\t200010\t1.5",
            "past the end of chr22_slice (length 200000",
        ),
    ] {
        let text = if name.ends_with(".bedgraph") {
            format!("chr22_slice\t2400\t2500\t2\n{row}\n")
        } else {
            format!("chr22_slice\t2400\t2500\tA-1\t1\n{row}\n")
        };
        let p = temp_file(dir.path(), name, &text);
        let args = with(
            base_args(),
            "--accessibility",
            Some(&format!("K562={}", p.display())),
        );
        assert_refused(args, &format!("{name}: line 2"), needle);
    }
}

#[test]
fn bad_motif_files_are_refused_with_their_line() {
    let dir = tempfile::tempdir().unwrap();
    let zero = temp_file(
        dir.path(),
        "zero.meme",
        "MEME version 4\n\nALPHABET= ACGT\n\nMOTIF Z1\nletter-probability matrix: alength= 4 w= 2\n0.25 0.25 0.25 0.25\n0 0 0 0\n",
    );
    let args = with(base_args(), "--motifs", Some(zero.to_str().unwrap()));
    assert_refused(
        with(args, "--motif-clusters", None),
        "zero.meme: line 8",
        "sums to zero",
    );
    let protein = temp_file(
        dir.path(),
        "protein.meme",
        "MEME version 4\n\nALPHABET= ACDEFGHIKLMNPQRSTVWY\n",
    );
    let args = with(base_args(), "--motifs", Some(protein.to_str().unwrap()));
    assert_refused(
        with(args, "--motif-clusters", None),
        "protein.meme: line 3",
        "not DNA",
    );
}

#[test]
fn a_zero_probability_with_a_pvalue_threshold_is_refused_naming_the_motif() {
    // --pseudocount 0 on a count of 0: log-odds -inf, on which TFMPvalue negated i64::MIN.
    let dir = tempfile::tempdir().unwrap();
    let jaspar = temp_file(
        dir.path(),
        "zeros.jaspar",
        ">MA0001.1 Z\nA [ 4 1 ]\nC [ 0 1 ]\nG [ 0 1 ]\nT [ 0 1 ]\n",
    );
    let args = with(base_args(), "--motifs", Some(jaspar.to_str().unwrap()));
    let mut args = with(args, "--motif-clusters", None);
    if args.iter().any(|a| a == "--pseudocount") {
        args = with(args, "--pseudocount", Some("0"));
    } else {
        args.extend(["--pseudocount".to_string(), "0".to_string()]);
    }
    assert_refused(
        args,
        "zeros.jaspar: line 1",
        "\"MA0001.1\" position 1: base C",
    );
}

#[test]
fn duplicate_genes_in_the_expression_table_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = temp_file(dir.path(), "dup.tsv", "GCAT\t1.0\nEIF3L\t2.0\nGCAT\t3.0\n");
    let mut args = base_args();
    let i = args
        .iter()
        .position(|a| a.starts_with("K562=") && a.contains("tpm"))
        .unwrap();
    args[i] = format!("K562={}", p.display());
    assert_refused(args, "dup.tsv: line 3", "appears twice");
}

#[test]
fn non_finite_motif_settings_and_huge_region_counts_are_refused() {
    // --pseudocount nan / inf panicked inside lightmotif-tfmpvalue; --score-threshold nan gave
    // all-zero motif features; --n-regions 10^8 aborted on allocation with temp files left.
    for (flag, value) in [
        ("--pseudocount", "nan"),
        ("--pseudocount", "inf"),
        ("--score-threshold", "nan"),
        ("--n-regions", "100000000"),
    ] {
        let mut args = base_args();
        if flag == "--score-threshold" {
            args.extend([flag.to_string(), value.to_string()]);
        } else if args.iter().any(|a| a == flag) {
            args = with(args, flag, Some(value));
        } else {
            args.extend([flag.to_string(), value.to_string()]);
        }
        // Rust prints NaN as "NaN".
        assert_refused(args, flag, &value.replace("nan", "NaN"));
    }
}

#[test]
fn an_output_that_is_an_input_is_refused_and_the_input_kept() {
    let dir = tempfile::tempdir().unwrap();
    let reference = dir.path().join("ref.fa");
    std::fs::copy(data("chr22_slice/chr22_slice.fa"), &reference).unwrap();
    std::fs::copy(
        data("chr22_slice/chr22_slice.fa.fai"),
        dir.path().join("ref.fa.fai"),
    )
    .unwrap();
    let before = std::fs::read(&reference).unwrap();
    let args = with(
        base_args(),
        "--reference",
        Some(reference.to_str().unwrap()),
    );
    let o = run(&args, &reference);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(
        e.contains("would destroy the input") && e.contains("--reference"),
        "{e}"
    );
    assert_eq!(std::fs::read(&reference).unwrap(), before);
}

#[test]
fn a_damaged_bigwig_is_refused_naming_it_not_a_panic() {
    // Four bytes flipped inside a compressed data block: bigtools unwraps the BadData it meets
    // (a panic before this was caught at our boundary).
    let dir = tempfile::tempdir().unwrap();
    let bw = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/acc.K562.slice.bw");
    let mut bytes = std::fs::read(bw).unwrap();
    for b in &mut bytes[3898..3902] {
        *b ^= 0xff;
    }
    let damaged = dir.path().join("damaged.bw");
    std::fs::write(&damaged, &bytes).unwrap();
    let args = with(
        base_args(),
        "--accessibility",
        Some(&format!("K562={}", damaged.display())),
    );
    // assert_refused also checks that no "panicked" reached stderr and nothing was left.
    assert_refused(args, "damaged.bw", "corrupt data");
}

#[test]
fn bedgraph_values_that_are_not_coverages_are_refused_with_their_line() {
    // NaN reached the features; inf and negatives were taken as they are.
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(data("chr22_slice/acc.K562.bedgraph")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    for bad in ["nan", "inf", "-2"] {
        let mut f: Vec<String> = lines[1].split('\t').map(String::from).collect();
        f[3] = bad.to_string();
        let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
        out[1] = f.join("\t");
        let p = temp_file(dir.path(), "bad.bedgraph", &(out.join("\n") + "\n"));
        let args = with(
            base_args(),
            "--accessibility",
            Some(&format!("K562={}", p.display())),
        );
        assert_refused(args, "bad.bedgraph: line 2", "not a coverage");
    }
}

#[test]
fn get_feature_scales_without_accessibility_are_refused_naming_the_flag() {
    // GET's regions are each cell type's accessible regions: without cell types there are none.
    let mut args = with(base_args(), "--accessibility", None);
    args = with(args, "--accessibility", None);
    args = with(args, "--expression", None);
    args = with(args, "--expression", None);
    for scale in ["get", "get-quantitative"] {
        let mut a = args.clone();
        a.extend(["--feature-scale".into(), scale.into()]);
        assert_refused(
            a,
            &format!("--feature-scale {scale}"),
            "needs accessibility per cell type (--accessibility",
        );
    }
}
