//! Published models (Caduceus/PlantCaduceus checkpoint folders): zero-shot variant scores through
//! luminome-mask-pairs --like and luminome-predict against the authors' model
//! (tests/fixtures/caduceus/variants/expected_llr.tsv, bench/reference/caduceus/
//! make_variant_scores.py), and what is refused.

mod common;
use common::{caduceus_fixtures, mask_pairs, predict, read_tsv};

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The fixture's SNVs in 41-base windows, in `model`'s vocabulary.
fn dataset(dir: &Path, model: &str) -> PathBuf {
    let v = caduceus_fixtures().join("variants");
    let ds = dir.join(format!("{model}.safetensors"));
    mask_pairs(&[
        "--reference",
        v.join("ref.fa").to_str().unwrap(),
        "--variants",
        v.join("snvs.vcf").to_str().unwrap(),
        "--window",
        "41",
        "--like",
        caduceus_fixtures().join(model).to_str().unwrap(),
        "-o",
        ds.to_str().unwrap(),
    ])
    .unwrap();
    ds
}

/// (id, alt) → (llr_fwd, llr_rc, llr) of the authors' model.
fn expected(model: &str) -> HashMap<(String, String), [f64; 3]> {
    let text =
        std::fs::read_to_string(caduceus_fixtures().join("variants/expected_llr.tsv")).unwrap();
    text.lines()
        .skip(1)
        .map(|l| l.split('\t').collect::<Vec<_>>())
        .filter(|f| f[0] == model)
        .map(|f| {
            let x = |i: usize| f[i].parse::<f64>().unwrap();
            ((f[1].to_string(), f[4].to_string()), [x(5), x(6), x(7)])
        })
        .collect()
}

#[test]
fn zero_shot_scores_match_the_authors_model_on_both_strands() {
    let dir = tempfile::tempdir().unwrap();
    for model in ["ps_rcps_fused", "ph_fused"] {
        let ds = dataset(dir.path(), model);
        let out = dir.path().join(format!("{model}.tsv"));
        let vcf = dir.path().join(format!("{model}.vcf"));
        let ckpt = caduceus_fixtures().join(model);
        let run = predict(&[
            "--checkpoint",
            ckpt.to_str().unwrap(),
            "--dataset",
            ds.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--vcf",
            vcf.to_str().unwrap(),
            "-q",
        ]);
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        let want = expected(model);
        let rows = read_tsv(&out);
        assert_eq!(rows.len(), want.len(), "{model}: one row per ALT allele");
        for r in &rows {
            let w = want[&(r["id"].clone(), r["alt"].clone())];
            for (col, i) in [("llr_fwd", 0), ("llr_rc", 1), ("llr", 2)] {
                let got: f64 = r[col].parse().unwrap();
                assert!(
                    (got - w[i]).abs() < 1e-4,
                    "{model} {} {}: {col} {got} vs the authors' {}",
                    r["id"],
                    r["alt"],
                    w[i]
                );
            }
        }
        // The VCF carries the same scores, declared, one value per ALT (snv5 has two).
        let text = std::fs::read_to_string(&vcf).unwrap();
        assert!(text.contains("##INFO=<ID=LLR,Number=A,Type=Float"));
        let snv5 = text.lines().find(|l| l.contains("\tsnv5\t")).unwrap();
        let llr = snv5
            .split("LLR=")
            .nth(1)
            .unwrap()
            .split(';')
            .next()
            .unwrap();
        let want5 = [
            &want[&("snv5".into(), "A".into())],
            &want[&("snv5".into(), "T".into())],
        ];
        for (v, w) in llr.split(',').zip(want5) {
            assert!((v.parse::<f64>().unwrap() - w[2]).abs() < 1e-4, "{snv5}");
        }
    }
}

#[test]
fn forward_strand_only_is_plantcaduceus_script_score() {
    let dir = tempfile::tempdir().unwrap();
    let model = "ph_fused";
    let ds = dataset(dir.path(), model);
    let out = dir.path().join("fwd.tsv");
    let run = predict(&[
        "--checkpoint",
        caduceus_fixtures().join(model).to_str().unwrap(),
        "--dataset",
        ds.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--strands",
        "forward",
    ]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let want = expected(model);
    for r in read_tsv(&out) {
        let w = want[&(r["id"].clone(), r["alt"].clone())];
        let llr: f64 = r["llr"].parse().unwrap();
        assert!((llr - w[0]).abs() < 1e-4, "{}: {llr} vs {}", r["id"], w[0]);
        assert_eq!(r["llr_rc"], "NA");
    }
}

#[test]
fn a_dataset_in_another_vocabulary_is_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let ds = dataset(dir.path(), "ps_rcps_fused");
    let out = dir.path().join("x.tsv");
    let run = predict(&[
        "--checkpoint",
        caduceus_fixtures().join("ph_fused").to_str().unwrap(),
        "--dataset",
        ds.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(!run.status.success());
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(
        err.contains("another vocabulary") && err.contains("--like"),
        "{err}"
    );
    assert!(!out.exists());
}

#[test]
fn a_mistyped_or_uncached_hub_name_says_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let ds = dataset(dir.path(), "ps_rcps_fused");
    let out = dir.path().join("x.tsv");
    for (name, want) in [
        ("hf:kuleshov-group", "hf:ORG/NAME"),
        ("hf:kuleshov-group/PlantCaduceus_l20", "HF_HUB_OFFLINE"),
    ] {
        let run = Command::new(env!("CARGO_BIN_EXE_luminome-predict"))
            .args([
                "--checkpoint",
                name,
                "--dataset",
                ds.to_str().unwrap(),
                "-o",
            ])
            .arg(&out)
            .env("HF_HUB_OFFLINE", "1")
            .env("HF_HOME", dir.path().join("hf-home"))
            .output()
            .unwrap();
        assert!(!run.status.success());
        let err = String::from_utf8_lossy(&run.stderr);
        assert!(err.contains(want), "{name}: {err}");
        assert!(!out.exists());
    }
    // mask-pairs --like reads the vocabulary through the same path.
    let e = mask_pairs(&[
        "--reference",
        caduceus_fixtures()
            .join("variants/ref.fa")
            .to_str()
            .unwrap(),
        "--variants",
        caduceus_fixtures()
            .join("variants/snvs.vcf")
            .to_str()
            .unwrap(),
        "--like",
        "hf:org/",
        "-o",
        dir.path().join("y.safetensors").to_str().unwrap(),
    ])
    .unwrap_err();
    assert!(format!("{e:#}").contains("hf:ORG/NAME"), "{e:#}");
    assert!(!dir.path().join("y.safetensors").exists());
}

#[test]
fn a_ref_disagreeing_with_the_reference_is_scored_and_flagged() {
    let dir = tempfile::tempdir().unwrap();
    let v = caduceus_fixtures().join("variants");
    // snv1's REF is T; claim G.
    let text = std::fs::read_to_string(v.join("snvs.vcf"))
        .unwrap()
        .replace("\tsnv1\tT\tA", "\tsnv1\tG\tA");
    let vcf = dir.path().join("bad_ref.vcf");
    std::fs::write(&vcf, text).unwrap();
    let ds = dir.path().join("ds.safetensors");
    mask_pairs(&[
        "--reference",
        v.join("ref.fa").to_str().unwrap(),
        "--variants",
        vcf.to_str().unwrap(),
        "--window",
        "41",
        "--like",
        caduceus_fixtures().join("ps_rcps_fused").to_str().unwrap(),
        "-o",
        ds.to_str().unwrap(),
    ])
    .unwrap();
    let out = dir.path().join("s.tsv");
    let run = predict(&[
        "--checkpoint",
        caduceus_fixtures().join("ps_rcps_fused").to_str().unwrap(),
        "--dataset",
        ds.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let rows = read_tsv(&out);
    let snv1 = rows.iter().find(|r| r["id"] == "snv1").unwrap();
    assert_eq!(snv1["ref_match"], "0");
    assert_eq!(snv1["ref"], "G");
    assert!(rows
        .iter()
        .filter(|r| r["id"] != "snv1")
        .all(|r| r["ref_match"] == "1"));
}

/// `mask-pairs --saturate`: every base of the intervals to each of the three others, scored as
/// the same substitutions written as a VCF are (in-silico saturation mutagenesis, zero-shot);
/// a row per substitution, the bedGraph's lowest LLR per base, and no VCF to annotate.
#[test]
fn saturation_scores_every_substitution_as_a_vcf_of_them_would() {
    let dir = tempfile::tempdir().unwrap();
    let v = caduceus_fixtures().join("variants");
    let model = caduceus_fixtures().join("ps_rcps_fused");
    let reference = std::fs::read_to_string(v.join("ref.fa")).unwrap();
    let bases: String = reference.lines().skip(1).collect();
    // Two intervals (0-based half-open): 57..61 and 110..112, six bases.
    let bed = dir.path().join("sites.bed");
    std::fs::write(&bed, "chrT\t57\t61\nchrT\t110\t112\n").unwrap();
    let mut vcf = String::from("##fileformat=VCFv4.2\n##contig=<ID=chrT,length=400>\n#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n");
    for pos0 in (57..61).chain(110..112) {
        let r = bases.as_bytes()[pos0].to_ascii_uppercase() as char;
        let alts: Vec<String> = "ACGT"
            .chars()
            .filter(|&b| b != r)
            .map(String::from)
            .collect();
        vcf += &format!(
            "chrT\t{}\t.\t{r}\t{}\t.\tPASS\t.\n",
            pos0 + 1,
            alts.join(",")
        );
    }
    let vcf_path = dir.path().join("all.vcf");
    std::fs::write(&vcf_path, vcf).unwrap();
    let fasta = v.join("ref.fa");
    let mut scores = Vec::new();
    for (flag, input) in [("--saturate", &bed), ("--variants", &vcf_path)] {
        let ds = dir.path().join(format!("{}.safetensors", &flag[2..]));
        let args = [
            "--reference",
            fasta.to_str().unwrap(),
            flag,
            input.to_str().unwrap(),
            "--window",
            "41",
            "--like",
            model.to_str().unwrap(),
            "-o",
            ds.to_str().unwrap(),
        ];
        mask_pairs(&args).unwrap();
        let (out, track) = (dir.path().join("s.tsv"), dir.path().join("s.bedgraph"));
        let npz = dir.path().join(format!("{}.npz", &flag[2..]));
        let mut args = vec![
            "--checkpoint",
            model.to_str().unwrap(),
            "--dataset",
            ds.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--bedgraph",
            track.to_str().unwrap(),
            "-q",
        ];
        if flag == "--saturate" {
            args.extend(["--npz", npz.to_str().unwrap()]);
        }
        let run = predict(&args);
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        let mut rows: Vec<(u64, String, String, f64)> = read_tsv(&out)
            .iter()
            .map(|r| {
                let pos = r["pos"].parse().unwrap();
                (
                    pos,
                    r["ref"].clone(),
                    r["alt"].clone(),
                    r["llr"].parse().unwrap(),
                )
            })
            .collect();
        rows.sort_by(|a, b| (a.0, &a.2).cmp(&(b.0, &b.2)));
        let track_lines = std::fs::read_to_string(&track).unwrap().lines().count();
        if flag == "--saturate" {
            // The variant ID names the interval (1-based, as window_region).
            let ids: std::collections::BTreeSet<String> =
                read_tsv(&out).iter().map(|r| r["id"].clone()).collect();
            assert_eq!(ids, ["chrT:111-112", "chrT:58-61"].map(String::from).into());
            saturation_npz_holds_the_tsv(&npz, &rows);
        }
        scores.push((rows, track_lines));
        if flag == "--saturate" {
            // No VCF records behind it: --vcf is refused, naming why.
            let run = predict(&[
                "--checkpoint",
                model.to_str().unwrap(),
                "--dataset",
                ds.to_str().unwrap(),
                "-o",
                dir.path().join("x.tsv").to_str().unwrap(),
                "--vcf",
                dir.path().join("x.vcf").to_str().unwrap(),
            ]);
            let err = String::from_utf8_lossy(&run.stderr);
            assert!(!run.status.success() && err.contains("--saturate"), "{err}");
            assert!(!dir.path().join("x.vcf").exists());
        } else {
            // --npz is for saturated intervals, not a VCF's scattered variants.
            let run = predict(&[
                "--checkpoint",
                model.to_str().unwrap(),
                "--dataset",
                ds.to_str().unwrap(),
                "-o",
                dir.path().join("x.tsv").to_str().unwrap(),
                "--npz",
                npz.to_str().unwrap(),
            ]);
            let err = String::from_utf8_lossy(&run.stderr);
            assert!(!run.status.success() && err.contains("--npz"), "{err}");
            assert!(!npz.exists() && !dir.path().join("x.tsv").exists());
        }
    }
    let (saturated, vcf_scored) = (&scores[0], &scores[1]);
    assert_eq!(
        saturated.0.len(),
        18,
        "three substitutions of each of six bases"
    );
    assert!(saturated.0.iter().all(|r| r.1 != r.2));
    assert_eq!(saturated.0.len(), vcf_scored.0.len());
    for (a, b) in saturated.0.iter().zip(&vcf_scored.0) {
        assert_eq!((a.0, &a.1, &a.2), (b.0, &b.1, &b.2));
        assert!((a.3 - b.3).abs() < 1e-6, "{a:?} vs {b:?}");
    }
    assert!(
        saturated.0.iter().any(|r| r.3.abs() > 1e-3),
        "scores that move"
    );
    // The track: the bases of the two intervals (adjacent equal values may merge).
    assert_eq!(saturated.1, vcf_scored.1);
}

/// The --npz of the two saturated intervals (57..61, 110..112): one row each in BED order,
/// padded to the longer; each substitution's LLR where the TSV has it, 0 at the genome's base,
/// contrib = one-hot × −mean LLR.
fn saturation_npz_holds_the_tsv(npz: &Path, rows: &[(u64, String, String, f64)]) {
    let mut zip = zip::ZipArchive::new(std::fs::File::open(npz).unwrap()).unwrap();
    let mut bytes = |name: &str| {
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut zip.by_name(name).unwrap(), &mut bytes).unwrap();
        bytes
    };
    // The interval's chromosome as numpy text: '<U4', UTF-32 little-endian, two rows.
    let chrom = bytes("chrom.npy");
    let text = String::from_utf8_lossy(&chrom);
    assert!(
        text.contains("'descr': '<U4'") && text.contains("(2, )"),
        "{text}"
    );
    let utf32: Vec<u8> = "chrT".bytes().flat_map(|b| [b, 0, 0, 0]).collect();
    assert_eq!(&chrom[chrom.len() - 32..], [utf32.clone(), utf32].concat());
    let mut read = |name: &str| npyz::NpyFile::new(std::io::Cursor::new(bytes(name))).unwrap();
    let ism = read("ism.npy");
    assert_eq!(ism.shape(), &[2, 4, 4]);
    let ism: Vec<f32> = ism.into_vec().unwrap();
    let contrib: Vec<f32> = read("contrib.npy").into_vec().unwrap();
    let onehot: Vec<f32> = read("onehot.npy").into_vec().unwrap();
    assert_eq!(read("start.npy").into_vec::<i64>().unwrap(), [57, 110]);
    assert_eq!(read("end.npy").into_vec::<i64>().unwrap(), [61, 112]);
    let at = |n: usize, b: usize, i: u64| n * 16 + b * 4 + i as usize;
    for (pos, reference, alt, llr) in rows {
        let (n, offset) = if *pos <= 61 {
            (0, pos - 58)
        } else {
            (1, pos - 111)
        };
        let base = |s: &str| "ACGT".find(s).unwrap();
        assert!((ism[at(n, base(alt), offset)] as f64 - llr).abs() < 1e-5);
        assert_eq!(ism[at(n, base(reference), offset)], 0.0);
        assert_eq!(onehot[at(n, base(reference), offset)], 1.0);
        let mean: f64 = rows
            .iter()
            .filter(|r| r.0 == *pos)
            .map(|r| r.3)
            .sum::<f64>()
            / 3.0;
        assert!((contrib[at(n, base(reference), offset)] as f64 + mean).abs() < 1e-5);
    }
    assert_eq!(onehot.iter().sum::<f32>(), 6.0, "six scored bases");
    assert!((0..4).all(|b| (2..4).all(|i| onehot[at(1, b, i)] == 0.0 && ism[at(1, b, i)] == 0.0)));
}
