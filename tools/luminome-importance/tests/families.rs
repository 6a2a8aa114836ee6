//! Which families luminome-importance explains, against the model registry: every registered
//! family has an explainer or a stated reason, and the bag-of-tokens family is explained by ISM.

use std::process::Command;

use luminome_engine::models::ModelConfig;
use luminome_importance::{explainer, Explainer};

#[test]
fn every_registered_family_is_explained_or_refused_with_a_reason() {
    for (kind, family) in ModelConfig::families() {
        match explainer(kind) {
            Some(Explainer::No(why)) => assert!(why.len() > 20, "{kind}: {why}"),
            Some(_) => {}
            None => panic!("the {family} family (kind {kind}) has no arm in explainer()"),
        }
    }
    assert_eq!(explainer("no_such_kind"), None);
}

fn importance(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_luminome-importance"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn a_bag_of_tokens_model_is_explained_by_ism_and_refuses_the_gradient_methods() {
    let dir = tempfile::tempdir().unwrap();
    let ckpt = dir.path().join("bag.safetensors");
    luminome_engine::testing::write_bag_of_tokens_checkpoint(&ckpt, 3).unwrap();
    let ds = dir.path().join("seqs.safetensors");
    let seqs = [b"ACGTTACAGC".to_vec(), b"GGATTCA".to_vec()];
    luminome_engine::testing::write_dataset(&ds, &seqs, Some(&[0, 1]), 16).unwrap();
    let tsv = dir.path().join("ism.tsv");
    let args = |method: &str| {
        vec![
            "--checkpoint".to_string(),
            ckpt.display().to_string(),
            "--dataset".into(),
            ds.display().to_string(),
            "--method".into(),
            method.into(),
            "-o".into(),
            tsv.display().to_string(),
            "-q".into(),
        ]
    };
    let saliency = args("saliency");
    let o = importance(&saliency.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--method ism"));
    assert!(!tsv.exists());
    let ism = args("ism");
    let o = importance(&ism.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // The model sees token counts only: within a record, one substitution (say A → C) gives the
    // same sequence composition wherever it is made, so the same change of the output.
    let text = std::fs::read_to_string(&tsv).unwrap();
    let mut by_change: std::collections::HashMap<(String, String, usize), Vec<f32>> =
        Default::default();
    let mut rows = 0;
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split('\t').collect();
        rows += 1;
        for (k, alt) in ["A", "C", "G", "T"].iter().enumerate() {
            let delta: f32 = f[4 + k].parse().unwrap();
            if *alt == f[3] {
                assert_eq!(delta, 0.0, "{line}");
            } else {
                let key = (f[0].to_string(), f[3].to_string(), k);
                by_change.entry(key).or_default().push(delta);
            }
        }
    }
    assert_eq!(rows, 17, "{text}");
    let mut repeated = 0;
    for (key, deltas) in &by_change {
        assert!(deltas.iter().any(|d| *d != 0.0), "{key:?}: {deltas:?}");
        for d in deltas {
            assert!((d - deltas[0]).abs() <= 1e-5, "{key:?}: {deltas:?}");
        }
        repeated += usize::from(deltas.len() > 1);
    }
    assert!(repeated >= 6, "{by_change:?}");
}
