//! luminome-importance end to end: scores against the PyTorch reference, the TSV / bedGraph /
//! npz outputs and their coordinate mapping, refused inputs.

use std::path::{Path, PathBuf};
use std::process::Command;

use candle_core::{Device, Tensor};
use luminome_engine::checkpoint::read_safetensors;
use luminome_engine::models::classifier::AdapterKind;
use luminome_importance::args::{Method, Reduce};
use luminome_importance::methods::{token_scores, MethodOptions};
use luminome_importance::Input as ClassifierInput;
use luminome_io::token_dataset::{
    IndexRow, TokenDatasetWriter, TokenDatasetWriterOptions, TokenRow,
};

/// The fixture of bench/engine/torch_reference.py, kept with luminome-predict's tests.
fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../luminome-predict/tests/fixtures/torch_reference")
}

fn checkpoint(adapter: &str) -> PathBuf {
    fixture_dir().join(format!("tiny_{adapter}.safetensors"))
}

fn expected(name: &str) -> Tensor {
    read_safetensors(&fixture_dir().join("expected.safetensors"), &Device::Cpu)
        .unwrap()
        .1[name]
        .clone()
}

/// (sequence, label, coords) records as a nucleotide token dataset padded to `max_length`.
fn write_dataset(dest: &Path, recs: &[(&str, Option<i64>, &str)], max_length: usize) {
    let mut w = TokenDatasetWriter::new(TokenDatasetWriterOptions {
        dest: dest.to_path_buf(),
        tokenizer: luminome_engine::testing::nucleotide_tokenizer(),
        max_length: Some(max_length),
        has_labels: recs.iter().all(|r| r.1.is_some()),
        has_soft_mask: false,
        shard_records: None,
        rc: "none".into(),
        sources: vec![],
        tool: "luminome-importance tests".into(),
        tool_version: "0".into(),
        command_line: String::new(),
    })
    .unwrap();
    for (i, (seq, label, coords)) in recs.iter().enumerate() {
        let mut ids = luminome_engine::testing::encode(seq.as_bytes());
        ids.resize(max_length, 0);
        let strand = if coords.ends_with("(-)") { '-' } else { '+' };
        w.push(TokenRow {
            ids: &ids,
            soft_mask: None,
            label: *label,
            index: IndexRow {
                record: i as u64,
                shard: 0,
                name: format!("seq{i}"),
                interval: luminome_io::token_dataset::Interval::parse_v1(coords),
                seq_length: seq.len() as u64,
                window_offset: 0,
                window_length: seq.len() as u64,
                strand,
            },
        })
        .unwrap();
    }
    w.finish().unwrap();
}

fn fixture_dataset(dir: &Path) -> PathBuf {
    let ds = dir.join("fixture.safetensors");
    write_dataset(
        &ds,
        &[
            ("ACGTTATAGC", Some(0), "."),
            ("GGCATTA", Some(1), "."),
            ("TTGA", Some(0), "."),
        ],
        12,
    );
    ds
}

fn assert_close(what: &str, got: &[Vec<f32>], want: &[Vec<f32>], tol: f32) {
    for (r, (g, w)) in got.iter().zip(want).enumerate() {
        for (p, (a, b)) in g.iter().zip(w).enumerate() {
            assert!(
                (a - b).abs() <= tol * (1.0 + b.abs()),
                "{what}: record {r} position {p}: luminome {a} vs torch {b}"
            );
        }
    }
}

#[test]
fn saliency_ig_and_gates_match_the_pytorch_reference() {
    let dir = tempfile::tempdir().unwrap();
    let ds = fixture_dataset(dir.path());
    for adapter in ["cls", "mean", "max", "gated"] {
        let input = ClassifierInput::open(&checkpoint(adapter), &ds, Device::Cpu).unwrap();
        let batch = input.batch(&[0, 1, 2]).unwrap();
        for (method, name) in [(Method::Saliency, "saliency"), (Method::Ig, "ig")] {
            let opts = MethodOptions {
                method,
                reduce: Reduce::Mean,
                ig_steps: 32,
            };
            let got = token_scores(&input, &batch, &[1, 1, 1], &opts).unwrap();
            let want = expected(&format!("{adapter}.{name}"))
                .to_vec2::<f32>()
                .unwrap();
            assert_close(&format!("{adapter} {name}"), &got, &want, 1e-3);
        }
    }
    let input = ClassifierInput::open(&checkpoint("gated"), &ds, Device::Cpu).unwrap();
    let batch = input.batch(&[0, 1, 2]).unwrap();
    let gates = expected("gated.gates"); // [B, L, D]
    for (reduce, want) in [
        (Reduce::Mean, gates.mean(2).unwrap()),
        (
            Reduce::L2,
            gates.sqr().unwrap().sum(2).unwrap().sqrt().unwrap(),
        ),
        (Reduce::Max, gates.max(2).unwrap()),
    ] {
        let opts = MethodOptions {
            method: Method::Gates,
            reduce,
            ig_steps: 1,
        };
        let got = token_scores(&input, &batch, &[1, 1, 1], &opts).unwrap();
        assert_close(
            &format!("gates {reduce:?}"),
            &got,
            &want.to_vec2::<f32>().unwrap(),
            1e-4,
        );
    }
}

#[test]
fn integrated_gradients_add_up_to_the_change_of_the_explained_output() {
    // Completeness: Σ_i IG_i = f(x) − f(baseline), up to the Riemann error of 128 steps; for
    // the transformer (token embeddings) and for the CNN averaging both strands (one-hot
    // input, through the reverse-complement gathers).
    let dir = tempfile::tempdir().unwrap();
    let ds = fixture_dataset(dir.path());
    let cnn = dir.path().join("cnn.safetensors");
    luminome_engine::testing::write_cnn_checkpoint(&cnn, AdapterKind::Gated, true).unwrap();
    for ck in [checkpoint("mean"), cnn] {
        let input = ClassifierInput::open(&ck, &ds, Device::Cpu).unwrap();
        let batch = input.batch(&[0]).unwrap();
        let opts = MethodOptions {
            method: Method::Ig,
            reduce: Reduce::Mean,
            ig_steps: 128,
        };
        let ig: f32 = token_scores(&input, &batch, &[1], &opts).unwrap()[0]
            .iter()
            .sum();
        let clf = input.model().unwrap();
        let t = luminome_engine::batch_tensors(&batch, &Device::Cpu).unwrap();
        let emb = clf.embed(&t.ids).unwrap();
        let special: Vec<f32> = batch
            .input_ids
            .iter()
            .map(|&id| if id <= 2 { 1.0 } else { 0.0 })
            .collect();
        let keep = Tensor::from_vec(special, (1, batch.max_length, 1), &Device::Cpu).unwrap();
        let f = |e: &Tensor| {
            let l = clf
                .forward_from_embeddings(e, &t.mask, None)
                .unwrap()
                .logits
                .to_vec2::<f32>()
                .unwrap();
            l[0][1] - (l[0][0] + l[0][1]) / 2.0
        };
        let delta = f(&emb) - f(&emb.broadcast_mul(&keep).unwrap());
        assert!(delta.abs() > 1e-4, "{}: nothing to explain", ck.display());
        assert!(
            (ig - delta).abs() < 1e-3 * (1.0 + delta.abs()),
            "{}: Σ IG {ig} vs f(x) − f(x') {delta}",
            ck.display()
        );
    }
}

fn importance(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_luminome-importance"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn tsv_bedgraph_and_npz_place_scores_on_tokens_bases_and_the_genome() {
    let dir = tempfile::tempdir().unwrap();
    let ds = dir.path().join("genomic.safetensors");
    // A minus-strand row of chr1:100-110, a plus-strand row of chr1:200-205, one without coords.
    write_dataset(
        &ds,
        &[
            ("ACGTTATAGC", Some(1), "chr1:100-110(-)"),
            ("GGCAT", Some(1), "chr1:200-205(+)"),
            ("TTGA", Some(0), "."),
        ],
        12,
    );
    let (tsv, bg, npz) = (
        dir.path().join("g.tsv"),
        dir.path().join("g.bedgraph"),
        dir.path().join("g.npz"),
    );
    let ckpt = checkpoint("gated");
    let o = importance(&[
        "--checkpoint",
        ckpt.to_str().unwrap(),
        "--dataset",
        ds.to_str().unwrap(),
        "--method",
        "gates",
        "-o",
        tsv.to_str().unwrap(),
        "--bedgraph",
        bg.to_str().unwrap(),
        "--npz",
        npz.to_str().unwrap(),
        "--batch-size",
        "2",
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(
        stderr.contains("1 of 3 records have no genomic coordinates"),
        "{stderr}"
    );
    // TSV: one line per base token (10 + 5 + 4), positions after [CLS].
    let text = std::fs::read_to_string(&tsv).unwrap();
    let lines: Vec<Vec<&str>> = text
        .lines()
        .skip(1)
        .map(|l| l.split('\t').collect())
        .collect();
    assert_eq!(
        text.lines().next().unwrap(),
        "record\tname\tposition\ttoken\tstart\tend\tscore"
    );
    assert_eq!(lines.len(), 19);
    assert_eq!(lines[0][..6], ["0", "seq0", "1", "A", "0", "1"]);
    let score = |rec: &str, start: &str| -> f32 {
        lines.iter().find(|l| l[0] == rec && l[4] == start).unwrap()[6]
            .parse()
            .unwrap()
    };
    // bedGraph: row base 0 of the minus row is genomic base 109; row base 9 is base 100.
    let bedgraph = std::fs::read_to_string(&bg).unwrap();
    let mut value_at = std::collections::HashMap::new();
    for l in bedgraph.lines().skip(1) {
        let f: Vec<&str> = l.split('\t').collect();
        let (s, e): (u64, u64) = (f[1].parse().unwrap(), f[2].parse().unwrap());
        for p in s..e {
            value_at.insert((f[0].to_string(), p), f[3].parse::<f32>().unwrap());
        }
    }
    assert!(bedgraph.starts_with("track type=bedGraph"));
    assert_eq!(
        value_at.len(),
        15,
        "10 + 5 bases placed, the coordinate-less record left out"
    );
    assert_eq!(value_at[&("chr1".to_string(), 109)], score("0", "0"));
    assert_eq!(value_at[&("chr1".to_string(), 100)], score("0", "9"));
    assert_eq!(value_at[&("chr1".to_string(), 200)], score("1", "0"));
    assert_eq!(value_at[&("chr1".to_string(), 204)], score("1", "4"));
    assert!(!value_at.contains_key(&("chr1".to_string(), 110)));
    // npz: read back in Rust (zip + npy); numpy when available.
    let file = std::fs::File::open(&npz).unwrap();
    let mut zip = zip::ZipArchive::new(file).unwrap();
    let mut read = |name: &str| {
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut zip.by_name(name).unwrap(), &mut bytes).unwrap();
        bytes
    };
    let contrib_bytes = read("contrib.npy");
    let contrib = npyz::NpyFile::new(&contrib_bytes[..]).unwrap();
    assert_eq!(contrib.shape(), &[3, 4, 10]);
    let contrib: Vec<f32> = contrib.into_vec().unwrap();
    let onehot: Vec<f32> = npyz::NpyFile::new(&read("onehot.npy")[..])
        .unwrap()
        .into_vec()
        .unwrap();
    // Record 1 (GGCAT): position 2 is C (row 1), its contribution is its token's score.
    let at = |v: &[f32], n: usize, b: usize, i: usize| v[n * 40 + b * 10 + i];
    assert_eq!(at(&onehot, 1, 1, 2), 1.0);
    assert_eq!(
        at(&onehot, 1, 0, 2) + at(&onehot, 1, 2, 2) + at(&onehot, 1, 3, 2),
        0.0
    );
    assert_eq!(at(&contrib, 1, 1, 2), score("1", "2"));
    // Past the 5 bases of record 1: all zero.
    assert!((0..4).all(|b| at(&onehot, 1, b, 7) == 0.0 && at(&contrib, 1, b, 7) == 0.0));
    let has_numpy = luminome_io::python_probe::python_can_import("numpy", "numpy.load of the npz");
    if has_numpy {
        let script = "import numpy as np, sys\n\
            d = np.load(sys.argv[1])\n\
            assert d['contrib'].shape == (3, 4, 10) and d['onehot'].shape == (3, 4, 10)\n\
            assert d['record'].tolist() == [0, 1, 2] and d['length'].tolist() == [10, 5, 4]\n\
            assert (d['onehot'].sum(axis=1) <= 1).all()\n\
            assert np.allclose(d['contrib'], d['contrib'] * d['onehot'])\n";
        let o = Command::new("python3")
            .args(["-c", script, npz.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
}

#[test]
fn only_label_and_records_select_what_is_scored() {
    let dir = tempfile::tempdir().unwrap();
    let ds = fixture_dataset(dir.path()); // labels 0, 1, 0
    let tsv = dir.path().join("s.tsv");
    let ckpt = checkpoint("mean");
    let o = importance(&[
        "--checkpoint",
        ckpt.to_str().unwrap(),
        "--dataset",
        ds.to_str().unwrap(),
        "--method",
        "saliency",
        "--only-label",
        "0",
        "--records",
        "1",
        "-o",
        tsv.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&tsv).unwrap();
    let records: std::collections::BTreeSet<&str> = text
        .lines()
        .skip(1)
        .map(|l| l.split('\t').next().unwrap())
        .collect();
    assert_eq!(records.into_iter().collect::<Vec<_>>(), ["0"]);
}

#[test]
fn gates_of_a_model_without_the_gated_adapter_are_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let ds = fixture_dataset(dir.path());
    let tsv = dir.path().join("x.tsv");
    let npz = dir.path().join("x.npz");
    let ckpt = checkpoint("max");
    let o = importance(&[
        "--checkpoint",
        ckpt.to_str().unwrap(),
        "--dataset",
        ds.to_str().unwrap(),
        "--method",
        "gates",
        "-o",
        tsv.to_str().unwrap(),
        "--npz",
        npz.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("needs a DynamicGated model") && err.contains("adapter is max"),
        "{err}"
    );
    assert!(!tsv.exists() && !npz.exists());
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        leftovers.len(),
        2,
        "only the dataset and its index: {leftovers:?}"
    );
}

#[test]
fn a_sequence_longer_than_the_model_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let ds = dir.path().join("long.safetensors");
    write_dataset(&ds, &[("ACGTACGTACGTA", Some(0), ".")], 16);
    let tsv = dir.path().join("x.tsv");
    let ckpt = checkpoint("gated");
    let o = importance(&[
        "--checkpoint",
        ckpt.to_str().unwrap(),
        "--dataset",
        ds.to_str().unwrap(),
        "--method",
        "ig",
        "-o",
        tsv.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("record 1 (seq0)") && err.contains("max length 12"),
        "{err}"
    );
    assert!(!tsv.exists());
}

/// Reads the ISM TSV: per record, per position (base, [ΔA, ΔC, ΔG, ΔT], score).
#[allow(clippy::type_complexity)]
fn read_ism(path: &Path) -> Vec<Vec<(String, [f32; 4], f32)>> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next().unwrap(),
        "record\tname\tposition\tbase\tA\tC\tG\tT\tscore"
    );
    let mut out: Vec<Vec<(String, [f32; 4], f32)>> = Vec::new();
    for l in lines {
        let f: Vec<&str> = l.split('\t').collect();
        let (r, p): (usize, usize) = (f[0].parse().unwrap(), f[2].parse().unwrap());
        if out.len() <= r {
            out.resize(r + 1, Vec::new());
        }
        assert_eq!(out[r].len(), p, "positions in order");
        let d = [4, 5, 6, 7].map(|i| f[i].parse::<f32>().unwrap());
        out[r].push((f[3].to_string(), d, f[8].parse().unwrap()));
    }
    out
}

#[test]
fn ism_is_the_change_of_the_explained_output_on_each_mutated_sequence() {
    let dir = tempfile::tempdir().unwrap();
    let seqs = ["ACGTTATAGC", "GGNAT"];
    let ds = dir.path().join("ism.safetensors");
    write_dataset(
        &ds,
        &[
            (seqs[0], Some(1), "chr1:100-110(-)"),
            (seqs[1], Some(0), "."),
        ],
        12,
    );
    let (tsv, npz, bg) = (
        dir.path().join("ism.tsv"),
        dir.path().join("ism.npz"),
        dir.path().join("ism.bedgraph"),
    );
    let ckpt = checkpoint("gated");
    let o = importance(&[
        "--checkpoint",
        ckpt.to_str().unwrap(),
        "--dataset",
        ds.to_str().unwrap(),
        "--method",
        "ism",
        "-o",
        tsv.to_str().unwrap(),
        "--npz",
        npz.to_str().unwrap(),
        "--bedgraph",
        bg.to_str().unwrap(),
        "--ism-rows",
        "7",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let ism = read_ism(&tsv);
    assert_eq!(ism.len(), 2);

    // Every single-base substitution of each record as its own row, scored by the library.
    let mut rows: Vec<(String, Option<i64>, &str)> = Vec::new();
    for s in seqs {
        rows.push((s.to_string(), Some(0), "."));
        for p in 0..s.len() {
            for b in ["A", "C", "G", "T"] {
                let mut m = s.to_string();
                m.replace_range(p..p + 1, b);
                rows.push((m, Some(0), "."));
            }
        }
    }
    let mutants = dir.path().join("mutants.safetensors");
    let refs: Vec<(&str, Option<i64>, &str)> =
        rows.iter().map(|(s, l, c)| (s.as_str(), *l, *c)).collect();
    write_dataset(&mutants, &refs, 12);
    let input = ClassifierInput::open(&ckpt, &mutants, Device::Cpu).unwrap();
    let all: Vec<usize> = (0..rows.len()).collect();
    // Two classes: the explained output is logit[1] − mean(logits).
    let f: Vec<f32> = input
        .logits(&all)
        .unwrap()
        .iter()
        .map(|l| l[1] - (l[0] + l[1]) / 2.0)
        .collect();
    let mut row = 0;
    for (r, s) in seqs.iter().enumerate() {
        let reference = f[row];
        row += 1;
        assert_eq!(ism[r].len(), s.len());
        for (p, (base, delta, score)) in ism[r].iter().enumerate() {
            assert_eq!(base, &s[p..p + 1]);
            let mut alts = Vec::new();
            for (a, b) in ["A", "C", "G", "T"].iter().enumerate() {
                let want = if *b == base { 0.0 } else { f[row] - reference };
                row += 1;
                assert!(
                    (delta[a] - want).abs() < 1e-5,
                    "record {r} position {p} → {b}: ISM {} vs {want}",
                    delta[a]
                );
                if *b != base {
                    alts.push(want);
                }
            }
            // An N has four substitutions; a known base three.
            assert_eq!(alts.len(), if base == "N" { 4 } else { 3 });
            let mean = alts.iter().sum::<f32>() / alts.len() as f32;
            assert!((score + mean).abs() < 1e-5, "score {score} vs {}", -mean);
        }
    }
    // npz: ism (2, 4, 10) holds the TSV's changes; contrib = one-hot × score.
    let mut zip = zip::ZipArchive::new(std::fs::File::open(&npz).unwrap()).unwrap();
    let mut read = |name: &str| {
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut zip.by_name(name).unwrap(), &mut bytes).unwrap();
        bytes
    };
    let ism_npy = read("ism.npy");
    let arr = npyz::NpyFile::new(&ism_npy[..]).unwrap();
    assert_eq!(arr.shape(), &[2, 4, 10]);
    let arr: Vec<f32> = arr.into_vec().unwrap();
    let contrib: Vec<f32> = npyz::NpyFile::new(&read("contrib.npy")[..])
        .unwrap()
        .into_vec()
        .unwrap();
    for (r, positions) in ism.iter().enumerate() {
        for (p, (base, delta, score)) in positions.iter().enumerate() {
            for (a, b) in ["A", "C", "G", "T"].iter().enumerate() {
                assert_eq!(arr[r * 40 + a * 10 + p], delta[a]);
                let want = if b == base { *score } else { 0.0 };
                assert_eq!(contrib[r * 40 + a * 10 + p], want);
            }
        }
    }
    // bedGraph: the minus-strand record's 10 bases, the record without coordinates left out.
    let track = std::fs::read_to_string(&bg).unwrap();
    let placed: Vec<&str> = track.lines().filter(|l| l.starts_with("chr1\t")).collect();
    assert!(!placed.is_empty() && placed.len() <= 10, "{track}");
}

#[test]
fn ism_rows_of_zero_are_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let ds = fixture_dataset(dir.path());
    let out = dir.path().join("x.tsv");
    // --ism-rows 0 is refused before anything is read.
    let o = importance(&[
        "--checkpoint",
        checkpoint("mean").to_str().unwrap(),
        "--dataset",
        ds.to_str().unwrap(),
        "--method",
        "ism",
        "--ism-rows",
        "0",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--ism-rows"));
    assert!(!out.exists());
}

#[test]
fn ism_positions_mutate_only_the_bases_inside_the_intervals() {
    let dir = tempfile::tempdir().unwrap();
    let ds = dir.path().join("g.safetensors");
    write_dataset(
        &ds,
        &[
            ("ACGTTATAGC", Some(1), "chr1:100-110(-)"),
            ("GGCAT", Some(1), "chr2:200-205(+)"),
            ("TTGA", Some(0), "."),
        ],
        12,
    );
    let bed = dir.path().join("p.bed");
    std::fs::write(&bed, "chr1\t103\t106\n").unwrap();
    let ckpt = checkpoint("mean");
    let run = |out: &Path, extra: &[&str]| {
        let mut args = vec![
            "--checkpoint",
            ckpt.to_str().unwrap(),
            "--dataset",
            ds.to_str().unwrap(),
            "--method",
            "ism",
            "-o",
            out.to_str().unwrap(),
        ];
        args.extend(extra);
        importance(&args)
    };
    let (all, some) = (dir.path().join("all.tsv"), dir.path().join("some.tsv"));
    assert!(run(&all, &[]).status.success());
    let o = run(&some, &["--positions", bed.to_str().unwrap()]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{e}");
    assert!(
        e.contains("1 records without genomic coordinates and 1 with no base in its intervals"),
        "{e}"
    );
    // Minus strand: offset o is base 109 − o, so bases 103..106 are offsets 4, 5, 6 — with the
    // changes of the full run.
    let all = read_ism(&all);
    let text = std::fs::read_to_string(&some).unwrap();
    let positions: Vec<&str> = text
        .lines()
        .skip(1)
        .map(|l| l.split('\t').nth(2).unwrap())
        .collect();
    assert_eq!(positions, ["4", "5", "6"]);
    assert!(text.lines().skip(1).all(|l| l.starts_with("0\t")));
    let restricted: Vec<_> = text
        .lines()
        .skip(1)
        .map(|l| {
            l.split('\t')
                .skip(4)
                .take(4)
                .map(|v| v.parse::<f32>().unwrap())
                .collect::<Vec<_>>()
        })
        .collect();
    for (row, p) in restricted.iter().zip([4, 5, 6]) {
        for (got, want) in row.iter().zip(all[0][p].1) {
            assert!((got - want).abs() < 1e-6);
        }
    }
    // Not for the other methods; nothing inside the intervals is an error.
    let other = dir.path().join("other.tsv");
    let o = importance(&[
        "--checkpoint",
        ckpt.to_str().unwrap(),
        "--dataset",
        ds.to_str().unwrap(),
        "--method",
        "saliency",
        "--positions",
        bed.to_str().unwrap(),
        "-o",
        other.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--positions restricts --method ism"));
    std::fs::write(&bed, "chr9\t0\t10\n").unwrap();
    let o = run(&other, &["--positions", bed.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr)
        .contains("no selected record has a base in its intervals"));
    assert!(!other.exists());
}
