//! `luminome-train kmer-linear` and the k-mer floor of classifier runs, through the binary.

mod common;

use common::*;

fn kmer(d: &Data, out: &str, extra: &[&str]) -> Output {
    let mut args = vec![
        "kmer-linear",
        "--train",
        &d.path("train.safetensors"),
        "--dev",
        &d.path("dev.safetensors"),
        "-o",
        &d.path(out),
        "--k",
        "1-4",
        "--quiet",
    ]
    .into_iter()
    .map(String::from)
    .collect::<Vec<_>>();
    args.extend(extra.iter().map(|s| s.to_string()));
    run_s(&args)
}

fn weights(path: &str) -> Vec<u8> {
    let bytes = std::fs::read(path).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let mut v = st.tensor("weight").unwrap().data().to_vec();
    v.extend(st.tensor("bias").unwrap().data());
    v
}

#[test]
fn same_weights_on_one_and_two_threads() {
    let d = data();
    let a = kmer(&d, "t1", &["--threads", "1"]);
    assert!(a.status.success(), "{}", stderr(&a));
    let b = kmer(&d, "t2", &["--threads", "2"]);
    assert!(b.status.success(), "{}", stderr(&b));
    assert_eq!(
        weights(&d.path("t1/best.safetensors")),
        weights(&d.path("t2/best.safetensors"))
    );
    assert_eq!(
        std::fs::read(d.path("t1/metrics.tsv")).unwrap(),
        std::fs::read(d.path("t2/metrics.tsv")).unwrap()
    );
}

#[test]
fn a_training_set_with_one_class_is_refused() {
    let d = data();
    let (s, _) = toy_motif_task(20, 20, 5);
    write_dataset(&d.root.join("one.safetensors"), &s, Some(&[1; 20]), 24).unwrap();
    let o = run_s(&with(
        &[
            "kmer-linear",
            "--train",
            &d.path("one.safetensors"),
            "--dev",
            &d.path("dev.safetensors"),
            "-o",
            &d.path("out"),
        ],
        &[],
    ));
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(
        e.contains("one.safetensors") && e.contains("at least two classes"),
        "{e}"
    );
    assert!(!d.root.join("out").exists());
    // Declaring the classes does not help: class 0 has nothing to learn from.
    let o = run_s(&with(
        &[
            "kmer-linear",
            "--train",
            &d.path("one.safetensors"),
            "--dev",
            &d.path("dev.safetensors"),
            "-o",
            &d.path("out"),
            "--classes",
            "0,1",
        ],
        &[],
    ));
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(
        e.contains("one.safetensors") && e.contains("no training records"),
        "{e}"
    );
    assert!(!d.root.join("out").exists());
}

#[test]
fn a_dev_class_absent_from_training_is_refused_with_its_record() {
    let d = data();
    let o = run_s(&with(
        &[
            "kmer-linear",
            "--train",
            &d.path("train.safetensors"),
            "--dev",
            &d.path("three.safetensors"),
            "-o",
            &d.path("out"),
        ],
        &[],
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
fn bad_k_ranges_are_refused_before_anything_is_read() {
    let d = data();
    for k in ["9", "1-9", "4-2", "0", ""] {
        let o = kmer(&d, "out", &["--k", k]);
        assert!(!o.status.success(), "--k {k}");
        assert!(stderr(&o).contains("--k"), "--k {k}: {}", stderr(&o));
        assert!(!d.root.join("out").exists());
    }
}

#[test]
fn classifier_runs_report_the_kmer_floor_beside_their_metrics() {
    let d = data();
    let o = run_s(&with(
        &[
            "classify",
            "--adapter",
            "mean",
            "--train",
            &d.path("train.safetensors"),
            "--dev",
            &d.path("dev.safetensors"),
            "--test",
            &d.path("dev.safetensors"),
            "-o",
            &d.path("cls"),
            "--floor-k",
            "1-4",
        ],
        TINY,
    ));
    assert!(o.status.success(), "{}", stderr(&o));
    let rows = luminome_engine::testing::tsv_rows(&d.root.join("cls/kmer_floor.tsv"));
    let mcc = |set: &str| {
        rows.iter()
            .find(|r| r["metric"] == "mcc" && r["set"] == set)
            .unwrap_or_else(|| panic!("no {set} mcc in {rows:?}"))
            .clone()
    };
    // The toy task is easy for k-mers (TATA), and six steps of a tiny encoder learn nothing yet:
    // the floor wins, and the run says so even with --quiet.
    let dev = mcc("dev");
    let floor: f64 = dev["kmer_floor"].parse().unwrap();
    let model: f64 = dev["model"].parse().unwrap();
    assert!(floor > 0.8 && model < floor, "{dev:?}");
    mcc("test");
    // The fitted floor is kept as a checkpoint an ensemble takes (fitted once, not per seed).
    let saved = luminome_engine::checkpoint::read_checkpoint_meta(
        &d.root.join("cls/kmer_floor.safetensors"),
    )
    .unwrap();
    let model = serde_json::to_value(&saved.model).unwrap();
    assert_eq!(model["kind"], "kmer_linear", "{model}");
    let saved_mcc = saved.metrics.get("dev_mcc").or(saved.metrics.get("mcc"));
    assert!(
        saved_mcc.is_some_and(|m| (m - floor).abs() < 1e-4),
        "{:?} vs {floor}",
        saved.metrics
    );
    // ... and names the floor's checkpoint to predict with instead.
    assert!(
        stderr(&o).contains(&format!(
            "WORSE than the k-mer floor on dev; predict with the floor instead: luminome-predict --checkpoint {}",
            d.root.join("cls/kmer_floor.safetensors").display()
        )),
        "{}",
        stderr(&o)
    );
    let o = run_s(&with(
        &[
            "classify",
            "--adapter",
            "mean",
            "--train",
            &d.path("train.safetensors"),
            "--dev",
            &d.path("dev.safetensors"),
            "-o",
            &d.path("nofloor"),
            "--no-kmer-floor",
        ],
        TINY,
    ));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!d.root.join("nofloor/kmer_floor.tsv").exists());
    assert!(!d.root.join("nofloor/kmer_floor.safetensors").exists());
}

/// `--help` states the penalty grid the code searches.
#[test]
fn help_states_the_penalty_grid_that_is_used() {
    let o = bin().args(["kmer-linear", "--help"]).output().unwrap();
    let help = String::from_utf8(o.stdout).unwrap();
    let grid = luminome_engine::models::kmer_linear::select::DEFAULT_L2_GRID;
    let (first, last) = (grid[0], grid[grid.len() - 1]);
    assert_eq!(
        (first, grid[1], grid[2], grid[3], last),
        (10.0, 3.0, 1.0, 0.3, 1e-4)
    );
    assert!(
        help.contains("[default: 10, 3, 1, 0.3, ..., 1e-4"),
        "{help}"
    );
}
