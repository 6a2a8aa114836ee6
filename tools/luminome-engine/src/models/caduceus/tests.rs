//! The family against the authors' code: fixtures made by kuleshov-group/caduceus's modeling
//! code (mamba_ssm's reference scan and norms) on tiny random configurations in the published
//! layout (tests/fixtures/caduceus/README.md, bench/reference/caduceus/make_fixtures.py).

use std::path::PathBuf;

use candle_core::{DType, Device, Tensor};

use super::Caduceus;

const FIXTURES: [&str; 4] = [
    "ps_rcps_fused",
    "ph_fused",
    "rcps_unfused_layernorm_untied",
    "unidirectional",
];

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/caduceus")
        .join(name)
}

fn expected(name: &str) -> std::collections::HashMap<String, Tensor> {
    candle_core::safetensors::load(fixture(name).join("expected.safetensors"), &Device::Cpu)
        .unwrap()
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

#[test]
fn logits_hidden_states_and_embeddings_match_the_authors_code() {
    for name in FIXTURES {
        let dir = fixture(name);
        let m = Caduceus::open(dir.to_str().unwrap(), &Device::Cpu).unwrap();
        let e = expected(name);
        let ids = e["input_ids"].to_dtype(DType::U32).unwrap();
        let out = m.model.forward(&ids).unwrap();
        let emb = m.model.embed(&ids).unwrap();
        let d_emb = max_diff(&emb, &e["hidden_states_layer0"]);
        let d_hidden = max_diff(&out.hidden, &e["hidden"]);
        let d_logits = max_diff(&out.logits, &e["logits"]);
        assert!(
            d_emb < 1e-6 && d_hidden < 1e-4 && d_logits < 1e-4,
            "{name}: |Δ| embedding {d_emb}, hidden {d_hidden}, logits {d_logits}"
        );
    }
}

#[test]
fn an_rcps_model_scores_a_window_and_its_reverse_complement_alike() {
    // Row 1 of the fixture is row 0's reverse complement; the GPN-style vocabulary has no [SEP],
    // so an RC-equivariant model gives row 1 the complement-permuted, flipped logits of row 0.
    let m = Caduceus::open(fixture("ps_rcps_fused").to_str().unwrap(), &Device::Cpu).unwrap();
    let ids = expected("ps_rcps_fused")["input_ids"]
        .to_dtype(DType::U32)
        .unwrap();
    let logits = m.model.forward(&ids).unwrap().logits;
    let l = ids.dim(1).unwrap();
    let comp = Tensor::from_slice(
        m.model.complement(),
        m.model.complement().len(),
        &Device::Cpu,
    )
    .unwrap();
    let rev = Tensor::from_iter((0..l as u32).rev(), &Device::Cpu).unwrap();
    let row0 = logits
        .get(0)
        .unwrap()
        .index_select(&rev, 0)
        .unwrap()
        .index_select(&comp, 1)
        .unwrap();
    let d = max_diff(&row0, &logits.get(1).unwrap());
    assert!(d < 1e-4, "{d}");
}

/// A copy of a fixture folder whose model.safetensors is rewritten by `edit`.
fn edited_fixture(
    name: &str,
    edit: impl FnOnce(&mut std::collections::HashMap<String, Tensor>),
) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(fixture(name)).unwrap() {
        let p = entry.unwrap().path();
        std::fs::copy(&p, dir.path().join(p.file_name().unwrap())).unwrap();
    }
    let mut t =
        candle_core::safetensors::load(fixture(name).join("model.safetensors"), &Device::Cpu)
            .unwrap();
    edit(&mut t);
    candle_core::safetensors::save(&t, dir.path().join("model.safetensors")).unwrap();
    dir
}

fn open_error(dir: &std::path::Path) -> String {
    match Caduceus::open(dir.to_str().unwrap(), &Device::Cpu) {
        Ok(_) => panic!("{} opened", dir.display()),
        Err(e) => format!("{e:#}"),
    }
}

#[test]
fn a_missing_extra_or_misshaped_tensor_is_refused_by_name() {
    let gone = "caduceus.backbone.layers.1.mixer.submodule.mamba_rev.A_log";
    let d = edited_fixture("ps_rcps_fused", |t| {
        t.remove(gone).unwrap();
    });
    let e = open_error(d.path());
    assert!(e.contains(gone) && e.contains("missing"), "{e}");

    let d = edited_fixture("ps_rcps_fused", |t| {
        t.insert(
            "score.weight".into(),
            Tensor::zeros((2, 16), DType::F32, &Device::Cpu).unwrap(),
        );
    });
    let e = open_error(d.path());
    assert!(
        e.contains("score.weight") && e.contains("not part of the model"),
        "{e}"
    );

    let name = "caduceus.backbone.layers.0.mixer.submodule.mamba_fwd.D";
    let d = edited_fixture("ps_rcps_fused", |t| {
        t.insert(
            name.into(),
            Tensor::zeros(7, DType::F32, &Device::Cpu).unwrap(),
        );
    });
    let e = open_error(d.path());
    assert!(
        e.contains(name) && e.contains("[7]") && e.contains("[32]"),
        "{e}"
    );
}

#[test]
fn a_half_written_file_and_another_architecture_are_refused() {
    let d = edited_fixture("ph_fused", |_| {});
    let w = d.path().join("model.safetensors");
    let bytes = std::fs::read(&w).unwrap();
    std::fs::write(&w, &bytes[..bytes.len() / 2]).unwrap();
    let e = open_error(d.path());
    assert!(e.contains("half-written"), "{e}");

    let d = edited_fixture("ph_fused", |_| {});
    let cfg = d.path().join("config.json");
    let text = std::fs::read_to_string(&cfg)
        .unwrap()
        .replace("\"caduceus\"", "\"bert\"");
    std::fs::write(&cfg, text).unwrap();
    let e = open_error(d.path());
    assert!(e.contains("model_type is \"bert\""), "{e}");

    // A Caduceus config whose sizes disagree with the weights (a file of another model).
    let d = edited_fixture("ph_fused", |_| {});
    let cfg = d.path().join("config.json");
    let text = std::fs::read_to_string(&cfg)
        .unwrap()
        .replace("\"n_layer\": 2", "\"n_layer\": 3");
    std::fs::write(&cfg, text).unwrap();
    let e = open_error(d.path());
    assert!(e.contains("layers.2.") && e.contains("missing"), "{e}");
}

#[test]
fn a_folder_without_weights_names_the_conversion() {
    let d = edited_fixture("ph_fused", |_| {});
    std::fs::rename(
        d.path().join("model.safetensors"),
        d.path().join("pytorch_model.bin"),
    )
    .unwrap();
    let e = open_error(d.path());
    assert!(
        e.contains("pytorch_model.bin") && e.contains("save_file"),
        "{e}"
    );
}
