//! `luminome-train` end to end on tiny datasets: the happy paths a workflow rule runs, and every
//! bad input the issue lists (clear message, non-zero exit, nothing half-written).

mod common;

use common::*;

#[test]
fn mlm_then_classify_with_each_adapter_writes_checkpoints_logs_and_test_metrics() {
    let d = data();
    let mlm = d.path("mlm");
    let o = run_s(&with(
        &[
            "mlm",
            "--train",
            &d.path("train.safetensors"),
            "--dev",
            &d.path("dev.safetensors"),
            "-o",
            &mlm,
        ],
        TINY,
    ));
    assert!(o.status.success(), "{}", stderr(&o));
    for f in [
        "best.safetensors",
        "best.config.json",
        "last.safetensors",
        "last.state.safetensors",
        "metrics.tsv",
    ] {
        assert!(d.root.join("mlm").join(f).exists(), "{f}");
    }
    let log = std::fs::read_to_string(d.root.join("mlm/metrics.tsv")).unwrap();
    assert!(log
        .starts_with("step\tepoch\tloss\tlr\tgrad_norm\texamples_per_s\tdev_loss\tdev_accuracy\n"));
    let cfg: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(d.root.join("mlm/best.config.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(cfg["model"]["kind"], "mlm");
    assert_eq!(cfg["tokenizer"]["vocab"].as_array().unwrap().len(), 10);
    for adapter in ["cls", "mean", "max", "gated"] {
        let out = d.path(&format!("clf_{adapter}"));
        let mut args = with(
            &[
                "classify",
                "--adapter",
                adapter,
                "--init",
                &format!("{mlm}/best.safetensors"),
                "--train",
                &d.path("train.safetensors"),
                "--dev",
                &d.path("dev.safetensors"),
                "--test",
                &d.path("dev.safetensors"),
                "-o",
                &out,
            ],
            TINY,
        );
        if adapter == "cls" {
            args.push("--freeze-encoder".into());
        }
        let o = run_s(&args);
        assert!(o.status.success(), "{adapter}: {}", stderr(&o));
        let tm = std::fs::read_to_string(d.root.join(format!("clf_{adapter}/test_metrics.tsv")))
            .unwrap();
        assert!(tm.starts_with("metric\tvalue\ncheckpoint_step\t"), "{tm}");
        assert!(tm.contains("\nmcc\t") && tm.contains("\nauroc\t"), "{tm}");
    }
}

#[test]
fn multi_class_labels_train_and_score() {
    let d = data();
    let three = d.path("three.safetensors");
    let o = run_s(&with(
        &[
            "classify",
            "--adapter",
            "max",
            "--position",
            "rotary",
            "--train",
            &three,
            "--dev",
            &three,
            "--test",
            &three,
            "-o",
            &d.path("multi"),
        ],
        TINY,
    ));
    assert!(o.status.success(), "{}", stderr(&o));
    let cfg = std::fs::read_to_string(d.root.join("multi/best.config.json")).unwrap();
    let cfg: serde_json::Value = serde_json::from_str(&cfg).unwrap();
    assert_eq!(cfg["model"]["num_classes"], 3);
    assert_eq!(cfg["model"]["label_values"], serde_json::json!([0, 1, 2]));
    let tm = std::fs::read_to_string(d.root.join("multi/test_metrics.tsv")).unwrap();
    assert!(
        tm.contains("\nf1_macro\t") && tm.contains("\nauroc_ovr_macro\t"),
        "{tm}"
    );
}

#[test]
fn same_seed_gives_the_same_checkpoint_bytes() {
    let d = data();
    // The same command line twice (the metadata holds it), from two working folders.
    for run_dir in ["a", "b"] {
        std::fs::create_dir(d.root.join(run_dir)).unwrap();
        let o = bin()
            .args(with(
                &[
                    "classify",
                    "--adapter",
                    "gated",
                    "--train",
                    &d.path("train.safetensors"),
                    "--dev",
                    &d.path("dev.safetensors"),
                    "-o",
                    "run",
                ],
                TINY,
            ))
            .current_dir(d.root.join(run_dir))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
    }
    // Whole files, metadata included: weights, optimizer state, config sidecar.
    for f in [
        "best.safetensors",
        "last.safetensors",
        "last.state.safetensors",
        "last.config.json",
    ] {
        let a = std::fs::read(d.root.join("a/run").join(f)).unwrap();
        let b = std::fs::read(d.root.join("b/run").join(f)).unwrap();
        assert!(a == b, "{f} differs between two runs with the same seed");
    }
}

#[test]
fn help_has_a_worked_example_and_version_is_one_line() {
    let o = run(&["classify", "--help"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("luminome-train classify --train"));
    let o = run(&["--version"]);
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 1);
}
