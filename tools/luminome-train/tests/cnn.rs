//! `luminome-train classify --backbone cnn`: the dilated CNN learns a motif task with
//! reverse-complement augmentation and averaging, and the settings it cannot honour are refused.

mod common;

use common::*;

fn cnn(d: &Data, out: &str, extra: &[&str]) -> Output {
    run_s(&with(
        &[
            "classify",
            "--train",
            &d.path("train.safetensors"),
            "--dev",
            &d.path("dev.safetensors"),
            "-o",
            &d.path(out),
            "--backbone",
            "cnn",
            "--cnn-channels",
            "16",
            "--cnn-layers",
            "3",
            "--cnn-first-kernel",
            "5",
            "--batch-size",
            "16",
            "--eval-every",
            "40",
            "--warmup",
            "10",
            "--lr",
            "2e-3",
            "--threads",
            "1",
            "--no-kmer-floor",
            "--quiet",
        ],
        extra,
    ))
}

#[test]
fn the_cnn_learns_a_motif_on_both_strands() {
    let d = data();
    let o = cnn(
        &d,
        "cnn",
        &[
            "--adapter",
            "mean",
            "--rc-augment",
            "--rc-average",
            "--steps",
            "160",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let rows = luminome_engine::testing::tsv_rows(&d.root.join("cnn/metrics.tsv"));
    let evals: Vec<_> = rows.iter().filter(|r| !r["dev_mcc"].is_empty()).collect();
    let first: f64 = evals.first().unwrap()["dev_loss"].parse().unwrap();
    let last = evals.last().unwrap();
    let last_loss: f64 = last["dev_loss"].parse().unwrap();
    let mcc: f64 = last["dev_mcc"].parse().unwrap();
    assert!(last_loss < first, "dev loss {first} -> {last_loss}");
    assert!(mcc > 0.8, "dev mcc {mcc}");
    // The checkpoint says what it is: the CNN and the strands it averages.
    let meta =
        luminome_engine::checkpoint::read_checkpoint_meta(&d.root.join("cnn/best.safetensors"))
            .unwrap();
    let json = serde_json::to_string(&meta.model).unwrap();
    assert!(
        json.contains("\"cnn\"") && json.contains("rc_average"),
        "{json}"
    );
}

#[test]
fn a_new_gated_classifier_scales_its_gate_score_by_one_over_root_width() {
    let d = data();
    let model = |out: &str| {
        let meta = luminome_engine::checkpoint::read_checkpoint_meta(
            &d.root.join(out).join("last.safetensors"),
        )
        .unwrap();
        serde_json::to_value(&meta.model).unwrap()
    };
    for adapter in ["gated", "mean"] {
        let o = cnn(&d, adapter, &["--adapter", adapter, "--steps", "2"]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    // 16 channels: s = 1/4 (docs/engine.md); stored, so predict and importance use it too.
    assert_eq!(
        model("gated")["gate_score_scale"],
        0.25,
        "{}",
        model("gated")
    );
    assert!(model("mean").get("gate_score_scale").is_none());
}

#[test]
fn settings_the_cnn_cannot_honour_are_refused() {
    let d = data();
    // RC averaging needs one-hot input.
    let o = run_s(&with(
        &[
            "classify",
            "--train",
            &d.path("train.safetensors"),
            "-o",
            &d.path("t"),
            "--adapter",
            "mean",
            "--backbone",
            "transformer",
            "--rc-average",
        ],
        TINY,
    ));
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("--strands both and --rc-average need --backbone cnn"),
        "{}",
        stderr(&o)
    );
    // --init loads a transformer.
    let o = cnn(
        &d,
        "c",
        &["--adapter", "mean", "--init", &d.path("dev.safetensors")],
    );
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("--backbone cnn trains from scratch"),
        "{}",
        stderr(&o)
    );
    // Transformer sizes do not size the CNN.
    let o = cnn(&d, "c", &["--adapter", "mean", "--d-model", "256"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("--d-model, --layers and --ffn size a transformer"),
        "{}",
        stderr(&o)
    );
    // An even kernel has no centre.
    let o = cnn(&d, "c", &["--adapter", "mean", "--cnn-kernel", "4"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("must be odd"), "{}", stderr(&o));
    for out in ["t", "c"] {
        assert!(!d.root.join(out).exists());
    }
}
