//! GET against the authors' code: fixtures made by GET-Foundation/get_model's own
//! `GETRegionFinetune` / `GETRegionPretrain` on tiny random configurations
//! (tests/fixtures/get_region/README.md, bench/reference/get/make_fixtures.py).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use candle_core::{Device, Tensor};

use super::*;

/// Agreement required with the authors' outputs: 10× the largest error seen (9.6e-7), and below
/// what a LayerNorm eps of 1e-5 instead of GET's 1e-6 gives on these fixtures (5e-5 in the
/// hidden states), so that slip would fail too.
const TOL: f32 = 1e-5;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/get_region")
        .join(name)
}

fn load(name: &str, file: &str) -> HashMap<String, Tensor> {
    candle_core::safetensors::load(fixture(name).join(file), &Device::Cpu).unwrap()
}

fn max_diff(a: &Tensor, b: &Tensor) -> f32 {
    assert_eq!(a.dims(), b.dims());
    (a - b)
        .unwrap()
        .abs()
        .unwrap()
        .flatten_all()
        .unwrap()
        .max(0)
        .unwrap()
        .to_scalar::<f32>()
        .unwrap()
}

fn open(path: &Path, heads: Option<usize>) -> GetRegion {
    GetRegion::open(path, heads, &Device::Cpu).unwrap()
}

fn open_error(path: &Path) -> String {
    match GetRegion::open(path, None, &Device::Cpu) {
        Ok(_) => panic!("{} opened", path.display()),
        Err(e) => format!("{e:#}"),
    }
}

/// The fixture's finetune model on its inputs: (|Δ expression|, |Δ hidden|).
fn finetune_error(m: &GetRegion, name: &str) -> (f32, f32) {
    let x = &load(name, "inputs.safetensors")["region_motif"];
    let e = load(name, "expected.safetensors");
    let f = m.finetune().unwrap();
    let exp = max_diff(&f.forward(x).unwrap(), &e["exp"]);
    let hidden = max_diff(&f.hidden(x).unwrap(), &e["hidden"]);
    (exp, hidden)
}

#[test]
fn finetune_expression_and_hidden_states_match_the_authors_code() {
    for (name, path) in [
        ("finetune_tiny", fixture("finetune_tiny")),
        ("finetune_ckpt", fixture("finetune_ckpt")),
        (
            "finetune_ckpt",
            fixture("finetune_ckpt").join("finetune_ckpt.ckpt"),
        ),
    ] {
        let m = open(&path, None);
        let (exp, hidden) = finetune_error(&m, name);
        eprintln!("{}: max |Δ| exp {exp:e}, hidden {hidden:e}", path.display());
        assert!(
            exp < TOL && hidden < TOL,
            "{name}: exp {exp}, hidden {hidden}"
        );
    }
}

#[test]
fn the_sizes_of_a_checkpoint_without_config_are_read_off_its_tensors() {
    let m = open(&fixture("finetune_ckpt"), None);
    let c = &m.config;
    assert_eq!(
        (
            c.num_motif,
            c.embed_dim,
            c.num_layers,
            c.num_heads,
            c.output_dim
        ),
        (5, 12, 3, DEFAULT_HEADS, 2)
    );
    assert_eq!(c.model, Some(GetRegionKind::Finetune));
    // The heads are not in the tensors: another count loads, and computes something else.
    let six = open(&fixture("finetune_ckpt"), Some(6));
    let (exp, _) = finetune_error(&six, "finetune_ckpt");
    assert!(exp > 1e-3, "6 heads gave the 12-head outputs ({exp})");
}

#[test]
fn pretrain_reconstruction_matches_the_authors_code() {
    let m = open(&fixture("pretrain_tiny"), None);
    let GetRegionModel::Pretrain(p) = &m.model else {
        panic!("not a pretrain model")
    };
    let i = load("pretrain_tiny", "inputs.safetensors");
    let e = load("pretrain_tiny", "expected.safetensors");
    let (x, mask) = (&i["region_motif"], &i["mask"]);
    let masked = max_diff(&p.forward_masked(x, mask).unwrap(), &e["masked"]);
    let hidden = max_diff(&p.hidden(x, mask).unwrap(), &e["hidden"]);
    eprintln!("pretrain_tiny: max |Δ| masked {masked:e}, hidden {hidden:e}");
    assert!(
        masked < TOL && hidden < TOL,
        "masked {masked}, hidden {hidden}"
    );
    // Without the mask the masked regions' reconstructions change: the mask is used.
    let none = mask.zeros_like().unwrap();
    let unmasked = p.forward(x, &none).unwrap();
    let with = p.forward(x, mask).unwrap();
    assert!(max_diff(&unmasked, &with) > 1e-3);
    assert!(m
        .finetune()
        .unwrap_err()
        .to_string()
        .contains("GETRegionPretrain"));
}

/// A copy of `finetune_tiny` whose model.safetensors is rewritten by `edit`.
fn edited(edit: impl FnOnce(&mut HashMap<String, Tensor>)) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for f in ["config.json", "model.safetensors"] {
        std::fs::copy(fixture("finetune_tiny").join(f), dir.path().join(f)).unwrap();
    }
    let mut t = load("finetune_tiny", "model.safetensors");
    edit(&mut t);
    candle_core::safetensors::save(&t, dir.path().join("model.safetensors")).unwrap();
    dir
}

#[test]
fn a_missing_extra_or_misshaped_tensor_is_refused_by_name() {
    let gone = "encoder.blocks.1.attn.q_bias";
    let d = edited(|t| {
        t.remove(gone).unwrap();
    });
    let e = open_error(d.path());
    assert!(e.contains(gone) && e.contains("missing"), "{e}");

    let d = edited(|t| {
        t.insert(
            "cls_token".into(),
            Tensor::zeros((1, 1, 8), candle_core::DType::F32, &Device::Cpu).unwrap(),
        );
    });
    let e = open_error(d.path());
    assert!(
        e.contains("cls_token") && e.contains("[1, 1, 8]") && e.contains("[1, 1, 16]"),
        "{e}"
    );

    let d = edited(|t| {
        let x = t["encoder.norm.bias"].clone();
        t.insert("encoder.blocks.2.norm1.bias".into(), x);
    });
    let e = open_error(d.path());
    assert!(
        e.contains("encoder.blocks.2.norm1.bias") && e.contains("not part"),
        "{e}"
    );
}

#[test]
fn lightning_prefixes_v1_names_and_loss_entries_load_as_the_same_model() {
    let v1 = |n: &str| -> String {
        let n = n
            .replace("encoder.blocks.", "blocks.")
            .replace("encoder.norm.", "fc_norm.")
            .replace("region_embed.embed.", "region_embed.proj.")
            .replace("head_exp.head.", "head.");
        format!("model.{n}")
    };
    let d = edited(|t| {
        let old: Vec<(String, Tensor)> = t.drain().collect();
        t.extend(old.into_iter().map(|(k, v)| (v1(&k), v)));
        let one = Tensor::ones(1, candle_core::DType::F32, &Device::Cpu).unwrap();
        t.insert("model.metrics.exp.pearson.n_total".into(), one.clone());
        t.insert("loss.exp.weight".into(), one);
    });
    let raw =
        candle_core::safetensors::load(d.path().join("model.safetensors"), &Device::Cpu).unwrap();
    assert!(
        raw.contains_key("model.blocks.1.attn.qkv.weight") && raw.contains_key("model.head.bias")
    );
    let (exp, hidden) = finetune_error(&open(d.path(), None), "finetune_tiny");
    assert!(exp < TOL && hidden < TOL, "exp {exp}, hidden {hidden}");
}

#[test]
fn a_config_json_that_disagrees_with_the_tensors_is_refused() {
    let d = edited(|_| {});
    let cfg = r#"{"model": "GETRegionFinetune", "num_motif": 9, "embed_dim": 16, "num_layers": 2, "num_heads": 4}"#;
    std::fs::write(d.path().join("config.json"), cfg).unwrap();
    let e = open_error(d.path());
    assert!(
        e.contains("region_embed.embed.weight") && e.contains("[16, 9]"),
        "{e}"
    );
    let cfg = r#"{"model": "GETRegionPretrain", "num_motif": 7, "embed_dim": 16, "num_layers": 2, "num_heads": 4}"#;
    std::fs::write(d.path().join("config.json"), cfg).unwrap();
    assert!(open_error(d.path()).contains("GETRegionPretrain"));
    let err = GetRegion::open(d.path(), Some(3), &Device::Cpu)
        .unwrap_err()
        .to_string();
    assert!(err.contains("num_heads"), "{err}");
}

#[test]
fn features_of_another_width_are_refused() {
    let m = open(&fixture("finetune_tiny"), None);
    let x = Tensor::zeros((1, 4, 6), candle_core::DType::F32, &Device::Cpu).unwrap();
    let e = m.finetune().unwrap().forward(&x).unwrap_err().to_string();
    assert!(e.contains("[1, 4, 6]") && e.contains('7'), "{e}");
}

#[test]
fn a_motif_count_mismatch_names_both_counts_and_files() {
    let (ck, ds) = (Path::new("get.ckpt"), Path::new("regions.tsv"));
    check_motif_count(ck, 283, ds, 283).unwrap();
    let e = check_motif_count(ck, 283, ds, 282).unwrap_err().to_string();
    for part in ["get.ckpt", "283", "regions.tsv", "282"] {
        assert!(e.contains(part), "{e}");
    }
}

#[test]
fn tss_expression_reads_the_genes_strand_at_its_region() {
    let out = Tensor::new(
        &[[[1f32, 2.], [3., 4.]], [[5., 6.], [7., 8.]]],
        &Device::Cpu,
    )
    .unwrap();
    let sites = [
        TssSite {
            slot: 1,
            strand: Strand::Plus,
        },
        TssSite {
            slot: 0,
            strand: Strand::parse("-").unwrap(),
        },
    ];
    assert_eq!(tss_expression(&out, &sites).unwrap(), vec![3.0, 6.0]);
    let far = [
        sites[0],
        TssSite {
            slot: 2,
            strand: Strand::Minus,
        },
    ];
    assert!(tss_expression(&out, &far)
        .unwrap_err()
        .to_string()
        .contains("slot 2"));
    assert!(tss_expression(&out, &sites[..1]).is_err());
    assert!(Strand::parse(".").is_err());
}

#[test]
fn the_published_preset_is_valid() {
    let c = GetRegionConfig::preset("get").unwrap();
    c.validate("preset").unwrap();
    assert_eq!(
        (c.num_motif, c.embed_dim, c.num_layers, c.num_heads),
        (283, 768, 12, 12)
    );
    let pretrain = c.clone().resolved(GetRegionKind::Pretrain);
    assert_eq!(pretrain.output_dim, 283);
    assert_eq!(c.resolved(GetRegionKind::Finetune).output_dim, 2);
    assert!(GetRegionConfig::preset("nope").is_err());
}

#[test]
fn a_var_builder_over_the_checkpoint_builds_the_same_model() {
    // The path a trainable model takes: its variables under the authors' names.
    let dir = fixture("finetune_tiny");
    let w = GetWeights::open(&dir.join("model.safetensors"), &Device::Cpu).unwrap();
    let vb = candle_nn::VarBuilder::from_tensors(
        w.tensors().clone().into_iter().collect(),
        candle_core::DType::F32,
        &Device::Cpu,
    );
    let text = std::fs::read_to_string(dir.join("config.json")).unwrap();
    let cfg = GetRegionConfig::from_json(&text, "config.json").unwrap();
    let m = GetRegionFinetune::new(&cfg, &vb).unwrap();
    let x = &load("finetune_tiny", "inputs.safetensors")["region_motif"];
    let e = load("finetune_tiny", "expected.safetensors");
    let d = max_diff(&m.forward(x).unwrap(), &e["exp"]);
    assert!(d < TOL, "{d}");
}

/// Training batches pad samples to one length: with the key-padding mask, each real region's
/// state is the one the sample gives alone (what GET's authors compute, one sample per call),
/// whatever the padded slots hold.
#[test]
fn padded_samples_under_the_mask_give_each_sample_its_own_states() {
    let m = open(&fixture("finetune_tiny"), None);
    let f = m.finetune().unwrap();
    let x = &load("finetune_tiny", "inputs.safetensors")["region_motif"];
    let (_, n, k) = x.dims3().unwrap();
    let one = x.narrow(0, 0, 1).unwrap();
    let used = n - 3;
    let alone = f.hidden(&one.narrow(1, 0, used).unwrap()).unwrap();
    // The same sample padded with large junk, and a mask that hides it.
    let junk = Tensor::full(7f32, (1, n - used, k), &Device::Cpu).unwrap();
    let padded = Tensor::cat(&[&one.narrow(1, 0, used).unwrap(), &junk], 1).unwrap();
    let mask: Vec<f32> = (0..n).map(|i| f32::from(u8::from(i < used))).collect();
    let mask = Tensor::from_vec(mask, (1, n), &Device::Cpu).unwrap();
    let masked = f.hidden_masked(&padded, &mask).unwrap();
    let err = max_diff(&masked.narrow(1, 0, used).unwrap(), &alone);
    assert!(err < 1e-5, "masked vs alone: {err}");
    // Without the mask the junk changes the real regions' states.
    let unmasked = f.hidden(&padded).unwrap();
    assert!(max_diff(&unmasked.narrow(1, 0, used).unwrap(), &alone) > 1e-3);
}
