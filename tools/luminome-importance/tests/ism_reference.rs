//! `luminome-importance --method ism` against tangermeme's `saturation_mutagenesis` on the tiny
//! PyTorch-reference classifiers: the fixture (tests/fixtures/ism_tangermeme, README there) was
//! computed once by bench/importance/ism_tangermeme.py; no PyTorch here.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use candle_core::{Device, Tensor};
use luminome_engine::checkpoint::read_safetensors;

/// Largest |luminome − tangermeme| accepted on a Δf. Both sides run the same f32 model (values
/// |f| ≲ 2, a few hundred multiply-adds deep); Δf is the difference of two such outputs, so
/// each side's rounding is a few ulps of |f| (ulp 1.2e-7 at 1): the fixture was measured at
/// ≤ 7e-7 (README). 1e-5 leaves room for another summation order or SIMD width while staying
/// far below the signal: the fixture's Δf reach 1.13 (gated) and 0.42 (mean), and a Δf with
/// the wrong sign or target class (which for two classes is −Δf) misses by 2·|Δf|.
const TOL: f32 = 1e-5;

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ism_tangermeme")
}

fn checkpoint(adapter: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!(
        "../luminome-predict/tests/fixtures/torch_reference/tiny_{adapter}.safetensors"
    ))
}

fn fixture() -> (HashMap<String, String>, HashMap<String, Tensor>) {
    read_safetensors(&fixture_dir().join("tangermeme.safetensors"), &Device::Cpu).unwrap()
}

fn flat(t: &Tensor) -> Vec<f32> {
    t.flatten_all().unwrap().to_vec1::<f32>().unwrap()
}

/// `luminome-importance --method ism --npz` on `ds`: the npz's `ism` and `contrib`, flat
/// (N, 4, L), and the shape.
fn ism(ds: &Path, dir: &Path, adapter: &str, extra: &[&str]) -> (Vec<f32>, Vec<f32>, Vec<u64>) {
    let (tsv, npz) = (
        dir.join(format!("{adapter}.tsv")),
        dir.join(format!("{adapter}.npz")),
    );
    let o = Command::new(env!("CARGO_BIN_EXE_luminome-importance"))
        .args(["--checkpoint", checkpoint(adapter).to_str().unwrap()])
        .args(["--dataset", ds.to_str().unwrap(), "--method", "ism", "-q"])
        .args(["-o", tsv.to_str().unwrap(), "--npz", npz.to_str().unwrap()])
        .args(extra)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut zip = zip::ZipArchive::new(std::fs::File::open(&npz).unwrap()).unwrap();
    let mut read = |name: &str| {
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut zip.by_name(name).unwrap(), &mut bytes).unwrap();
        let arr = npyz::NpyFile::new(&bytes[..]).unwrap();
        let shape = arr.shape().to_vec();
        (arr.into_vec::<f32>().unwrap(), shape)
    };
    let (ism, shape) = read("ism.npy");
    let (contrib, _) = read("contrib.npy");
    (ism, contrib, shape)
}

/// The largest |a − b|, asserting it is within `tol`.
fn assert_close(what: &str, got: &[f32], want: &[f32], tol: f32) -> f32 {
    assert_eq!(got.len(), want.len(), "{what}: sizes");
    let mut worst = (0f32, 0usize);
    for (i, (a, b)) in got.iter().zip(want).enumerate() {
        if (a - b).abs() > worst.0 {
            worst = ((a - b).abs(), i);
        }
    }
    let i = worst.1;
    assert!(
        worst.0 <= tol,
        "{what}: flat index {i} (record {}, base {}, position {}): luminome {} vs tangermeme {}",
        i / 40,
        i / 10 % 4,
        i % 10,
        got[i],
        want[i]
    );
    worst.0
}

#[test]
fn ism_matches_tangermeme_saturation_mutagenesis() {
    let (meta, want) = fixture();
    let seqs: Vec<Vec<u8>> = meta["sequences"]
        .split(',')
        .map(|s| s.as_bytes().to_vec())
        .collect();
    let width = seqs.iter().map(Vec::len).max().unwrap();
    assert_eq!((seqs.len(), width), (3, 10), "the fixture's sequences");
    assert!(seqs.iter().any(|s| s.contains(&b'N')), "an N is covered");
    let dir = tempfile::tempdir().unwrap();
    let ds = dir.path().join("seqs.safetensors");
    // Padded to the tiny models' 12 tokens: the shorter records carry padding.
    luminome_engine::testing::write_dataset(&ds, &seqs, None, 12).unwrap();
    let onehot = flat(&want["onehot"]);

    // gated: passes of 5 rows (records' rows split across passes); mean: one pass per record.
    for (adapter, extra) in [("gated", &["--ism-rows", "5"][..]), ("mean", &[][..])] {
        let (got, contrib, shape) = ism(&ds, dir.path(), adapter, extra);
        assert_eq!(shape, vec![3, 4, 10]);
        // tangermeme's raw_outputs=True: y_hat − y0, the raw Δf per position and base.
        let delta = flat(&want[&format!("{adapter}.ism")]);
        let largest = delta.iter().fold(0f32, |m, d| m.max(d.abs()));
        assert!(
            largest > 0.1,
            "{adapter}: a fixture with signal ({largest})"
        );
        let worst = assert_close(&format!("{adapter} Δf"), &got, &delta, TOL);
        eprintln!("{adapter}: largest |Δf| {largest}, largest difference {worst:e}");

        // hypothetical=True: Δf minus its mean over the four bases of each position.
        let mut hyp = got.clone();
        for (r, seq) in seqs.iter().enumerate() {
            for p in 0..10 {
                let at = |a: usize| r * 40 + a * 10 + p;
                let mean = (0..4).map(|a| got[at(a)]).sum::<f32>() / 4.0;
                for a in 0..4 {
                    hyp[at(a)] = if p < seq.len() {
                        got[at(a)] - mean
                    } else {
                        0.0
                    };
                }
            }
        }
        let hypothetical = flat(&want[&format!("{adapter}.hypothetical")]);
        assert_close(&format!("{adapter} hypothetical"), &hyp, &hypothetical, TOL);
        // The default: that times the one-hot, which at the reference base is −(sum of the
        // three substitutions' Δf) / 4 = ¾ of Luminome's ref-minus-mean score (contrib); an N
        // has no one-hot, so 0 on both sides.
        let default = flat(&want[&format!("{adapter}.attributions")]);
        let projected: Vec<f32> = hyp.iter().zip(&onehot).map(|(h, o)| h * o).collect();
        assert_close(&format!("{adapter} default"), &projected, &default, TOL);
        let three_quarters: Vec<f32> = contrib.iter().map(|c| 0.75 * c).collect();
        assert_close(
            &format!("{adapter} ¾ contrib"),
            &three_quarters,
            &default,
            TOL,
        );
    }

    // The explained class matters: class 0's output is −f for two classes, so with
    // --target 0 Luminome gives −Δf, which the comparison above would refuse.
    let (swapped, _, _) = ism(&ds, dir.path(), "gated", &["--target", "0"]);
    let delta = flat(&want["gated.ism"]);
    let negated: Vec<f32> = delta.iter().map(|d| -d).collect();
    assert_close("gated --target 0 vs −Δf", &swapped, &negated, TOL);
    let miss = swapped
        .iter()
        .zip(&delta)
        .fold(0f32, |m, (a, b)| m.max((a - b).abs()));
    assert!(miss > 100.0 * TOL, "--target 0 is told apart ({miss})");
}
