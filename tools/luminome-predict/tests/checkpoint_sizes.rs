//! A checkpoint is user input: metadata that claims a larger model than its weights (a huge
//! vocabulary or width) is refused with the file named, before anything of that size is
//! allocated.

mod common;

use std::collections::BTreeMap;

use candle_core::Device;
use common::*;
use luminome_engine::checkpoint::{read_safetensors, write_safetensors};

/// The fixture checkpoint with `model.encoder.<field>` set to `value` in its metadata.
fn doctored(dest: &std::path::Path, field: &str, value: u64) {
    let (md, tensors) = read_safetensors(&fixture_checkpoint("mean"), &Device::Cpu).unwrap();
    let mut meta: serde_json::Value = serde_json::from_str(&md["luminome"]).unwrap();
    meta["model"]["encoder"][field] = value.into();
    let mut md: BTreeMap<String, String> = md.into_iter().collect();
    md.insert("luminome".into(), meta.to_string());
    let mut t: Vec<(String, candle_core::Tensor)> = tensors.into_iter().collect();
    t.sort_by(|a, b| a.0.cmp(&b.0));
    write_safetensors(dest, &t, md).unwrap().commit().unwrap();
}

#[test]
fn metadata_claiming_a_larger_model_than_its_weights_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let ds = dir.path().join("ds.safetensors");
    write_dataset(
        &ds,
        &[rec("ACGTTATAGC", Some(1)), rec("GGCATTA", Some(0))],
        12,
    );
    for (field, value, want) in [
        (
            "vocab_size",
            1_000_000_000_000u64,
            "larger than the largest",
        ),
        ("d_model", 1 << 22, "larger than the largest"),
        ("vocab_size", 100, "do not match"),
    ] {
        let ck = dir.path().join("ck.safetensors");
        doctored(&ck, field, value);
        let out = dir.path().join("p.tsv");
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_luminome-predict"))
            .arg("--checkpoint")
            .arg(&ck)
            .arg("--dataset")
            .arg(&ds)
            .arg("-o")
            .arg(&out)
            .output()
            .unwrap();
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{field} {value}: {e}");
        assert!(
            e.contains("ck.safetensors") && e.contains(want),
            "{field} {value}: {e}"
        );
        assert!(!out.exists());
    }
}

#[test]
fn outputs_that_name_an_input_or_each_other_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let ds = dir.path().join("ds.safetensors");
    write_dataset(
        &ds,
        &[rec("ACGTTATAGC", Some(1)), rec("GGCATTA", Some(0))],
        12,
    );
    let ck = dir.path().join("ck.safetensors");
    std::fs::copy(fixture_checkpoint("mean"), &ck).unwrap();
    let before = std::fs::read(&ds).unwrap();
    let p = dir.path().join("p.tsv");
    for (extra, want) in [
        (vec!["-o", ds.to_str().unwrap()], "would destroy the input"),
        (vec!["-o", ck.to_str().unwrap()], "would destroy the input"),
        (
            vec!["-o", p.to_str().unwrap(), "--metrics", p.to_str().unwrap()],
            "are the same file",
        ),
    ] {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_luminome-predict"))
            .arg("--checkpoint")
            .arg(&ck)
            .arg("--dataset")
            .arg(&ds)
            .args(&extra)
            .output()
            .unwrap();
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{extra:?}: {e}");
        assert!(e.contains(want), "{extra:?}: {e}");
    }
    assert_eq!(std::fs::read(&ds).unwrap(), before);
    assert!(!p.exists());
}

#[test]
fn a_checkpoint_with_a_nan_weight_is_refused_naming_the_tensor() {
    // One NaN used to give NaN probabilities beside normal-looking metrics.
    let dir = tempfile::tempdir().unwrap();
    let ds = dir.path().join("ds.safetensors");
    write_dataset(
        &ds,
        &[rec("ACGTTATAGC", Some(1)), rec("GGCATTA", Some(0))],
        12,
    );
    let (md, mut tensors) = read_safetensors(&fixture_checkpoint("mean"), &Device::Cpu).unwrap();
    let name = "adapter.head.bias".to_string();
    let b = &tensors[&name];
    let mut v: Vec<f32> = b.flatten_all().unwrap().to_vec1().unwrap();
    v[0] = f32::NAN;
    tensors.insert(
        name,
        candle_core::Tensor::from_vec(v, b.shape(), &Device::Cpu).unwrap(),
    );
    let mut t: Vec<(String, candle_core::Tensor)> = tensors.into_iter().collect();
    t.sort_by(|a, b| a.0.cmp(&b.0));
    let ck = dir.path().join("nan.safetensors");
    write_safetensors(&ck, &t, md.into_iter().collect())
        .unwrap()
        .commit()
        .unwrap();
    let out = dir.path().join("p.tsv");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_luminome-predict"))
        .arg("--checkpoint")
        .arg(&ck)
        .arg("--dataset")
        .arg(&ds)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(
        e.contains("nan.safetensors: tensor adapter.head.bias holds NaN"),
        "{e}"
    );
    assert!(!out.exists());
}
