//! Variant-effect scoring with a bi-strand model: the TSV, VCF and bedGraph outputs, the LLR
//! convention, and the datasets and checkpoints that are refused.

mod common;

use std::path::{Path, PathBuf};

use candle_core::Device;
use common::*;
use luminome_engine::checkpoint::{save_checkpoint, CheckpointMeta};
use luminome_engine::input::InputSpec;
use luminome_engine::models::bistrand::{BiStrandConfig, PairInput};
use luminome_engine::{BuiltModel, ModelConfig};
use luminome_io::pair_dataset::Pairing;
use luminome_io::token_dataset::TokenizerInfo;

/// A reference, a VCF (a multi-allelic SNV, an indel, a REF mismatch, two SNVs on one position)
/// and the variant dataset of its SNVs.
fn inputs(dir: &Path, pairing: &str) -> (PathBuf, PathBuf) {
    let reference = dir.join("ref.fa");
    std::fs::write(&reference, ">I\nACGTACGTACGTACGTACGTGCATGCATGCATGCATGCAT\n").unwrap();
    let vcf = dir.join("v.vcf");
    std::fs::write(
        &vcf,
        "##fileformat=VCFv4.3\n##contig=<ID=I,length=40>\n#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\nI\t21\trs1\tG\tA,T\t.\tPASS\t.\nI\t22\trs2\tC\tCA\t.\tPASS\t.\nI\t24\trs4\tC\tG\t.\tPASS\t.\nI\t30\trs5\tA\tG\t.\tPASS\t.\n",
    )
    .unwrap();
    let ds = dir.join(format!("v_{pairing}.safetensors"));
    mask_pairs(&[
        "--reference",
        reference.to_str().unwrap(),
        "--variants",
        vcf.to_str().unwrap(),
        "--window",
        "16",
        "--pairing",
        pairing,
        "-o",
        ds.to_str().unwrap(),
    ])
    .unwrap();
    (vcf, ds)
}

fn bistrand_checkpoint(dest: &Path, pairing: Pairing) {
    let config = ModelConfig::from(BiStrandConfig {
        vocab_size: 10,
        d_model: 8,
        num_layers: 1,
        d_state: 4,
        expand: 2,
        d_conv: 3,
        dt_rank: 1,
        cross_heads: 2,
        cross_attention: true,
        tie_strands: false,
        max_length: 64,
        dropout: 0.0,
        layer_norm_eps: 1e-5,
        encoder: None,
    });
    let built = BuiltModel::new(&config, &Device::Cpu, 5).unwrap();
    let meta = CheckpointMeta::new(
        config,
        InputSpec::TokenPairs(TokenizerInfo::nucleotide(false, false), pairing),
        vec![],
        "test",
        "",
    );
    save_checkpoint(dest, &meta, &built.varmap).unwrap();
}

/// The untrained complement-paired bi-strand model most tests score with, as `dir/m.safetensors`.
fn complement_model(dir: &Path) -> PathBuf {
    let ckpt = dir.join("m.safetensors");
    bistrand_checkpoint(&ckpt, Pairing::Complement);
    ckpt
}

#[test]
fn variants_are_scored_into_a_tsv_a_vcf_and_a_bedgraph() {
    let dir = tempfile::tempdir().unwrap();
    let (vcf, ds) = inputs(dir.path(), "complement");
    let ckpt = complement_model(dir.path());
    let p = |n: &str| dir.path().join(n).display().to_string();
    let o = predict(&[
        "--checkpoint",
        ckpt.to_str().unwrap(),
        "--dataset",
        ds.to_str().unwrap(),
        "-o",
        &p("s.tsv"),
        "--vcf",
        &p("s.vcf.gz"),
        "--bedgraph",
        &p("s.bedgraph"),
        "--threads",
        "1",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let tsv = std::fs::read_to_string(p("s.tsv")).unwrap();
    let lines: Vec<&str> = tsv.lines().collect();
    assert_eq!(
        lines[0],
        "record\tname\tchrom\tpos\tid\tref\talt\tref_match\tllr\tllr_a\tllr_b"
    );
    assert_eq!(lines.len(), 5, "rs1 A, rs1 T, rs4 G, rs5 G:\n{tsv}");
    // The LLR is ln P(ALT) - ln P(REF) from each head, their mean combined; strand B is scored on
    // the complementary bases.
    let input = PairInput::open(&ckpt, &ds, Device::Cpu).unwrap();
    let lp = input.log_probs(&[0, 1, 2, 3]).unwrap();
    let (lp_a, lp_b) = (lp.a, lp.b);
    let class = |b: &str| ["A", "C", "G", "T"].iter().position(|x| *x == b).unwrap();
    for (i, line) in lines[1..].iter().enumerate() {
        let f: Vec<&str> = line.split('\t').collect();
        let (r, a) = (class(f[5]), class(f[6]));
        let (llr, llr_a, llr_b): (f32, f32, f32) = (
            f[8].parse().unwrap(),
            f[9].parse().unwrap(),
            f[10].parse().unwrap(),
        );
        assert!((llr_a - (lp_a[i][a] - lp_a[i][r])).abs() < 1e-5, "{line}");
        assert!(
            (llr_b - (lp_b[i][3 - a] - lp_b[i][3 - r])).abs() < 1e-5,
            "{line}"
        );
        assert!((llr - 0.5 * (llr_a + llr_b)).abs() < 2e-6, "{line}");
    }
    assert!(
        lines[3].contains("\trs4\tC\tG\t0\t"),
        "rs4's REF disagrees: {}",
        lines[3]
    );
    // The VCF: every input record, scores in INFO, declared; the indel untouched.
    let gz = std::fs::read(p("s.vcf.gz")).unwrap();
    assert_eq!(&gz[12..14], b"BC", "BGZF");
    let mut text = String::new();
    use std::io::Read;
    flate2::read::MultiGzDecoder::new(&gz[..])
        .read_to_string(&mut text)
        .unwrap();
    assert!(text.contains("##INFO=<ID=LLR,Number=A,Type=Float"));
    assert!(text.contains("##INFO=<ID=LLR_B,Number=A,Type=Float"));
    // What wrote it, as bcftools says so: the tool, its version and the command.
    assert!(text.contains("\n##source=luminome-predict\n"), "{text}");
    assert!(text.contains("\n##luminome_predictVersion="), "{text}");
    let command = text
        .lines()
        .find_map(|l| l.strip_prefix("##luminome_predictCommand="))
        .unwrap();
    assert!(
        command.contains("--vcf") && command.contains("s.vcf.gz"),
        "{command}"
    );
    let records: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(records.len(), 4);
    // Its tabix index beside it (records are sorted), naming the contig it indexes.
    let mut tbi = Vec::new();
    flate2::read::MultiGzDecoder::new(&std::fs::read(p("s.vcf.gz.tbi")).unwrap()[..])
        .read_to_end(&mut tbi)
        .unwrap();
    assert_eq!(&tbi[..4], b"TBI\x01", "a tabix index");
    assert!(tbi.windows(2).any(|w| w == b"I\0"), "indexes contig I");
    assert!(
        records[0].contains("\tLLR=") && records[0].contains(";REF_MATCH=1"),
        "{}",
        records[0]
    );
    assert!(
        records[1].ends_with("\t."),
        "the indel has no score: {}",
        records[1]
    );
    assert!(records[2].contains("REF_MATCH=0"), "{}", records[2]);
    let source = std::fs::read_to_string(&vcf).unwrap();
    let src: Vec<&str> = source.lines().filter(|l| !l.starts_with('#')).collect();
    for (a, b) in records.iter().zip(&src) {
        let fixed = |l: &str| l.split('\t').take(7).collect::<Vec<_>>().join("\t");
        assert_eq!(fixed(a), fixed(b));
    }
    // The bedGraph: one line per position, the lower LLR of rs1's two alleles.
    let bg = std::fs::read_to_string(p("s.bedgraph")).unwrap();
    let bg: Vec<&str> = bg.lines().skip(1).collect();
    assert_eq!(bg.len(), 3);
    let llr = |i: usize| lines[i].split('\t').nth(8).unwrap().parse::<f32>().unwrap();
    let v: f32 = bg[0].split('\t').nth(3).unwrap().parse().unwrap();
    assert!(
        bg[0].starts_with("I\t20\t21\t") && (v - llr(1).min(llr(2))).abs() < 1e-5,
        "{bg:?}"
    );
}

#[test]
fn datasets_and_checkpoints_that_do_not_fit_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (_, ds) = inputs(dir.path(), "complement");
    let (_, alleles) = inputs(dir.path(), "alleles");
    let ckpt = complement_model(dir.path());
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let o = out.join("s.tsv").display().to_string();
    let refused = |args: &[&str], expect: &[&str]| {
        let r = predict(args);
        let e = String::from_utf8_lossy(&r.stderr).into_owned();
        assert_eq!(r.status.code(), Some(1), "{e}");
        for x in expect {
            assert!(e.contains(x), "{x:?} not in {e}");
        }
        assert!(files_in(&out).is_empty());
    };
    // A model trained on complement pairs, a dataset of allele pairs.
    refused(
        &[
            "--checkpoint",
            ckpt.to_str().unwrap(),
            "--dataset",
            alleles.to_str().unwrap(),
            "-o",
            &o,
        ],
        &[
            "v_alleles.safetensors",
            "alleles pairs",
            "complement pairs",
            "--pairing complement",
        ],
    );
    // A classifier checkpoint given to variant scoring.
    refused(
        &[
            "--checkpoint",
            fixture_checkpoint("gated").to_str().unwrap(),
            "--dataset",
            ds.to_str().unwrap(),
            "-o",
            &o,
        ],
        &[
            "v_complement.safetensors: a paired dataset",
            "sequence classifier in",
            "tiny_gated.safetensors reads token ids",
        ],
    );
    // A bi-strand checkpoint given a token dataset.
    let tok = dir.path().join("tok.safetensors");
    write_dataset(&tok, &[rec("ACGT", None)], 8);
    refused(
        &[
            "--checkpoint",
            ckpt.to_str().unwrap(),
            "--dataset",
            tok.to_str().unwrap(),
            "-o",
            &o,
        ],
        &[
            "tok.safetensors: a token dataset",
            "bi-strand masked LM",
            "reads paired strands",
        ],
    );
    // --vcf for a dataset that is not variant windows.
    let pairs = dir.path().join("pairs.safetensors");
    luminome_engine::testing::write_pair_dataset(&pairs, &[b"ACGTACGTAC".to_vec()], 0.2, 1)
        .unwrap();
    refused(
        &[
            "--checkpoint",
            ckpt.to_str().unwrap(),
            "--dataset",
            pairs.to_str().unwrap(),
            "-o",
            &o,
            "--vcf",
            out.join("x.vcf").to_str().unwrap(),
        ],
        &[
            "pairs.safetensors",
            "--vcf, --bedgraph and --npz need a dataset of variant windows",
        ],
    ); // --variants naming another file than the dataset's: a scored record moved (line 6, I:24,
       // is now I:25).
    let moved = dir.path().join("moved.vcf");
    std::fs::write(
        &moved,
        "##fileformat=VCFv4.3\n##contig=<ID=I,length=40>\n#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\nI\t21\trs1\tG\tA,T\t.\tPASS\t.\nI\t22\trs2\tC\tCA\t.\tPASS\t.\nI\t25\trs4\tC\tG\t.\tPASS\t.\nI\t30\trs5\tA\tG\t.\tPASS\t.\n",
    )
    .unwrap();
    let vcf_out = out.join("s.vcf.gz").display().to_string();
    let with_variants = |variants: &Path| {
        vec![
            "--checkpoint".to_string(),
            ckpt.display().to_string(),
            "--dataset".into(),
            ds.display().to_string(),
            "-o".into(),
            o.clone(),
            "--vcf".into(),
            vcf_out.clone(),
            "--variants".into(),
            variants.display().to_string(),
        ]
    };
    let args = with_variants(&moved);
    refused(
        &args.iter().map(String::as_str).collect::<Vec<_>>(),
        &[
            "moved.vcf: line 6 is I:25",
            "was I:24",
            "the file the dataset was built from",
        ],
    );
    // ... or a file that lacks some of the scored records.
    let fewer = dir.path().join("fewer.vcf");
    std::fs::write(
        &fewer,
        "##fileformat=VCFv4.3\n##contig=<ID=I,length=40>\n#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\nI\t21\trs1\tG\tA,T\t.\tPASS\t.\n",
    )
    .unwrap();
    let args = with_variants(&fewer);
    refused(
        &args.iter().map(String::as_str).collect::<Vec<_>>(),
        &["fewer.vcf: 2 of the dataset's 4 scored alleles are not in this file"],
    );
}

#[test]
fn the_llr_track_can_be_a_bigwig_with_the_reference_sizes() {
    let dir = tempfile::tempdir().unwrap();
    let (_, ds) = inputs(dir.path(), "complement");
    let ckpt = complement_model(dir.path());
    let p = |n: &str| dir.path().join(n).display().to_string();
    let run = |track: &str| {
        predict(&[
            "--checkpoint",
            ckpt.to_str().unwrap(),
            "--dataset",
            ds.to_str().unwrap(),
            "-o",
            &p("s.tsv"),
            "--bigwig",
            &p(track),
            "--threads",
            "1",
        ])
    };
    // Chromosome sizes from the reference the dataset was built from.
    let o = run("s.bw");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o2 = run("s.bedgraph");
    assert!(o2.status.success());
    let bg: Vec<(String, u64, u64, f32)> = std::fs::read_to_string(p("s.bedgraph"))
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (
                f[0].to_string(),
                f[1].parse().unwrap(),
                f[2].parse().unwrap(),
                f[3].parse().unwrap(),
            )
        })
        .collect();
    let mut bw = luminome_io::bigwig::BigWigTrack::open(std::path::Path::new(&p("s.bw"))).unwrap();
    let mut from_bw = Vec::new();
    let mut chroms: Vec<String> = bg.iter().map(|r| r.0.clone()).collect();
    chroms.dedup();
    for c in chroms {
        for i in bw.signal(&c).unwrap() {
            from_bw.push((c.clone(), i.start, i.end, i.value));
        }
    }
    assert_eq!(from_bw, bg, "the bigWig holds the bedGraph's intervals");
}

/// A dataset moved with its VCF to another folder still finds the VCF it was built from (by
/// its name beside the dataset); without it the error names every place tried and --variants.
#[test]
fn a_moved_dataset_finds_its_variants_file_beside_it() {
    let dir = tempfile::tempdir().unwrap();
    let built = dir.path().join("built");
    std::fs::create_dir(&built).unwrap();
    let (_vcf, ds) = inputs(&built, "complement");
    let ckpt = complement_model(dir.path());
    let moved = dir.path().join("moved");
    std::fs::rename(&built, &moved).unwrap();
    let ds = moved.join(ds.file_name().unwrap());
    let out = |n: &str| dir.path().join(n).display().to_string();
    let run = |vcf: &str| {
        predict(&[
            "--checkpoint",
            ckpt.to_str().unwrap(),
            "--dataset",
            ds.to_str().unwrap(),
            "-o",
            &out("s.tsv"),
            "--vcf",
            vcf,
            "--threads",
            "1",
        ])
    };
    let o = run(&out("s.vcf"));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(std::fs::read_to_string(out("s.vcf"))
        .unwrap()
        .contains("rs1"));
    std::fs::remove_file(moved.join("v.vcf")).unwrap();
    let o = run(&out("t.vcf"));
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(
        e.contains("is not at") && e.contains("moved") && e.contains("give --variants"),
        "{e}"
    );
    assert!(!std::path::Path::new(&out("t.vcf")).exists());
}

/// `--saturate` scored by a bi-strand model: --npz puts the interval's nine substitutions on one
/// row, each where the TSV has it.
#[test]
fn a_bistrand_model_writes_the_saturation_npz() {
    let dir = tempfile::tempdir().unwrap();
    let (_, _) = inputs(dir.path(), "complement");
    let p = |n: &str| dir.path().join(n).display().to_string();
    std::fs::write(p("s.bed"), "I\t20\t23\n").unwrap();
    mask_pairs(&[
        "--reference",
        &p("ref.fa"),
        "--saturate",
        &p("s.bed"),
        "--window",
        "16",
        "-o",
        &p("sat.safetensors"),
    ])
    .unwrap();
    let ckpt = complement_model(dir.path());
    let o = predict(&[
        "--checkpoint",
        ckpt.to_str().unwrap(),
        "--dataset",
        &p("sat.safetensors"),
        "-o",
        &p("s.tsv"),
        "--npz",
        &p("s.npz"),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut zip = zip::ZipArchive::new(std::fs::File::open(p("s.npz")).unwrap()).unwrap();
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut zip.by_name("ism.npy").unwrap(), &mut bytes).unwrap();
    let ism = npyz::NpyFile::new(&bytes[..]).unwrap();
    assert_eq!(ism.shape(), &[1, 4, 3]);
    let ism: Vec<f32> = ism.into_vec().unwrap();
    let rows = read_tsv(Path::new(&p("s.tsv")));
    assert_eq!(rows.len(), 9);
    for r in &rows {
        assert_eq!(r["id"], "I:21-23");
        let offset = r["pos"].parse::<usize>().unwrap() - 21;
        let alt = "ACGT".find(r["alt"].as_str()).unwrap();
        let llr: f32 = r["llr"].parse().unwrap();
        assert!((ism[alt * 3 + offset] - llr).abs() < 1e-5, "{r:?}");
    }
    assert_eq!(
        ism.iter().filter(|&&x| x == 0.0).count(),
        3,
        "the genome's own bases"
    );
}

/// `-o x.tsv.gz` and `--bedgraph x.bedgraph.gz` write gzip: the same text as the plain names.
#[test]
fn gz_names_write_the_same_text_gzip_compressed() {
    let dir = tempfile::tempdir().unwrap();
    let (_, ds) = inputs(dir.path(), "complement");
    let ckpt = complement_model(dir.path());
    let p = |n: &str| dir.path().join(n).display().to_string();
    for (tsv, track) in [("s.tsv", "s.bedgraph"), ("s.tsv.gz", "s.bedgraph.gz")] {
        let o = predict(&[
            "--checkpoint",
            ckpt.to_str().unwrap(),
            "--dataset",
            ds.to_str().unwrap(),
            "-o",
            &p(tsv),
            "--bedgraph",
            &p(track),
            "-q",
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    for (plain, gz) in [("s.tsv", "s.tsv.gz"), ("s.bedgraph", "s.bedgraph.gz")] {
        let mut text = String::new();
        let file = std::fs::File::open(p(gz)).unwrap();
        std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(file), &mut text).unwrap();
        assert_eq!(text, std::fs::read_to_string(p(plain)).unwrap(), "{gz}");
    }
}
