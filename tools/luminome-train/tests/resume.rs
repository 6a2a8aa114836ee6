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
    classify_with(d, out, extra, &mut bin())
}

/// [`classify_any_adapter`] run by `command` (an environment set).
fn classify_with(d: &Data, out: &str, extra: &[&str], command: &mut Command) -> Output {
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
    command.args(&args).output().unwrap()
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
    assert_same_run(&d, "a10", "full");
    assert_eq!(metrics_rows(&d, "full").len(), 21);
}

/// The tensors of `a`'s and `b`'s last and best checkpoints are equal, and their metrics rows
/// but for throughput (examples_per_s, a timing); the metadata differs (each run's command line).
fn assert_same_run(d: &Data, a: &str, b: &str) {
    for f in ["last.safetensors", "best.safetensors"] {
        let (x, y) = (
            std::fs::read(d.root.join(a).join(f)).unwrap(),
            std::fs::read(d.root.join(b).join(f)).unwrap(),
        );
        let (x, y) = (
            safetensors::SafeTensors::deserialize(&x).unwrap(),
            safetensors::SafeTensors::deserialize(&y).unwrap(),
        );
        let mut names = x.names();
        names.sort();
        let mut other = y.names();
        other.sort();
        assert_eq!(names, other, "{a}/{f}");
        for n in names {
            assert!(
                x.tensor(n).unwrap().data() == y.tensor(n).unwrap().data(),
                "{a}/{f}: {n} differs from {b}'s"
            );
        }
    }
    assert_eq!(metrics_rows(d, a), metrics_rows(d, b), "{a}/metrics.tsv");
}

fn metrics_rows(d: &Data, run: &str) -> Vec<String> {
    std::fs::read_to_string(d.root.join(run).join("metrics.tsv"))
        .unwrap()
        .lines()
        .map(|l| {
            let mut c: Vec<&str> = l.split('\t').collect();
            c.remove(5);
            c.join("\t")
        })
        .collect()
}

#[test]
fn a_run_killed_after_any_commit_resumes_to_the_bytes_of_an_uninterrupted_run() {
    let d = data();
    // 4 evaluations in 20 steps, each: a best (2 files) when dev improves, the log, the last
    // checkpoint (4 renames).
    let kills = kill_after_every_commit(&d, "full", &["--seed", "1"]);
    assert!(kills >= 20, "{kills}");
    // A run that stops early: killed after the commit of the evaluation that stopped it, the
    // resumed run must stop there too, not train on.
    let early = ["--seed", "1", "--patience", "1"];
    kill_after_every_commit(&d, "early", &early);
    assert!(
        metrics_rows(&d, "early").len() < 21,
        "the run did not stop early"
    );
}

/// Runs `classify` with `extra` uninterrupted (folder `name`), then once for every n, aborted
/// right after its n-th file reaches its final name (no cleanup, as SIGKILL), until a run
/// finishes: each killed run resumed (or rerun where no checkpoint was committed) must end as
/// the uninterrupted one. Returns the number of kills.
fn kill_after_every_commit(d: &Data, name: &str, extra: &[&str]) -> usize {
    let o = classify(d, name, extra);
    assert!(o.status.success(), "{}", stderr(&o));
    let mut with_adapter = vec!["--adapter", "mean"];
    with_adapter.extend(extra);
    for n in 1.. {
        let out = format!("{name}_k{n}");
        let mut killed = bin();
        killed.env("LUMINOME_FAULT_ABORT_AFTER_COMMITS", n.to_string());
        let o = classify_with(d, &out, &with_adapter, &mut killed);
        if o.status.success() {
            return n - 1;
        }
        assert_eq!(o.status.code(), None, "{out}: {}", stderr(&o));
        let last = d.root.join(&out).join("last.safetensors");
        let last = last.display().to_string();
        let mut again = extra.to_vec();
        if std::path::Path::new(&last).exists() {
            again.extend(["--resume", &last]);
        }
        let o = classify(d, &out, &again);
        assert!(o.status.success(), "{out}: after the kill: {}", stderr(&o));
        assert_same_run(d, &out, name);
        assert!(!d
            .root
            .join(&out)
            .join("last.state.next.safetensors")
            .exists());
    }
    unreachable!()
}

#[test]
fn without_adapter_a_run_is_gated_max_and_a_resume_keeps_the_checkpoints_adapter() {
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
    assert_eq!(adapter_of("plain"), "gated-max");
    // The default's parameters (DynamicGated's and the max head) come back on resume.
    let plain = d.root.join("plain").join("last.safetensors");
    let o = classify_any_adapter(&d, "plain", &["--resume", &plain.display().to_string()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(adapter_of("plain"), "gated-max");
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
