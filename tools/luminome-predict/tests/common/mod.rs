//! Helpers shared by the integration tests: the PyTorch fixture, small datasets, checkpoints of
//! other kinds.
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use candle_core::{Device, Tensor};
use luminome_engine::backbones::{BackboneConfig, EncoderConfig, PositionEncoding};
use luminome_engine::checkpoint::{read_safetensors, save_checkpoint, CheckpointMeta};
use luminome_engine::input::InputSpec;
use luminome_engine::models::mlm::MlmConfig;
use luminome_engine::testing::nucleotide_tokenizer;
use luminome_engine::BuiltModel;
use luminome_engine::ModelConfig;
use luminome_io::token_dataset::{
    IndexRow, TokenDatasetWriter, TokenDatasetWriterOptions, TokenRow, TokenizerInfo,
};

/// The fixture written by bench/engine/torch_reference.py.
pub fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/torch_reference")
}

pub fn fixture_checkpoint(adapter: &str) -> PathBuf {
    fixture_dir().join(format!("tiny_{adapter}.safetensors"))
}

pub fn expected() -> HashMap<String, Tensor> {
    read_safetensors(&fixture_dir().join("expected.safetensors"), &Device::Cpu)
        .unwrap()
        .1
}

/// The three fixture sequences (as torch_reference.py encodes them).
pub const FIXTURE_SEQS: [&str; 3] = ["ACGTTATAGC", "GGCATTA", "TTGA"];

/// One record of a test dataset.
pub struct Rec {
    pub seq: String,
    pub label: Option<i64>,
    pub coords: String,
    pub strand: char,
}

pub fn rec(seq: &str, label: Option<i64>) -> Rec {
    Rec {
        seq: seq.into(),
        label,
        coords: ".".into(),
        strand: '+',
    }
}

fn encode(seq: &str) -> Vec<u32> {
    luminome_engine::testing::encode(seq.as_bytes())
}

/// Writes a nucleotide token dataset (rows padded to `max_length`) with its index.
pub fn write_dataset(dest: &Path, recs: &[Rec], max_length: usize) {
    write_dataset_with(dest, recs, max_length, nucleotide_tokenizer())
}

pub fn write_dataset_with(dest: &Path, recs: &[Rec], max_length: usize, tokenizer: TokenizerInfo) {
    let has_labels = recs.iter().all(|r| r.label.is_some());
    let mut w = TokenDatasetWriter::new(TokenDatasetWriterOptions {
        dest: dest.to_path_buf(),
        tokenizer,
        max_length: Some(max_length),
        has_labels,
        has_soft_mask: false,
        shard_records: None,
        rc: "none".into(),
        sources: vec![],
        tool: "luminome-predict tests".into(),
        tool_version: "0".into(),
        command_line: String::new(),
    })
    .unwrap();
    for (i, r) in recs.iter().enumerate() {
        let mut ids = encode(&r.seq);
        assert!(ids.len() <= max_length);
        ids.resize(max_length, 0);
        w.push(TokenRow {
            ids: &ids,
            soft_mask: None,
            label: r.label,
            index: IndexRow {
                record: i as u64,
                shard: 0,
                name: format!("seq{i}"),
                interval: luminome_io::token_dataset::Interval::parse_v1(&r.coords),
                seq_length: r.seq.len() as u64,
                window_offset: 0,
                window_length: r.seq.len() as u64,
                strand: r.strand,
            },
        })
        .unwrap();
    }
    w.finish().unwrap();
}

/// A masked-LM checkpoint (random weights) with the nucleotide vocabulary.
pub fn write_mlm_checkpoint(dest: &Path) {
    let config = ModelConfig::Mlm(MlmConfig {
        backbone: BackboneConfig::Transformer(EncoderConfig {
            vocab_size: 10,
            d_model: 8,
            num_layers: 1,
            num_heads: 2,
            ffn_dim: 16,
            dropout: 0.0,
            max_length: 12,
            position: PositionEncoding::Learned,
            layer_norm_eps: 1e-5,
            pad_id: 0,
            attention: Default::default(),
        }),
    });
    let built = BuiltModel::new(&config, &Device::Cpu, 7).unwrap();
    let meta = CheckpointMeta::new(
        config,
        InputSpec::Tokens(nucleotide_tokenizer()),
        vec![],
        "test",
        "",
    );
    save_checkpoint(dest, &meta, &built.varmap).unwrap();
}

/// Runs luminome-predict with `args` (offline: a test never reaches the Hub).
pub fn predict(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_luminome-predict"))
        .args(args)
        .env("HF_HUB_OFFLINE", "1")
        .output()
        .unwrap()
}

/// Whether `python3 -c "import <modules>"` works (one `skipped:` line when not).
pub fn python_has(modules: &str) -> bool {
    luminome_io::python_probe::python_can_import(modules, "reading the outputs from Python")
}

/// Files in a folder (to check that a failed run left nothing behind).
pub fn files_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// A TSV with a header line as one map (column → value) per row.
pub fn read_tsv(path: &Path) -> Vec<HashMap<String, String>> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split('\t').collect();
    lines
        .map(|l| {
            header
                .iter()
                .zip(l.split('\t'))
                .map(|(h, v)| (h.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

/// The published-model fixtures (Caduceus/PlantCaduceus random checkpoints, a reference and SNVs).
pub fn caduceus_fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../luminome-engine/tests/fixtures/caduceus")
}

/// Runs luminome-mask-pairs (quiet) as the workflow would, through its library.
pub fn mask_pairs(args: &[&str]) -> anyhow::Result<()> {
    use clap::Parser;
    let mut all = vec!["luminome-mask-pairs", "--quiet"];
    all.extend(args);
    luminome_mask_pairs::run(&luminome_mask_pairs::args::Args::parse_from(all)).map(|_| ())
}
