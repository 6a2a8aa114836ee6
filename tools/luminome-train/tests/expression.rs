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

fn metrics(dir: &Path) -> Vec<std::collections::HashMap<String, String>> {
    luminome_engine::testing::tsv_rows(&dir.join("metrics.tsv"))
}

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

fn refused(args: &[&str], out: &Path, needles: &[&str]) {
    let o = run(args);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    for n in needles {
        assert!(e.contains(n), "{n:?} not in {e}");
    }
    assert!(!out.join("best.safetensors").exists() && !out.join("metrics.tsv").exists());
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

/// The engine's tiny random GET checkpoints (made by the authors' code; 7 features per region).
fn get_fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../luminome-engine/tests/fixtures/get_region")
        .join(name)
}

/// 200 synthetic genes × 2 cell types with `features` columns (the last the accessibility).
fn get_dataset(dir: &Path, features: usize) -> PathBuf {
    let path = dir.join(format!("genes{features}.safetensors"));
    let names: Vec<String> = (0..features - 1)
        .map(|i| format!("cluster{i}"))
        .chain(["accessibility".to_string()])
        .collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    luminome_engine::testing::write_region_dataset_features(
        &path,
        100,
        10,
        &["K562", "GM12878"],
        5,
        Some(&|_, y| y),
        &names,
    )
    .unwrap();
    path
}

/// GET's own prediction for `record` (the library's GETRegionFinetune over the sample's used
/// regions, at its read slot in its strand's column), as luminome-predict gives it.
fn get_value(
    get: &luminome_engine::models::get_region::GetRegion,
    ds: &luminome_io::region_dataset::RegionDataset,
    record: usize,
) -> Option<f32> {
    use luminome_engine::models::get_region::{tss_expression, Strand, TssSite};
    let b = ds.batch(&[record]).unwrap();
    let f = b.n_features;
    let used = b.region_mask.iter().filter(|&&m| m != 0).count();
    let strand = match b.strand.as_ref().unwrap()[0] {
        1 => Strand::Plus,
        -1 => Strand::Minus,
        _ => return None,
    };
    let x = candle_core::Tensor::from_slice(
        &b.features[..used * f],
        (1, used, f),
        &candle_core::Device::Cpu,
    )
    .unwrap();
    let y = get.finetune().unwrap().forward(&x).unwrap();
    let slot = luminome_engine::models::region::batch::read_slot(
        b.tss_index[0],
        b.tss_slot.unwrap()[0] as usize,
        used,
    );
    Some(tss_expression(&y, &[TssSite { slot, strand }]).unwrap()[0])
}

fn tensor_names(ckpt: &Path) -> Vec<String> {
    let bytes = std::fs::read(ckpt).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    st.names().into_iter().map(String::from).collect()
}

#[test]
fn a_get_checkpoint_as_init_keeps_its_names_and_starts_at_gets_predictions() {
    use luminome_engine::models::expression::{ExpressionConfig, ExpressionModel};
    use luminome_engine::models::region::RegionTensors;
    let dir = tempfile::tempdir().unwrap();
    let ds_path = get_dataset(dir.path(), 7);
    let ds_arg = ds_path.to_str().unwrap();
    let finetune = get_fixture("finetune_tiny");
    // Without the linear path and with a learning rate of 1e-12, one step leaves GET as
    // published: the trained model's predictions are GET's own.
    let out = dir.path().join("get_none");
    let o = run(&[
        "expression",
        "--train",
        ds_arg,
        "--holdout",
        "genes",
        "--init",
        finetune.to_str().unwrap(),
        "--linear-path",
        "none",
        "--steps",
        "1",
        "--warmup",
        "1",
        "--lr",
        "1e-12",
        "--batch-size",
        "16",
        "--seed",
        "1",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("GET's encoder and head from --init (GETRegionFinetune"),
        "{}",
        stderr(&o)
    );
    // GET's start is scored before any update.
    assert_eq!(metrics(&out)[0]["step"], "0");
    let last = out.join("last.safetensors");
    let names = tensor_names(&last);
    for n in [
        "region_embed.embed.weight",
        "cls_token",
        "encoder.blocks.1.attn.q_bias",
        "encoder.norm.weight",
        "head_exp.head.weight",
    ] {
        assert!(names.iter().any(|x| x == n), "{n} missing: {names:?}");
    }
    assert!(
        !names
            .iter()
            .any(|x| x.starts_with("head.") || x.contains("feature_mean")),
        "{names:?}"
    );

    let device = candle_core::Device::Cpu;
    let ck = luminome_engine::checkpoint::Checkpoint::load(&last, &device).unwrap();
    let model: &ExpressionModel = &ck.get::<ExpressionConfig>().unwrap().clone();
    let get =
        luminome_engine::models::get_region::GetRegion::open(&finetune, None, &device).unwrap();
    let ds = luminome_io::region_dataset::RegionDataset::open(&ds_path).unwrap();
    let records: Vec<usize> = (0..ds.len()).collect();
    let e = &model.config.encoder;
    let mut compared = 0;
    for chunk in records.chunks(16) {
        let t = RegionTensors::new(&ds, chunk, e.max_offset(), false, &device).unwrap();
        for (&r, p) in chunk.iter().zip(model.predict(&t).unwrap()) {
            if let Some(want) = get_value(&get, &ds, r) {
                assert!(
                    (p - want).abs() < 1e-4,
                    "record {r}: trained start {p}, GET {want}"
                );
                compared += 1;
            }
        }
    }
    assert!(compared * 10 >= ds.len() * 9, "{compared} of {}", ds.len());

    // From the pretrain checkpoint (no expression head), with the default linear path: it
    // trains, the head is GET's head_exp, the pretrain-only tensors are left behind.
    let out = dir.path().join("get_pretrain");
    let pretrain = get_fixture("pretrain_tiny");
    let mut args = vec![
        "expression",
        "--train",
        ds_arg,
        "--holdout",
        "genes",
        "--init",
        pretrain.to_str().unwrap(),
    ];
    args.extend([
        "--steps",
        "30",
        "--eval-every",
        "10",
        "--batch-size",
        "16",
        "--lr",
        "1e-3",
        "--seed",
        "2",
        "-o",
        out.to_str().unwrap(),
    ]);
    let o = run(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let rows = metrics(&out);
    assert_eq!(rows[0]["step"], "0");
    assert!(rows
        .iter()
        .skip(1)
        .all(|r| r["loss"].parse::<f64>().unwrap().is_finite()));
    let names = tensor_names(&out.join("best.safetensors"));
    assert!(
        names.iter().any(|n| n == "head_exp.head.weight")
            && names.iter().any(|n| n == "head.linear.weight"),
        "{names:?}"
    );
    assert!(
        !names
            .iter()
            .any(|n| n == "mask_token" || n.starts_with("head_mask")),
        "{names:?}"
    );
}

#[test]
fn a_get_checkpoint_is_refused_for_another_feature_count_or_the_pooling_head() {
    let dir = tempfile::tempdir().unwrap();
    let finetune = get_fixture("finetune_tiny");
    let f = finetune.to_str().unwrap();
    let six = get_dataset(dir.path(), 6);
    let seven = get_dataset(dir.path(), 7);
    let out = dir.path().join("out");
    let base = |ds: &Path| -> Vec<String> {
        [
            "expression",
            "--train",
            ds.to_str().unwrap(),
            "--holdout",
            "genes",
            "--init",
            f,
            "--steps",
            "2",
            "-o",
            out.to_str().unwrap(),
        ]
        .map(String::from)
        .to_vec()
    };
    let cases: Vec<(Vec<String>, Vec<&str>)> = vec![
        (
            base(&six),
            vec!["takes 7 features", "has 6", "genes6.safetensors"],
        ),
        (
            [base(&seven), vec!["--head".into(), "attention-pool".into()]].concat(),
            vec!["--head attention-pool does not apply"],
        ),
        (
            [base(&seven), vec!["--d-model".into(), "32".into()]].concat(),
            vec!["do not apply with --init"],
        ),
    ];
    for (args, needles) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        refused(&args, &out, &needles);
    }
}
