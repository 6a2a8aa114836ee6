//! `luminome-train expression --init` from a GET checkpoint in its published layout (the
//! engine's tiny random fixtures, made by the authors' code): names kept, GET's predictions at
//! the start, and the checkpoints that do not fit refused.

mod common;

use common::*;

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
