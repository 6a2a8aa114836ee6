//! `luminome-train region-pretrain` and `expression` on synthetic region datasets: losses fall,
//! the TSS-driven expression is learnt, a pretrained encoder initialises an expression model,
//! the same seed gives the same bytes, and the bad inputs are refused.

mod common;

use common::*;
use luminome_engine::testing::write_region_dataset;

const TINY: &[&str] = &[
    "--preset",
    "tiny",
    "--batch-size",
    "16",
    "--warmup",
    "10",
    "--lr",
    "3e-3",
    "--seed",
    "1",
    "--dropout",
    "0",
];

fn last_metric(dir: &Path, name: &str) -> f64 {
    metrics(dir)
        .iter()
        .rev()
        .find_map(|r| {
            r.get(name)
                .filter(|v| !v.is_empty())
                .map(|v| v.parse().unwrap())
        })
        .unwrap()
}

/// 320 synthetic genes in two cell types (expression from the TSS region) and a pretraining
/// set without expression.
fn region_data() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let genes = dir.path().join("genes.safetensors");
    write_region_dataset(&genes, 320, 8, &["K562", "GM12878"], 1, Some(&|_, y| y)).unwrap();
    let tiles = dir.path().join("tiles.safetensors");
    write_region_dataset(&tiles, 320, 8, &["K562", "GM12878"], 2, None).unwrap();
    (dir, genes, tiles)
}

#[test]
fn expression_from_the_tss_region_is_learnt_from_a_pretrained_encoder() {
    let (dir, genes, tiles) = region_data();
    let pre = dir.path().join("pre");
    let mut args = vec![
        "region-pretrain",
        "--train",
        tiles.to_str().unwrap(),
        "--holdout",
        "genes",
    ];
    args.extend(TINY);
    args.extend([
        "--steps",
        "120",
        "--eval-every",
        "40",
        "-o",
        pre.to_str().unwrap(),
    ]);
    let o = run(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let rows = metrics(&pre);
    let first: f64 = rows[..10]
        .iter()
        .map(|r| r["loss"].parse::<f64>().unwrap())
        .sum::<f64>()
        / 10.0;
    let last: f64 = rows[rows.len() - 10..]
        .iter()
        .map(|r| r["loss"].parse::<f64>().unwrap())
        .sum::<f64>()
        / 10.0;
    assert!(last < first, "pretraining loss {first} -> {last}");

    let out = dir.path().join("expr");
    let mut args = vec![
        "expression",
        "--init",
        pre.join("best.safetensors")
            .to_str()
            .unwrap()
            .to_owned()
            .leak(),
        "--train",
        genes.to_str().unwrap(),
        "--holdout",
        "genes",
        "--batch-size",
        "16",
        "--warmup",
        "10",
        "--lr",
        "3e-3",
        "--seed",
        "1",
        "--steps",
        "300",
        "--eval-every",
        "100",
        "-o",
        out.to_str().unwrap(),
    ];
    args.push("--head");
    args.push("attention-pool");
    let o = run(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let pearson = last_metric(&out, "dev_pearson");
    assert!(pearson > 0.8, "dev Pearson {pearson}");
    // The split is in the checkpoint, with the encoder of the pretraining run.
    let meta =
        luminome_engine::checkpoint::read_checkpoint_meta(&out.join("best.safetensors")).unwrap();
    let json = serde_json::to_value(&meta.model).unwrap();
    assert_eq!(json["holdout"]["by"], "genes");
    assert_eq!(json["encoder"]["d_model"], 32);
    assert!(meta
        .sources
        .iter()
        .any(|s| s.ends_with("pre/best.safetensors")));

    // Same seed, same bytes.
    let again = dir.path().join("expr2");
    let args2: Vec<&str> = args
        .iter()
        .map(|a| {
            if *a == out.to_str().unwrap() {
                again.to_str().unwrap()
            } else {
                a
            }
        })
        .collect();
    let o = run(&args2);
    assert!(o.status.success(), "{}", stderr(&o));
    let weights = |p: &Path| {
        let v = std::fs::read(p).unwrap();
        v[8 + u64::from_le_bytes(v[..8].try_into().unwrap()) as usize..].to_vec()
    };
    assert_eq!(
        weights(&out.join("best.safetensors")),
        weights(&again.join("best.safetensors"))
    );
}

#[test]
fn both_heads_and_both_losses_train_from_scratch() {
    let (dir, genes, _) = region_data();
    for (head, loss) in [("tss-region", "poisson"), ("attention-pool", "mse")] {
        let out = dir.path().join(format!("{head}-{loss}"));
        let mut args = vec![
            "expression",
            "--train",
            genes.to_str().unwrap(),
            "--holdout",
            "cell-type",
            "--test-cell-type",
            "GM12878",
            "--head",
            head,
            "--loss",
            loss,
        ];
        args.extend(TINY);
        args.extend([
            "--steps",
            "200",
            "--eval-every",
            "100",
            "-o",
            out.to_str().unwrap(),
        ]);
        let o = run(&args);
        assert!(o.status.success(), "{head} {loss}: {}", stderr(&o));
        let pearson = last_metric(&out, "dev_pearson");
        assert!(pearson > 0.7, "{head} {loss}: dev Pearson {pearson}");
    }
}

/// The linear path's weights in a checkpoint.
fn linear_weights(ckpt: &Path) -> Vec<u8> {
    let bytes = std::fs::read(ckpt).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    st.tensor("head.linear.weight").unwrap().data().to_vec()
}

#[test]
fn the_linear_path_starts_at_ridge_and_training_never_ends_below_it_on_dev() {
    let (dir, genes, _) = region_data();
    let g = genes.to_str().unwrap();
    for (path, inputs) in [("fixed", "tss-region"), ("joint", "tss-accessibility")] {
        let out = dir.path().join(path);
        let mut args = vec![
            "expression",
            "--train",
            g,
            "--holdout",
            "genes",
            "--head",
            "attention-pool",
            "--linear-path",
            path,
            "--linear-inputs",
            inputs,
        ];
        args.extend(TINY);
        args.extend([
            "--steps",
            "60",
            "--eval-every",
            "20",
            "-o",
            out.to_str().unwrap(),
        ]);
        let o = run(&args);
        assert!(o.status.success(), "{path}: {}", stderr(&o));
        // Step 0 is scored before any update: the linear model alone.
        let rows = metrics(&out);
        assert_eq!(rows[0]["step"], "0", "{path}");
        let start: f64 = rows[0]["dev_pearson"].parse().unwrap();
        // A linear model of the TSS region's features already explains the synthetic
        // expression (softplus of a linear function of two of them) well.
        assert!(start > 0.6, "{path}: step-0 dev Pearson {start}");
        let best = luminome_engine::checkpoint::read_checkpoint_meta(&out.join("best.safetensors"))
            .unwrap();
        let kept = best.metrics["dev_pearson"];
        let all_evals = rows
            .iter()
            .filter_map(|r| r.get("dev_pearson").filter(|v| !v.is_empty()))
            .map(|v| v.parse::<f64>().unwrap());
        // (metrics.tsv rounds to 6 decimals)
        let logged_best = all_evals.fold(f64::MIN, f64::max);
        assert!(
            (kept - logged_best).abs() < 1e-6,
            "{path}: kept {kept}, best {logged_best}"
        );
        assert!(kept >= start - 1e-6, "{path}: kept {kept} < start {start}");
        if path == "fixed" {
            // Training leaves a fixed path's weights at the ridge solution.
            assert_eq!(
                linear_weights(&out.join("best.safetensors")),
                linear_weights(&out.join("last.safetensors"))
            );
        }
    }
    // No linear path: no step-0 row (the spec's model, unchanged).
    let out = dir.path().join("none");
    let mut args = vec![
        "expression",
        "--train",
        g,
        "--holdout",
        "genes",
        "--linear-path",
        "none",
    ];
    args.extend(TINY);
    args.extend([
        "--steps",
        "20",
        "--eval-every",
        "20",
        "-o",
        out.to_str().unwrap(),
    ]);
    let o = run(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(metrics(&out)[0]["step"], "1");
}

#[test]
fn tss_accessibility_needs_accessibility_as_the_last_feature() {
    let dir = tempfile::tempdir().unwrap();
    let genes = dir.path().join("atac.safetensors");
    luminome_engine::testing::write_region_dataset_named(
        &genes,
        80,
        8,
        &["K562"],
        1,
        Some(&|_, y| y),
        ["motif0", "motif1", "motif2", "atac"],
    )
    .unwrap();
    let out = dir.path().join("out");
    refused(
        &["expression", "--train", genes.to_str().unwrap(), "--holdout", "genes", "-o", out.to_str().unwrap()],
        &out,
        &["atac.safetensors: --linear-inputs tss-accessibility reads the last feature, which is not 'accessibility'"],
    );
}

/// Rewrites a region dataset with sample `r`'s region_mask all zero (metadata kept).
fn zero_region_mask(path: &Path, r: usize) {
    let bytes = std::fs::read(path).unwrap();
    let (_, header) = safetensors::SafeTensors::read_metadata(&bytes).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let mut owned: Vec<(String, safetensors::Dtype, Vec<usize>, Vec<u8>)> = st
        .tensors()
        .into_iter()
        .map(|(n, t)| (n, t.dtype(), t.shape().to_vec(), t.data().to_vec()))
        .collect();
    for (name, _, shape, data) in owned.iter_mut() {
        if name == "region_mask" {
            let n = shape[1];
            data[r * n..(r + 1) * n].fill(0);
        }
    }
    let views: Vec<(String, safetensors::tensor::TensorView)> = owned
        .iter()
        .map(|(n, d, s, b)| {
            (
                n.clone(),
                safetensors::tensor::TensorView::new(*d, s.clone(), b).unwrap(),
            )
        })
        .collect();
    let out = safetensors::serialize(views, header.metadata().clone()).unwrap();
    std::fs::write(path, out).unwrap();
}

#[test]
fn bad_region_inputs_are_refused_with_the_sample() {
    let (dir, genes, tiles) = region_data();
    let out = dir.path().join("out");
    let o = out.to_str().unwrap();
    let g = genes.to_str().unwrap();
    // A held-out cell type the dataset does not have.
    refused(
        &["expression", "--train", g, "--holdout", "cell-type", "--test-cell-type", "HeLa", "-o", o],
        &out,
        &["genes.safetensors: --test-cell-type \"HeLa\" is not a cell type of the dataset (it has K562, GM12878)"],
    );
    // No expression at all (a pretraining set).
    refused(
        &["expression", "--train", tiles.to_str().unwrap(), "-o", o],
        &out,
        &["tiles.safetensors: no expression values"],
    );
    // Missing and negative values.
    let nan = dir.path().join("nan.safetensors");
    write_region_dataset(
        &nan,
        40,
        8,
        &["K562"],
        3,
        Some(&|s, y| if s == 7 { f64::NAN } else { y }),
    )
    .unwrap();
    refused(
        &["expression", "--train", nan.to_str().unwrap(), "-o", o],
        &out,
        &["nan.safetensors: sample 7 (G7 in K562): expression NaN is missing"],
    );
    let neg = dir.path().join("neg.safetensors");
    write_region_dataset(
        &neg,
        40,
        8,
        &["K562"],
        3,
        Some(&|s, y| if s == 9 { -0.5 } else { y }),
    )
    .unwrap();
    refused(
        &["expression", "--train", neg.to_str().unwrap(), "-o", o],
        &out,
        &[
            "neg.safetensors: sample 9 (G9 in K562): expression -0.5 is negative",
            "--loss mse",
        ],
    );
    // Samples whose every region is masked.
    let empty = dir.path().join("empty.safetensors");
    write_region_dataset(&empty, 40, 8, &["K562"], 3, Some(&|_, y| y)).unwrap();
    let samples = empty.with_file_name("empty.samples.tsv");
    let text = std::fs::read_to_string(&samples).unwrap();
    let edited: Vec<String> = text
        .lines()
        .enumerate()
        .map(|(i, l)| {
            if i == 4 {
                let mut f: Vec<&str> = l.split('\t').collect();
                f[7] = "0";
                f.join("\t")
            } else {
                l.to_string()
            }
        })
        .collect();
    // Sample 3's mask emptied in the tensor: the table still counts its regions, and that
    // disagreement is refused on its own (a sample with an empty mask is never trained on).
    zero_region_mask(&empty, 3);
    refused(
        &["expression", "--train", empty.to_str().unwrap(), "-o", o],
        &out,
        &[
            "empty.samples.tsv: line 5: sample 3 has regions_used",
            "masks 0 region(s)",
        ],
    );
    // With the table saying so too: an empty sample, refused unless left out.
    std::fs::write(&samples, edited.join("\n") + "\n").unwrap();
    refused(
        &["expression", "--train", empty.to_str().unwrap(), "-o", o],
        &out,
        &[
            "empty.safetensors: sample 3 (G3 in K562) has no region in its window",
            "--skip-empty-samples",
        ],
    );
    // Every sample empty and left out: said so, not "after the holdout" or an internal error.
    let all_empty: Vec<String> = text
        .lines()
        .enumerate()
        .map(|(i, l)| {
            let mut f: Vec<&str> = l.split('\t').collect();
            if i > 0 {
                f[7] = "0";
            }
            f.join("\t")
        })
        .collect();
    std::fs::write(&samples, all_empty.join("\n") + "\n").unwrap();
    for r in 0..40 {
        zero_region_mask(&empty, r);
    }
    for family in ["expression", "region-pretrain"] {
        refused(
            &[
                family,
                "--train",
                empty.to_str().unwrap(),
                "--skip-empty-samples",
                "-o",
                o,
            ],
            &out,
            &[
                "empty.safetensors: no training samples left",
                "left out 40 sample(s) with no region",
            ],
        );
    }
    // A classifier checkpoint as --init; a pretraining checkpoint of other features.
    let d = data();
    let clf = d.root.join("clf");
    let mut args = vec![
        "classify",
        "--train",
        d.root
            .join("train.safetensors")
            .to_str()
            .unwrap()
            .to_owned()
            .leak() as &str,
        "--adapter",
        "mean",
        "-o",
        clf.to_str().unwrap(),
    ];
    args.extend(common::TINY);
    let r = run(&args);
    assert!(r.status.success(), "{}", stderr(&r));
    refused(
        &[
            "expression",
            "--train",
            g,
            "--init",
            clf.join("best.safetensors").to_str().unwrap(),
            "-o",
            o,
        ],
        &out,
        &[
            "--init needs a masked-region pretraining checkpoint (kind region_pretrain",
            "sequence classifier",
        ],
    );
    // ... and an expression dataset given to a sequence command.
    refused(
        &["classify", "--train", g, "--adapter", "mean", "-o", o],
        &out,
        &["genes.safetensors"],
    );
}

#[test]
fn accessibility_pretraining_is_stored_and_resumed_only_with_its_target() {
    let (dir, _, tiles) = region_data();
    let pre = dir.path().join("pre_acc");
    let mut args = vec![
        "region-pretrain",
        "--train",
        tiles.to_str().unwrap(),
        "--holdout",
        "genes",
        "--target",
        "accessibility",
    ];
    args.extend(TINY);
    args.extend([
        "--steps",
        "20",
        "--eval-every",
        "10",
        "-o",
        pre.to_str().unwrap(),
    ]);
    let o = run(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let meta =
        luminome_engine::checkpoint::read_checkpoint_meta(&pre.join("last.safetensors")).unwrap();
    let json = serde_json::to_value(&meta.model).unwrap();
    assert_eq!(json["target"], "accessibility");
    assert!(last_metric(&pre, "dev_r2").is_finite());
    // Resuming with the other objective would mix two runs: refused, naming the run's target.
    let last = pre.join("last.safetensors");
    let o = run(&[
        "region-pretrain",
        "--train",
        tiles.to_str().unwrap(),
        "--holdout",
        "genes",
        "--target",
        "all",
        "--resume",
        last.to_str().unwrap(),
        "--steps",
        "30",
        "-o",
        pre.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("reconstructs --target accessibility"),
        "{}",
        stderr(&o)
    );
}
