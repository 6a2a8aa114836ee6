//! Resume continues only from a checkpoint and the training state saved with it: a state of
//! another step, or of another run, is refused naming both files; a matching pair resumes to the
//! bytes of an uninterrupted run.

mod common;

use common::*;

fn classify(d: &Data, out: &str, extra: &[&str]) -> Output {
    let mut with_adapter = vec!["--adapter", "mean"];
    with_adapter.extend(extra);
    classify_any_adapter(d, out, &with_adapter)
}

/// `classify` without `--adapter` unless `extra` has one.
fn classify_any_adapter(d: &Data, out: &str, extra: &[&str]) -> Output {
    let mut args = vec![
        "classify".to_string(),
        "--train".into(),
        d.path("train.safetensors"),
        "--dev".into(),
        d.path("dev.safetensors"),
    ];
    args.extend(
        [
            "--backbone",
            "cnn",
            "--cnn-channels",
            "8",
            "--cnn-layers",
            "1",
            "--steps",
            "20",
            "--eval-every",
            "5",
            "--batch-size",
            "8",
            "--threads",
            "1",
            "--no-kmer-floor",
            "--quiet",
            "-o",
        ]
        .map(String::from),
    );
    args.push(d.path(out));
    args.extend(extra.iter().map(|s| s.to_string()));
    bin().args(&args).output().unwrap()
}

/// A folder holding `weights`' last.safetensors beside `state`'s last.state.safetensors.
fn mixed(d: &Data, name: &str, weights: &str, state: &str) -> String {
    let dir = d.root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(
        d.root.join(weights).join("last.safetensors"),
        dir.join("last.safetensors"),
    )
    .unwrap();
    std::fs::copy(
        d.root.join(state).join("last.state.safetensors"),
        dir.join("last.state.safetensors"),
    )
    .unwrap();
    dir.join("last.safetensors").display().to_string()
}

#[test]
fn resume_refuses_a_state_saved_with_other_weights_and_continues_a_matching_pair_exactly() {
    let d = data();
    for (out, extra) in [
        ("a10", &["--seed", "1", "--stop-after-steps", "10"][..]),
        ("a15", &["--seed", "1", "--stop-after-steps", "15"][..]),
        ("b10", &["--seed", "2", "--stop-after-steps", "10"][..]),
        ("full", &["--seed", "1"][..]),
    ] {
        let o = classify(&d, out, extra);
        assert!(o.status.success(), "{out}: {}", stderr(&o));
    }
    // Step 10's weights with step 15's state (the same run): refused, both steps named.
    let ck = mixed(&d, "steps", "a10", "a15");
    let o = classify(&d, "steps", &["--seed", "1", "--resume", &ck]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(
        e.contains("weights of step 10") && e.contains("training state of step 15"),
        "{e}"
    );
    assert!(e.contains("last.state.safetensors"), "{e}");
    // Step 10 of another run (seed 2): the same step, other weights: refused by the checksum.
    let ck = mixed(&d, "runs", "a10", "b10");
    let o = classify(&d, "runs", &["--seed", "1", "--resume", &ck]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(e.contains("weights checksum"), "{e}");
    // The run's own pair resumes and ends where the uninterrupted run ended, to the byte.
    let ck = d
        .root
        .join("a10")
        .join("last.safetensors")
        .display()
        .to_string();
    let o = classify(&d, "a10", &["--seed", "1", "--resume", &ck]);
    assert!(o.status.success(), "{}", stderr(&o));
    // (the metadata differs: it records each run's command line)
    for f in ["last.safetensors", "best.safetensors"] {
        let (a, b) = (
            std::fs::read(d.root.join("a10").join(f)).unwrap(),
            std::fs::read(d.root.join("full").join(f)).unwrap(),
        );
        let (a, b) = (
            safetensors::SafeTensors::deserialize(&a).unwrap(),
            safetensors::SafeTensors::deserialize(&b).unwrap(),
        );
        let mut names = a.names();
        names.sort();
        let mut other = b.names();
        other.sort();
        assert_eq!(names, other, "{f}");
        for n in names {
            assert!(
                a.tensor(n).unwrap().data() == b.tensor(n).unwrap().data(),
                "{f}: {n} differs"
            );
        }
    }
    // Every metrics row but its throughput (examples_per_s, a timing).
    let rows = |f: &str| -> Vec<String> {
        std::fs::read_to_string(d.root.join(f).join("metrics.tsv"))
            .unwrap()
            .lines()
            .map(|l| {
                let mut c: Vec<&str> = l.split('\t').collect();
                c.remove(5);
                c.join("\t")
            })
            .collect()
    };
    assert_eq!(rows("a10"), rows("full"));
    assert_eq!(rows("full").len(), 21);
}

#[test]
fn without_adapter_a_run_is_gated_and_a_resume_keeps_the_checkpoints_adapter() {
    let d = data();
    let adapter_of = |out: &str| -> String {
        let config = std::fs::read_to_string(d.root.join(out).join("best.config.json")).unwrap();
        let v: serde_json::Value = serde_json::from_str(&config).unwrap();
        v.pointer("/model/adapter")
            .or_else(|| v.pointer("/adapter"))
            .unwrap_or_else(|| panic!("no adapter in {config}"))
            .as_str()
            .unwrap()
            .to_string()
    };
    let o = classify_any_adapter(&d, "plain", &["--stop-after-steps", "5"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(adapter_of("plain"), "gated");
    // A mean run resumed with no --adapter continues as mean; --adapter gated is refused.
    let o = classify(&d, "m", &["--stop-after-steps", "5"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let ck = d
        .root
        .join("m")
        .join("last.safetensors")
        .display()
        .to_string();
    let o = classify_any_adapter(&d, "m", &["--adapter", "gated", "--resume", &ck]);
    assert!(
        stderr(&o).contains("--adapter gated differs"),
        "{}",
        stderr(&o)
    );
    let o = classify_any_adapter(&d, "m", &["--resume", &ck]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(adapter_of("m"), "mean");
}
