//! classify on a small training set: single nucleotides get the CNN on both strands, a
//! transformer gets the small-data sizes and regularisation; the log says which flags were set,
//! and given flags win.

mod common;

use common::*;

/// The model config of a run folder's last checkpoint, as JSON.
fn model_of(run: &std::path::Path) -> serde_json::Value {
    let meta =
        luminome_engine::checkpoint::read_checkpoint_meta(&run.join("last.safetensors")).unwrap();
    serde_json::to_value(&meta.model).unwrap()
}

fn encoder(d: &Data, out: &str) -> serde_json::Value {
    model_of(&d.root.join(out))["encoder"].clone()
}

#[test]
fn a_small_training_set_gets_the_small_data_defaults_unless_flags_say_otherwise() {
    let d = data();
    let base = [
        "classify",
        "--train",
        &d.path("train.safetensors"),
        "--dev",
        &d.path("dev.safetensors"),
        "--adapter",
        "mean",
        "--steps",
        "2",
        "--eval-every",
        "2",
        "--threads",
        "1",
        "--no-kmer-floor",
    ];
    // No backbone given, single nucleotides: the CNN averaging both strands.
    let o = run_s(&with(&base, &["-o", &d.path("auto")]));
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("classifier defaults for 96 training records: --backbone cnn --rc-augment --rc-average --lr 1e-3 --patience 10 (give --strands given for rows with a direction, such as promoters; --backbone transformer for a transformer"),
        "{e}"
    );
    // The log ends with the run folder, what it holds, and the command that uses it.
    let last = e.lines().last().unwrap();
    let dir = d.path("auto");
    assert!(
        last.starts_with(&format!(
            "outputs in {dir}/: best.config.json, best.safetensors"
        )) && last.contains("metrics.tsv")
            && last.ends_with(&format!(
                "next: luminome-predict --checkpoint {dir}/best.safetensors --dataset DATA -o OUT"
            )),
        "{last}"
    );
    let model = model_of(&d.root.join("auto"));
    assert_eq!(model["cnn"]["channels"], 64, "{model}");
    assert!(model["rc_average"].is_object(), "{model}");
    // A transformer asked for: the small-data sizes and regularisation.
    let o = run_s(&with(
        &base,
        &["-o", &d.path("small"), "--backbone", "transformer"],
    ));
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("small-data defaults --d-model 64 --layers 2 --ffn 256 --dropout 0.2 --weight-decay 0.1 --patience 5 --loss-patience 5"),
        "{e}"
    );
    let enc = encoder(&d, "small");
    assert_eq!(enc["d_model"], 64);
    assert_eq!(enc["num_layers"], 2);
    assert_eq!(enc["ffn_dim"], 256);
    assert_eq!(enc["dropout"], 0.2);
    // Flags given are kept and no longer listed; a transformer size asks for a transformer.
    let o = run_s(&with(
        &base,
        &[
            "-o",
            &d.path("given"),
            "--d-model",
            "32",
            "--dropout",
            "0.1",
            "--patience",
            "0",
        ],
    ));
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("small-data defaults --layers 2 --ffn 256 --weight-decay 0.1 --loss-patience 5"),
        "{e}"
    );
    let enc = encoder(&d, "given");
    assert_eq!(enc["d_model"], 32);
    assert_eq!(enc["dropout"], 0.1);
    let o = run_s(&with(
        &base,
        &[
            "-o",
            &d.path("cnn"),
            "--backbone",
            "cnn",
            "--cnn-channels",
            "8",
            "--cnn-layers",
            "1",
        ],
    ));
    assert!(o.status.success(), "{}", stderr(&o));
    // A CNN asked for keeps its own recipe, on one strand unless asked.
    assert!(
        stderr(&o).contains(
            "classifier defaults for 96 training records: --lr 1e-3 --patience 10 (give a flag"
        ),
        "{}",
        stderr(&o)
    );
    assert!(model_of(&d.root.join("cnn"))["rc_average"].is_null());
}

#[test]
fn strands_given_keeps_the_default_cnn_on_the_rows_as_given() {
    let d = data();
    let base = [
        "classify",
        "--train",
        &d.path("train.safetensors"),
        "--dev",
        &d.path("dev.safetensors"),
        "--cnn-channels",
        "8",
        "--cnn-layers",
        "1",
        "--steps",
        "2",
        "--eval-every",
        "2",
        "--threads",
        "1",
        "--no-kmer-floor",
    ];
    let strands_of = |run: &str| {
        let model = model_of(&d.root.join(run));
        assert!(model["cnn"].is_object(), "{model}");
        !model["rc_average"].is_null()
    };
    // The default CNN, without the both-strand averaging; the log names the backbone only.
    let o = run_s(&with(
        &base,
        &["--strands", "given", "-o", &d.path("given")],
    ));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o)
            .contains("classifier defaults for 96 training records: --backbone cnn --lr 1e-3"),
        "{}",
        stderr(&o)
    );
    assert!(!strands_of("given"));
    // both = the default.
    let o = run_s(&with(&base, &["--strands", "both", "-o", &d.path("both")]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(strands_of("both"));
    // given with a both-strand flag is a contradiction, refused before anything is written.
    let o = run_s(&with(
        &base,
        &[
            "--strands",
            "given",
            "--rc-average",
            "-o",
            &d.path("contradiction"),
        ],
    ));
    assert!(!o.status.success());
    assert!(stderr(&o).contains("--rc-average"), "{}", stderr(&o));
    assert!(!d.root.join("contradiction").exists());
    // Resuming keeps the run's strands.
    let last = d.path("given/last.safetensors");
    let o = run_s(&with(
        &base,
        &[
            "--strands",
            "both",
            "--resume",
            &last,
            "-o",
            &d.path("given"),
        ],
    ));
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("must be those of the resumed run (its strands: given)"),
        "{}",
        stderr(&o)
    );
    // Averaging both strands needs the CNN's one-hot input.
    let o = run_s(&with(
        &[
            "classify",
            "--train",
            &d.path("train.safetensors"),
            "--no-kmer-floor",
        ],
        &[
            "--strands",
            "both",
            "--backbone",
            "transformer",
            "-o",
            &d.path("tr"),
        ],
    ));
    assert!(!o.status.success());
    assert!(stderr(&o).contains("--strands both and --rc-average need --backbone cnn"));
}

#[test]
fn the_cnn_trains_for_twenty_epochs_within_bounds_unless_steps_are_given() {
    let d = data();
    let base = [
        "classify",
        "--train",
        &d.path("train.safetensors"),
        "--adapter",
        "mean",
        "--cnn-channels",
        "8",
        "--cnn-layers",
        "1",
        "--stop-after-steps",
        "1",
        "--threads",
        "1",
        "--no-kmer-floor",
    ];
    // 96 records, one per step: 20 epochs are 1,920 steps, stored as the run's length. No
    // --dev: no early stopping, so none is listed.
    let o = run_s(&with(
        &base,
        &["-o", &d.path("epochs"), "--batch-size", "1"],
    ));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("defaults for 96 training records: --backbone cnn --rc-augment --rc-average --lr 1e-3 --steps 1920 "),
        "{}",
        stderr(&o)
    );
    let state = luminome_engine::train::state::read_state(
        &d.root.join("epochs").join("last.safetensors"),
        &candle_core::Device::Cpu,
    )
    .unwrap()
    .0;
    assert_eq!(state.config.max_steps, 1920);
    // 20 epochs of 64 records a step are 30 steps: never fewer than the usual 1,000.
    let o = run_s(&with(
        &base,
        &[
            "-o",
            &d.path("floor"),
            "--batch-size",
            "32",
            "--grad-accum",
            "2",
        ],
    ));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("--steps 1000 "), "{}", stderr(&o));
    // --steps given wins and is not listed.
    let o = run_s(&with(
        &base,
        &["-o", &d.path("given"), "--batch-size", "1", "--steps", "7"],
    ));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("--steps"), "{}", stderr(&o));
    // Records a step beyond usize (batch × accumulation) do not overflow: the floor of 1,000.
    let o = run_s(&with(
        &base,
        &[
            "-o",
            &d.path("huge"),
            "--batch-size",
            "18446744073709551615",
            "--grad-accum",
            "2",
        ],
    ));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("--steps 1000 "), "{}", stderr(&o));
}

#[test]
fn a_large_training_set_gets_the_cnn_recipe_too_with_its_steps_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let train = dir.path().join("train.safetensors");
    let (s, l) = toy_motif_task(10_001, 8, 1);
    write_dataset(&train, &s, Some(&l), 10).unwrap();
    let out = dir.path().join("large");
    let o = run(&[
        "classify",
        "--train",
        train.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--batch-size",
        "1",
        "--cnn-channels",
        "8",
        "--cnn-layers",
        "1",
        "--stop-after-steps",
        "1",
        "--threads",
        "1",
        "--no-kmer-floor",
    ]);
    let e = stderr(&o);
    assert!(o.status.success(), "{e}");
    // 20 epochs of 10,001 records one a step would be 200,020 steps: at most 5,000.
    assert!(
        e.contains("classifier defaults for 10001 training records: --backbone cnn --rc-augment --rc-average --lr 1e-3 --steps 5000 ")
            && !e.contains("small training set"),
        "{e}"
    );
    let model = model_of(&out);
    assert_eq!(model["cnn"]["channels"], 8, "{model}");
    assert!(model["rc_average"].is_object(), "{model}");
}
