//! `luminome-importance --method deepliftshap` against tangermeme's `deep_lift_shap` on the same
//! references (CNNs and transformers), and its completeness on every adapter and on both strands. The fixture
//! (tests/fixtures/deeplift_tangermeme, README there) was computed once by
//! bench/importance/deeplift_tangermeme.py; no PyTorch here.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use candle_core::{Device, Tensor};
use luminome_engine::checkpoint::read_safetensors;
use luminome_engine::models::classifier::AdapterKind;

/// Largest |luminome − tangermeme| accepted on a hypothetical contribution. Both sides run the
/// same f32 model on the same pairs; DeepLIFT divides output changes by input changes (down to
/// 1e-6, below which the plain gradient takes over), which can magnify rounding. The fixture
/// was measured at ≤ 3.8e-7 on the CNNs (values up to 0.28) and ≤ 2.3e-6 on the transformers
/// (up to 0.61; README); 1e-5 leaves room for another summation order while a missing or wrong rule (a product treated as linear, the plain
/// gradient at a nonlinearity) moves values by far more.
const TOL: f32 = 1e-5;

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/deeplift_tangermeme")
}

/// The outputs of one run: TSV rows (record, base, A..T, score) and the npz arrays.
struct Run {
    tsv: Vec<(u64, char, [f32; 4], f32)>,
    npz: HashMap<String, (Vec<f32>, Vec<u64>)>,
}

fn importance(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_luminome-importance"))
        .args(args)
        .output()
        .unwrap()
}

fn deeplift(checkpoint: &Path, dataset: &Path, dir: &Path, extra: &[&str]) -> Run {
    let (tsv, npz) = (dir.join("dls.tsv"), dir.join("dls.npz"));
    let o = importance(
        &[
            "--checkpoint",
            checkpoint.to_str().unwrap(),
            "--dataset",
            dataset.to_str().unwrap(),
            "--method",
            "deepliftshap",
            "-o",
            tsv.to_str().unwrap(),
            "--npz",
            npz.to_str().unwrap(),
        ]
        .into_iter()
        .chain(extra.iter().copied())
        .collect::<Vec<_>>(),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = std::fs::read_to_string(&tsv)
        .unwrap()
        .lines()
        .skip(1)
        .map(|line| {
            let f: Vec<&str> = line.split('\t').collect();
            let v = |i: usize| f[i].parse::<f32>().unwrap();
            (
                f[0].parse().unwrap(),
                f[3].chars().next().unwrap(),
                [v(4), v(5), v(6), v(7)],
                v(8),
            )
        })
        .collect();
    let mut zip = zip::ZipArchive::new(std::fs::File::open(&npz).unwrap()).unwrap();
    let names = [
        "hypothetical",
        "contrib",
        "onehot",
        "references",
        "record",
        "length",
        "output",
        "reference_output",
    ];
    let mut arrays = HashMap::new();
    for name in names {
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(
            &mut zip.by_name(&format!("{name}.npy")).unwrap(),
            &mut bytes,
        )
        .unwrap();
        let arr = npyz::NpyFile::new(&bytes[..]).unwrap();
        let shape = arr.shape().to_vec();
        let values: Vec<f32> = match name {
            "references" => arr
                .into_vec::<u8>()
                .unwrap()
                .into_iter()
                .map(f32::from)
                .collect(),
            "record" | "length" => arr
                .into_vec::<i64>()
                .unwrap()
                .into_iter()
                .map(|v| v as f32)
                .collect(),
            _ => arr.into_vec::<f32>().unwrap(),
        };
        arrays.insert(name.to_string(), (values, shape));
    }
    Run {
        tsv: rows,
        npz: arrays,
    }
}

fn flat(t: &Tensor) -> Vec<f32> {
    t.flatten_all()
        .unwrap()
        .to_dtype(candle_core::DType::F32)
        .unwrap()
        .to_vec1::<f32>()
        .unwrap()
}

#[test]
fn deeplift_shap_matches_tangermeme_on_the_same_references() {
    let (meta, want) =
        read_safetensors(&fixture_dir().join("tangermeme.safetensors"), &Device::Cpu).unwrap();
    assert!(meta["sequences"].contains('N'), "an N is covered");
    let dataset = fixture_dir().join("sequences.safetensors");
    let dir = tempfile::tempdir().unwrap();
    for adapter in ["mean", "max", "gated"] {
        let ck = fixture_dir().join(format!("cnn_{adapter}.safetensors"));
        let run = deeplift(
            &ck,
            &dataset,
            dir.path(),
            &["--shuffles", "8", "--seed", "1"],
        );
        // The seeded shuffles are the ones the fixture was made from: same seed, same
        // references, release after release.
        let refs = flat(&want[&format!("{adapter}.references")]);
        assert_eq!(run.npz["references"].0, refs, "{adapter}: the references");
        let theirs = flat(&want[&format!("{adapter}.hypothetical")]);
        let ours = &run.npz["hypothetical"].0;
        assert_eq!(ours.len(), theirs.len(), "{adapter}: shapes");
        let largest = theirs.iter().fold(0f32, |m, v| m.max(v.abs()));
        assert!(
            largest > 1e-2,
            "{adapter}: a fixture with signal ({largest})"
        );
        let worst = ours
            .iter()
            .zip(&theirs)
            .fold(0f32, |m, (a, b)| m.max((a - b).abs()));
        assert!(
            worst <= TOL,
            "{adapter}: largest |luminome − tangermeme| {worst} (largest value {largest})"
        );
        eprintln!("{adapter}: largest value {largest}, largest difference {worst:e}");
        // One record per pass (rows padded to each record alone): the same references and,
        // to rounding, the same contributions as records sharing a pass.
        let alone = deeplift(
            &ck,
            &dataset,
            dir.path(),
            &["--shuffles", "8", "--batch-size", "1"],
        );
        assert_eq!(alone.npz["references"].0, refs);
        let apart = alone.npz["hypothetical"]
            .0
            .iter()
            .zip(ours)
            .fold(0f32, |m, (a, b)| m.max((a - b).abs()));
        assert!(
            apart < 1e-6,
            "{adapter}: --batch-size 1 moved values by {apart}"
        );
    }
    // The tiny random transformers (12 tokens) on the short sequences: attention's products,
    // softmax, GELU and the layer norms under their rules.
    let short = fixture_dir().join("short.safetensors");
    for adapter in ["mean", "gated"] {
        let run = deeplift(&tiny(adapter), &short, dir.path(), &["--shuffles", "8"]);
        let key = |what: &str| format!("tfm_{adapter}.{what}");
        assert_eq!(run.npz["references"].0, flat(&want[&key("references")]));
        let theirs = flat(&want[&key("hypothetical")]);
        let largest = theirs.iter().fold(0f32, |m, v| m.max(v.abs()));
        assert!(largest > 1e-2, "transformer {adapter}: signal ({largest})");
        let worst = run.npz["hypothetical"]
            .0
            .iter()
            .zip(&theirs)
            .fold(0f32, |m, (a, b)| m.max((a - b).abs()));
        assert!(
            worst <= TOL,
            "transformer {adapter}: largest |luminome − tangermeme| {worst} (largest {largest})"
        );
        eprintln!("transformer {adapter}: largest value {largest}, difference {worst:e}");
    }
}

/// A tiny random transformer classifier of the PyTorch-reference fixtures (12 tokens).
fn tiny(adapter: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!(
        "../luminome-predict/tests/fixtures/torch_reference/tiny_{adapter}.safetensors"
    ))
}

/// Σ over a record's bases of its contributions = f(record) − mean f(references), on every
/// adapter and through the reverse-complement average; and the npz's contrib is the one-hot
/// times the hypothetical contributions, which at each base equal its TSV score.
#[test]
fn contributions_add_up_to_the_change_of_the_explained_output() {
    let dataset = fixture_dir().join("sequences.safetensors");
    let dir = tempfile::tempdir().unwrap();
    let rc = dir.path().join("rc_gated.safetensors");
    luminome_engine::testing::write_cnn_checkpoint(&rc, AdapterKind::Gated, true).unwrap();
    let gated_max = dir.path().join("rc_gated_max.safetensors");
    luminome_engine::testing::write_cnn_checkpoint(&gated_max, AdapterKind::GatedMax, true)
        .unwrap();
    let short = fixture_dir().join("short.safetensors");
    let mut checkpoints: Vec<(PathBuf, &Path)> = ["mean", "max", "gated"]
        .iter()
        .map(|a| {
            (
                fixture_dir().join(format!("cnn_{a}.safetensors")),
                dataset.as_path(),
            )
        })
        .collect();
    checkpoints.push((rc, &dataset));
    checkpoints.push((gated_max, &dataset));
    for adapter in ["cls", "mean", "max", "gated"] {
        checkpoints.push((tiny(adapter), &short));
    }
    for (ck, dataset) in &checkpoints {
        let run = deeplift(ck, dataset, dir.path(), &["--shuffles", "5", "-q"]);
        let (output, reference) = (&run.npz["output"].0, &run.npz["reference_output"].0);
        let mut moved = 0;
        for (r, (&f, &f_ref)) in output.iter().zip(reference).enumerate() {
            let sum: f32 = run
                .tsv
                .iter()
                .filter(|row| row.0 == r as u64)
                .map(|row| row.3)
                .sum();
            let change = f - f_ref;
            moved += usize::from(change.abs() > 1e-3);
            assert!(
                (sum - change).abs() < 1e-4 * (1.0 + change.abs()),
                "{}: record {r}: contributions sum to {sum}, the output changed by {change}",
                ck.display()
            );
        }
        assert!(moved > 0, "{}: no record's output moved", ck.display());
        for &(_, base, hyp, score) in &run.tsv {
            if let Some(b) = "ACGT".find(base) {
                assert!(
                    (hyp[b] - score).abs() < 1e-5,
                    "own base: {hyp:?} vs {score}"
                );
            }
        }
        let (hyp, shape) = &run.npz["hypothetical"];
        let (onehot, contrib) = (&run.npz["onehot"].0, &run.npz["contrib"].0);
        assert_eq!(shape.len(), 3);
        for i in 0..hyp.len() {
            assert_eq!(contrib[i], hyp[i] * onehot[i]);
        }
    }
}

#[test]
fn a_bad_shuffle_count_is_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.tsv");
    let ck = fixture_dir().join("cnn_mean.safetensors");
    let dataset = fixture_dir().join("sequences.safetensors");
    for shuffles in ["--shuffles=0", "--shuffles=1001"] {
        let o = importance(&[
            "--checkpoint",
            ck.to_str().unwrap(),
            "--dataset",
            dataset.to_str().unwrap(),
            "--method",
            "deepliftshap",
            shuffles,
            "-o",
            out.to_str().unwrap(),
        ]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            !o.status.success() && err.contains("--shuffles must be between 1 and 1000"),
            "{err}"
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
