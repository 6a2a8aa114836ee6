//! classify on a small training set: the small-data defaults are applied to the flags not given,
//! the log says which, and given flags win.

mod common;

use common::*;

fn encoder(d: &Data, out: &str) -> serde_json::Value {
    let meta = luminome_engine::checkpoint::read_checkpoint_meta(
        &d.root.join(out).join("last.safetensors"),
    )
    .unwrap();
    serde_json::to_value(&meta.model).unwrap()["encoder"].clone()
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
    let o = run_s(&with(&base, &["-o", &d.path("small")]));
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("small training set (96 records, fewer than 10000)")
            && e.contains("--d-model 64 --layers 2 --ffn 256 --dropout 0.2 --weight-decay 0.1 --patience 5 --loss-patience 5"),
        "{e}"
    );
    let enc = encoder(&d, "small");
    assert_eq!(enc["d_model"], 64);
    assert_eq!(enc["num_layers"], 2);
    assert_eq!(enc["ffn_dim"], 256);
    assert_eq!(enc["dropout"], 0.2);
    // Flags given are kept and no longer listed.
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
    // The CNN keeps its own defaults.
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
    assert!(!stderr(&o).contains("small-data"), "{}", stderr(&o));
}
