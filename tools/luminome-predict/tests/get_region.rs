//! Published GET region models (GETRegionFinetune; tests/fixtures/get_region of the engine) on a
//! luminome-regions dataset through luminome-predict: the predictions are the library's GET
//! outputs at each gene's read slot and strand, and what is refused.

mod common;
use common::{predict, read_tsv};

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use candle_core::{Device, Tensor};
use luminome_engine::models::get_region::{tss_expression, GetRegion, Strand, TssSite};
use luminome_engine::models::region::batch::read_slot;
use luminome_engine::testing::{write_region_dataset, write_region_dataset_features};
use luminome_io::region_dataset::RegionDataset;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../luminome-engine/tests/fixtures/get_region")
        .join(name)
}

/// A synthetic region dataset with `features` columns (the last the accessibility), with
/// expression, in two cell types.
fn dataset(dir: &Path, name: &str, features: usize) -> PathBuf {
    let path = dir.join(format!("{name}.safetensors"));
    let names: Vec<String> = (0..features - 1)
        .map(|i| format!("motif{i}"))
        .chain(["accessibility".to_string()])
        .collect();
    let names: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
    write_region_dataset_features(
        &path,
        14,
        6,
        &["K562", "GM12878"],
        7,
        Some(&|_, y| y),
        &names,
    )
    .unwrap();
    path
}

/// GET's expression for `record` computed through the library: the model over the sample's
/// used regions, read at its read slot in its strand's column.
fn library_value(get: &GetRegion, ds: &RegionDataset, record: usize) -> f32 {
    let b = ds.batch(&[record]).unwrap();
    let (n, f) = (b.n_regions, b.n_features);
    let used = b.region_mask.iter().filter(|&&m| m != 0).count();
    assert!(used > 0 && used <= n);
    let x = Tensor::from_slice(&b.features[..used * f], (1, used, f), &Device::Cpu).unwrap();
    let y = get.finetune().unwrap().forward(&x).unwrap();
    let slot = read_slot(b.tss_index[0], b.tss_slot.unwrap()[0] as usize, used);
    let strand = match b.strand.unwrap()[0] {
        1 => Strand::Plus,
        -1 => Strand::Minus,
        s => panic!("strand {s}"),
    };
    tss_expression(&y, &[TssSite { slot, strand }]).unwrap()[0]
}

/// Runs luminome-predict with `checkpoint` (and `extra` flags) on `ds` and checks every
/// prediction against the library's GET (`get`).
fn check_predictions(dir: &Path, checkpoint: &Path, extra: &[&str], ds: &Path, get: &GetRegion) {
    let out = dir.join("get.tsv");
    let metrics = dir.join("get.metrics.tsv");
    let mut args = vec![
        "--checkpoint",
        checkpoint.to_str().unwrap(),
        "--dataset",
        ds.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--metrics",
        metrics.to_str().unwrap(),
        "--subset",
        "all",
        "--batch-size",
        "5",
        "--quiet",
    ];
    args.extend(extra);
    let o = predict(&args);
    assert!(
        o.status.success(),
        "{}: {}",
        checkpoint.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    let header = std::fs::read_to_string(&out).unwrap();
    assert_eq!(
        header.lines().next().unwrap(),
        "record\tname\tgene_id\tcell_type\tpredicted\tobserved"
    );
    let rows = read_tsv(&out);
    let dataset = RegionDataset::open(ds).unwrap();
    let samples = dataset.read_samples().unwrap();
    assert_eq!(rows.len(), samples.len());
    let mut strands = [0usize; 2];
    for row in &rows {
        let r: usize = row["record"].parse().unwrap();
        assert_eq!(row["name"], samples[r].gene);
        assert_eq!(row["cell_type"], samples[r].cell_type);
        let p: f32 = row["predicted"].parse().unwrap();
        let want = library_value(get, &dataset, r);
        assert!(
            (p - want).abs() < 1e-6,
            "{}: record {r}: predicted {p}, the library's GET {want}",
            checkpoint.display()
        );
        strands[usize::from(samples[r].strand == '-')] += 1;
        let observed: f64 = row["observed"].parse().unwrap();
        assert!((observed - samples[r].expression.unwrap()).abs() < 1e-5);
    }
    assert!(strands[0] > 0 && strands[1] > 0, "{strands:?}");
    let m: HashMap<String, String> = read_tsv(&metrics)
        .into_iter()
        .map(|r| (r["metric"].clone(), r["value"].clone()))
        .collect();
    assert_eq!(m["n"], rows.len().to_string());
    for k in ["pearson", "spearman", "r2", "K562.pearson", "GM12878.mse"] {
        assert!(m.contains_key(k), "{k} missing: {m:?}");
    }
}

#[test]
fn get_predictions_are_the_models_output_at_the_read_slot_on_the_genes_strand() {
    let dir = tempfile::tempdir().unwrap();
    // finetune_tiny: a folder (config.json: 7 features, 4 heads) and its bare safetensors file.
    let ds = dataset(dir.path(), "genes7", 7);
    let folder = fixture("finetune_tiny");
    let get = GetRegion::open(&folder, None, &Device::Cpu).unwrap();
    check_predictions(dir.path(), &folder, &[], &ds, &get);
    check_predictions(
        dir.path(),
        &folder.join("model.safetensors"),
        &["--get-heads", "4"],
        &ds,
        &get,
    );
    // finetune_ckpt: a Lightning .ckpt without config (5 features, the default 12 heads).
    let ds = dataset(dir.path(), "genes5", 5);
    let ckpt = fixture("finetune_ckpt").join("finetune_ckpt.ckpt");
    let get = GetRegion::open(&ckpt, None, &Device::Cpu).unwrap();
    check_predictions(dir.path(), &ckpt, &[], &ds, &get);
}

#[test]
fn a_dataset_with_another_feature_count_is_refused_naming_both() {
    let dir = tempfile::tempdir().unwrap();
    let ds = dir.path().join("genes4.safetensors");
    write_region_dataset(&ds, 6, 5, &["K562"], 3, Some(&|_, y| y)).unwrap();
    let out = dir.path().join("get.tsv");
    let folder = fixture("finetune_tiny");
    let o = predict(&[
        "--checkpoint",
        folder.to_str().unwrap(),
        "--dataset",
        ds.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("takes 7 features") && e.contains("has 4"), "{e}");
    assert!(e.contains(&folder.display().to_string()), "{e}");
    assert!(e.contains(&ds.display().to_string()), "{e}");
    assert!(!out.exists());
}

#[test]
fn a_pretrain_checkpoint_and_a_split_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let ds = dataset(dir.path(), "genes7", 7);
    let out = dir.path().join("get.tsv");
    let run = |ckpt: &Path, extra: &[&str]| {
        let mut args = vec![
            "--checkpoint",
            ckpt.to_str().unwrap(),
            "--dataset",
            ds.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--quiet",
        ];
        args.extend(extra);
        let o = predict(&args);
        assert!(!o.status.success());
        assert!(!out.exists());
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let e = run(&fixture("pretrain_tiny"), &[]);
    assert!(e.contains("GETRegionPretrain"), "{e}");
    let e = run(&fixture("finetune_tiny"), &["--subset", "test"]);
    assert!(e.contains("no split"), "{e}");
}

/// A GET model's parts carry each sample's prediction, observed value and why it has none: the
/// gathered TSV and metrics (the NA counts included) are one run's.
#[test]
fn get_predictions_and_metrics_gather_to_one_runs() {
    let dir = tempfile::tempdir().unwrap();
    let ds = dataset(dir.path(), "genes7", 7);
    let folder = fixture("finetune_tiny");
    let p = |name: &str| dir.path().join(name).display().to_string();
    let base = [
        "--checkpoint",
        folder.to_str().unwrap(),
        "--dataset",
        ds.to_str().unwrap(),
        "--batch-size",
        "5",
    ];
    let run = |more: &[&str]| {
        let o = predict(&[&base[..], more].concat());
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    let (one, one_metrics) = (p("one.tsv"), p("one.metrics.tsv"));
    run(&["-o", &one, "--metrics", &one_metrics]);
    let parts: Vec<String> = (1..=3)
        .map(|i| p(&format!("p{i}.part.safetensors")))
        .collect();
    for (i, part) in parts.iter().enumerate() {
        let spec = format!("{}/3", i + 1);
        run(&["--shard", &spec, "-o", part]);
    }
    let (g, g_metrics) = (p("g.tsv"), p("g.metrics.tsv"));
    let mut gather = vec!["--gather"];
    gather.extend(parts.iter().map(String::as_str));
    gather.extend(["-o", &g, "--metrics", &g_metrics]);
    run(&gather);
    for (a, b) in [("one.tsv", "g.tsv"), ("one.metrics.tsv", "g.metrics.tsv")] {
        let (x, y) = (std::fs::read(p(a)).unwrap(), std::fs::read(p(b)).unwrap());
        assert!(!x.is_empty() && x == y, "{b} differs from {a}");
    }
}
