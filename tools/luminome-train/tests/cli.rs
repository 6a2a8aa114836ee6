//! `luminome-train` end to end on tiny datasets: the happy paths a workflow rule runs, and every
//! bad input the issue lists (clear message, non-zero exit, nothing half-written).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use luminome_engine::testing::{encode, nucleotide_tokenizer, toy_motif_task, write_dataset};
use luminome_io::token_dataset::{
    IndexRow, TokenDatasetWriter, TokenDatasetWriterOptions, TokenRow,
};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_luminome-train"))
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

struct Data {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

impl Data {
    fn path(&self, name: &str) -> String {
        self.root.join(name).display().to_string()
    }
}

/// train/dev/test with labels, an unlabelled set, a set with a label 2, a set of longer rows.
fn data() -> Data {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let (s, l) = toy_motif_task(96, 20, 1);
    write_dataset(&root.join("train.safetensors"), &s, Some(&l), 24).unwrap();
    let (s, l) = toy_motif_task(32, 20, 2);
    write_dataset(&root.join("dev.safetensors"), &s, Some(&l), 24).unwrap();
    write_dataset(&root.join("unlabelled.safetensors"), &s, None, 24).unwrap();
    let mut l3 = l.clone();
    l3[5] = 2;
    write_dataset(&root.join("three.safetensors"), &s, Some(&l3), 24).unwrap();
    let (s, l) = toy_motif_task(16, 36, 3);
    write_dataset(&root.join("long.safetensors"), &s, Some(&l), 40).unwrap();
    Data { _dir: dir, root }
}

const TINY: &[&str] = &[
    "--d-model",
    "16",
    "--layers",
    "1",
    "--heads",
    "2",
    "--ffn",
    "32",
    "--batch-size",
    "16",
    "--steps",
    "6",
    "--eval-every",
    "3",
    "--warmup",
    "2",
    "--threads",
    "1",
    "--quiet",
];

fn with(base: &[&str], extra: &[&str]) -> Vec<String> {
    base.iter().chain(extra).map(|s| s.to_string()).collect()
}

fn run_s(args: &[String]) -> Output {
    bin().args(args).output().unwrap()
}

fn nothing_written(dir: &Path) {
    assert!(!dir.join("best.safetensors").exists() && !dir.join("last.safetensors").exists());
}

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
fn classify_refuses_a_dataset_without_labels() {
    let d = data();
    let o = run_s(&with(
        &[
            "classify",
            "--adapter",
            "mean",
            "--train",
            &d.path("unlabelled.safetensors"),
            "-o",
            &d.path("out"),
        ],
        TINY,
    ));
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("unlabelled.safetensors") && stderr(&o).contains("no labels"),
        "{}",
        stderr(&o)
    );
    assert!(!d.root.join("out").exists());
}

#[test]
fn labels_outside_the_declared_classes_are_refused_with_the_record() {
    let d = data();
    let o = run_s(&with(
        &[
            "classify",
            "--adapter",
            "mean",
            "--train",
            &d.path("train.safetensors"),
            "--dev",
            &d.path("three.safetensors"),
            "-o",
            &d.path("out"),
        ],
        TINY,
    ));
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(
        e.contains("three.safetensors") && e.contains("record 6") && e.contains("label 2"),
        "{e}"
    );
    assert!(!d.root.join("out").exists());
}

#[test]
fn init_from_a_classifier_checkpoint_is_refused() {
    let d = data();
    let o = run_s(&with(
        &[
            "classify",
            "--adapter",
            "cls",
            "--train",
            &d.path("train.safetensors"),
            "-o",
            &d.path("clf"),
        ],
        TINY,
    ));
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run_s(&with(
        &[
            "classify",
            "--adapter",
            "cls",
            "--init",
            &d.path("clf/best.safetensors"),
            "--train",
            &d.path("train.safetensors"),
            "-o",
            &d.path("out"),
        ],
        TINY,
    ));
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("masked-LM checkpoint") && stderr(&o).contains("classifier"),
        "{}",
        stderr(&o)
    );
    nothing_written(&d.root.join("out"));
    // A dataset is not a checkpoint either.
    let o = run_s(&with(
        &[
            "classify",
            "--adapter",
            "cls",
            "--init",
            &d.path("train.safetensors"),
            "--train",
            &d.path("train.safetensors"),
            "-o",
            &d.path("out"),
        ],
        TINY,
    ));
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("not a Luminome checkpoint"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_checkpoint_with_another_vocabulary_is_refused() {
    let d = data();
    let o = run_s(&with(
        &[
            "mlm",
            "--train",
            &d.path("train.safetensors"),
            "-o",
            &d.path("mlm"),
        ],
        TINY,
    ));
    assert!(o.status.success(), "{}", stderr(&o));
    // The same records under a vocabulary with one more token.
    let mut tok = nucleotide_tokenizer();
    tok.vocab.push("X".into());
    let dest = d.root.join("other_vocab.safetensors");
    let mut w = TokenDatasetWriter::new(TokenDatasetWriterOptions {
        dest: dest.clone(),
        tokenizer: tok,
        max_length: Some(24),
        has_labels: true,
        has_soft_mask: false,
        shard_records: None,
        rc: "none".into(),
        sources: vec![],
        tool: "test".into(),
        tool_version: "0".into(),
        command_line: String::new(),
    })
    .unwrap();
    for i in 0..8u64 {
        let mut ids = encode(b"ACGTACGT");
        ids.resize(24, 0);
        w.push(TokenRow {
            ids: &ids,
            soft_mask: None,
            label: Some((i % 2) as i64),
            index: IndexRow {
                record: i,
                shard: 0,
                name: format!("r{i}"),
                coords: ".".into(),
                seq_length: 8,
                window_offset: 0,
                window_length: 8,
                strand: '+',
            },
        })
        .unwrap();
    }
    w.finish().unwrap();
    let o = run_s(&with(
        &[
            "classify",
            "--adapter",
            "gated",
            "--init",
            &d.path("mlm/best.safetensors"),
            "--train",
            &dest.display().to_string(),
            "-o",
            &d.path("out"),
        ],
        TINY,
    ));
    assert!(!o.status.success());
    assert!(stderr(&o).contains("vocabulary differs"), "{}", stderr(&o));
    nothing_written(&d.root.join("out"));
}

#[test]
fn rows_longer_than_the_model_are_refused() {
    let d = data();
    let o = run_s(&with(
        &[
            "mlm",
            "--train",
            &d.path("train.safetensors"),
            "-o",
            &d.path("mlm"),
        ],
        TINY,
    ));
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run_s(&with(
        &[
            "classify",
            "--adapter",
            "max",
            "--init",
            &d.path("mlm/best.safetensors"),
            "--train",
            &d.path("long.safetensors"),
            "-o",
            &d.path("out"),
        ],
        TINY,
    ));
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(
        e.contains("long.safetensors") && e.contains("40 tokens") && e.contains("max length 24"),
        "{e}"
    );
    assert!(!d.root.join("out").exists());
}

#[test]
fn a_diverging_run_stops_on_nan_with_a_clear_message() {
    let d = data();
    let o = run_s(&with(
        &[
            "classify",
            "--adapter",
            "mean",
            "--train",
            &d.path("train.safetensors"),
            "-o",
            &d.path("out"),
            "--lr",
            "1e38",
            "--clip-norm",
            "0",
        ],
        &[
            "--d-model",
            "16",
            "--layers",
            "1",
            "--heads",
            "2",
            "--ffn",
            "32",
            "--steps",
            "6",
            "--eval-every",
            "3",
            "--warmup",
            "0",
            "--quiet",
        ],
    ));
    assert!(!o.status.success());
    assert!(stderr(&o).contains("NaN"), "{}", stderr(&o));
}

#[test]
fn cuda_in_a_cpu_build_is_a_clear_error() {
    if cfg!(feature = "cuda") {
        return;
    }
    let d = data();
    let o = run(&[
        "classify",
        "--adapter",
        "cls",
        "--train",
        &d.path("train.safetensors"),
        "-o",
        &d.path("out"),
        "--device",
        "cuda",
    ]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("no CUDA support"), "{}", stderr(&o));
    assert!(!d.root.join("out").exists());
}

#[test]
fn help_has_a_worked_example_and_version_is_one_line() {
    let o = run(&["classify", "--help"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("luminome-train classify --train"));
    let o = run(&["--version"]);
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 1);
}
