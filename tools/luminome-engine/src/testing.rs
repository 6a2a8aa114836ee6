//! Small helpers for tests and examples: the single-nucleotide vocabulary of
//! `luminome-tokenize` and a writer of token datasets from in-memory sequences.

use std::path::Path;

use anyhow::Result;
use luminome_io::token_dataset::{
    IndexRow, TokenDatasetWriter, TokenDatasetWriterOptions, TokenRow, TokenizerInfo,
};

/// [PAD]=0 [CLS]=1 [SEP]=2 [MASK]=3 [UNK]=4 A=5 C=6 G=7 T=8 N=9, [CLS] seq [SEP].
pub fn nucleotide_tokenizer() -> TokenizerInfo {
    TokenizerInfo::nucleotide(true, true)
}

/// Token ids of a DNA string in the nucleotide vocabulary, with [CLS] and [SEP].
pub fn encode(seq: &[u8]) -> Vec<u32> {
    let mut ids = vec![1];
    ids.extend(seq.iter().map(|b| match b.to_ascii_uppercase() {
        b'A' => 5,
        b'C' => 6,
        b'G' => 7,
        b'T' => 8,
        b'N' => 9,
        _ => 4,
    }));
    ids.push(2);
    ids
}

/// ids `[B, len]` (u32) and mask `[B, len]` (f32) of DNA strings, each [CLS] seq [SEP] then
/// padding, on the CPU (for tests that run models directly).
pub fn padded_batch(seqs: &[&[u8]], len: usize) -> (candle_core::Tensor, candle_core::Tensor) {
    let mut ids = Vec::new();
    let mut mask = Vec::new();
    for s in seqs {
        let mut row = encode(s);
        let n = row.len();
        row.resize(len, 0);
        ids.extend(row);
        mask.extend((0..len).map(|i| if i < n { 1f32 } else { 0.0 }));
    }
    let dev = candle_core::Device::Cpu;
    (
        candle_core::Tensor::from_vec(ids, (seqs.len(), len), &dev).expect("ids"),
        candle_core::Tensor::from_vec(mask, (seqs.len(), len), &dev).expect("mask"),
    )
}

/// Writes sequences (and optional labels) as a token dataset padded to `max_length`.
pub fn write_dataset(
    dest: &Path,
    seqs: &[Vec<u8>],
    labels: Option<&[i64]>,
    max_length: usize,
) -> Result<()> {
    let tok = nucleotide_tokenizer();
    let mut w = TokenDatasetWriter::new(TokenDatasetWriterOptions {
        dest: dest.to_path_buf(),
        tokenizer: tok,
        max_length: Some(max_length),
        has_labels: labels.is_some(),
        has_soft_mask: false,
        shard_records: None,
        rc: "none".into(),
        sources: vec![],
        tool: "luminome-engine tests".into(),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        command_line: String::new(),
    })?;
    for (i, s) in seqs.iter().enumerate() {
        let mut ids = encode(s);
        anyhow::ensure!(
            ids.len() <= max_length,
            "sequence {i} is longer than {max_length} tokens"
        );
        ids.resize(max_length, 0);
        w.push(TokenRow {
            ids: &ids,
            soft_mask: None,
            label: labels.map(|l| l[i]),
            index: IndexRow {
                record: i as u64,
                shard: 0,
                name: format!("seq{i}"),
                coords: ".".into(),
                seq_length: s.len() as u64,
                window_offset: 0,
                window_length: s.len() as u64,
                strand: '+',
            },
        })?;
    }
    w.finish()
}

/// A learnable toy task: random DNA of length `len`; label 1 iff the sequence contains
/// `TATA`, which is planted in half of the records. Deterministic for a seed.
pub fn toy_motif_task(n: usize, len: usize, seed: u64) -> (Vec<Vec<u8>>, Vec<i64>) {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut seqs = Vec::with_capacity(n);
    let mut labels = Vec::with_capacity(n);
    for i in 0..n {
        let mut s: Vec<u8> = (0..len).map(|_| b"ACG"[rng.random_range(0..3)]).collect();
        if i % 2 == 0 {
            let at = rng.random_range(0..len - 4);
            s[at..at + 4].copy_from_slice(b"TATA");
        }
        let label = s.windows(4).any(|w| w == b"TATA") as i64;
        seqs.push(s);
        labels.push(label);
    }
    (seqs, labels)
}

/// Writes a paired dataset of sequences (strand B their complements), `fraction` of the positions
/// masked on both strands (all [MASK]), rows padded to the longest sequence.
pub fn write_pair_dataset(dest: &Path, seqs: &[Vec<u8>], fraction: f64, seed: u64) -> Result<()> {
    use luminome_io::masking::{mask_pair, PairMasking};
    use luminome_io::pair_dataset::{
        MaskMode, PairDatasetMeta, PairDatasetWriter, PairIndexRow, PairMaskingInfo, PairRow,
        Pairing,
    };
    use rand::SeedableRng;
    let tok = TokenizerInfo::nucleotide(false, false);
    let l = seqs.iter().map(Vec::len).max().unwrap_or(0);
    let masking = PairMasking {
        mode: MaskMode::Random,
        fraction,
        bert_replacement: false,
        complement: true,
    };
    let mut w = PairDatasetWriter::create(dest.to_path_buf(), l, &[])?;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    for (i, s) in seqs.iter().enumerate() {
        let mut a: Vec<u32> = encode(s)[1..=s.len()].to_vec();
        a.resize(l, 0);
        let mut b: Vec<u32> = a
            .iter()
            .map(|&x| if (5..=8).contains(&x) { 13 - x } else { x })
            .collect();
        let attention: Vec<u8> = a.iter().map(|&x| u8::from(x != 0)).collect();
        let m = mask_pair(&mut a, &mut b, &attention, None, &tok, &masking, &mut rng)?;
        w.push(PairRow {
            ids_a: &a,
            ids_b: &b,
            labels_a: &m.labels_a,
            labels_b: &m.labels_b,
            mask_positions: &m.mask_positions,
            attention_mask: &attention,
            index: PairIndexRow {
                record: 0,
                name: format!("seq{i}"),
                coords: ".".into(),
                site: None,
                variant: None,
                info: vec![],
            },
        })?;
    }
    w.finish(PairDatasetMeta {
        kind: String::new(),
        format_version: 0,
        tokenizer: tok,
        pairing: Pairing::Complement,
        masking: PairMaskingInfo {
            mode: MaskMode::Random,
            fraction,
            bert_replacement: false,
            seed,
        },
        window: l,
        num_records: 0,
        coordinates: "0-based half-open".into(),
        index_file: String::new(),
        counts: Default::default(),
        info_keys: vec![],
        sources: vec![],
        tool: "luminome-engine tests".into(),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        command_line: String::new(),
    })
}

/// A synthetic region dataset for tests: `samples` genes (one cell type each of `cell_types`,
/// alternating), N = `n_regions` slots, features `motif0, motif1, motif2, accessibility`; each
/// gene uses 3..=N regions with the TSS in one of them, and its expression is
/// ln(1 + e^(1.5·acc_tss + 0.8·motif0_tss − 1)) (the TSS region's accessibility and first motif),
/// so a model that finds the TSS region can learn it. Writes `<stem>.samples.tsv` and a
/// `<stem>.regions.tsv` with made-up coordinates beside `dest`. `expression`: `None` leaves it
/// out; `Some(f)` lets a test edit each value (sample index, value) → value.
pub fn write_region_dataset(
    dest: &Path,
    samples: usize,
    n_regions: usize,
    cell_types: &[&str],
    seed: u64,
    expression: Option<&dyn Fn(usize, f64) -> f64>,
) -> Result<()> {
    write_region_dataset_named(
        dest,
        samples,
        n_regions,
        cell_types,
        seed,
        expression,
        ["motif0", "motif1", "motif2", "accessibility"],
    )
}

/// [`write_region_dataset`] with other feature names.
pub fn write_region_dataset_named(
    dest: &Path,
    samples: usize,
    n_regions: usize,
    cell_types: &[&str],
    seed: u64,
    expression: Option<&dyn Fn(usize, f64) -> f64>,
    feature_names: [&str; 4],
) -> Result<()> {
    use luminome_io::region_dataset::{RegionDatasetMeta, RegionDatasetWriter, RegionSample};
    use rand::{Rng, SeedableRng};
    use std::io::Write;

    let stem = dest
        .file_name()
        .map(|n| {
            n.to_string_lossy()
                .trim_end_matches(".safetensors")
                .to_string()
        })
        .unwrap_or_default();
    let samples_path = dest.with_file_name(format!("{stem}.samples.tsv"));
    let regions_path = dest.with_file_name(format!("{stem}.regions.tsv"));
    let f = 4;
    let mut w =
        RegionDatasetWriter::create(dest, &samples_path, n_regions, f, expression.is_some())?;
    let mut regions = std::fs::File::create(&regions_path)?;
    writeln!(regions, "region\tchrom\tstart\tend")?;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut next_region = 0i64;
    for s in 0..samples {
        let used = rng.random_range(3..=n_regions);
        let tss_slot = rng.random_range(0..used);
        let mut features = vec![0f32; n_regions * f];
        let mut mask = vec![0u8; n_regions];
        let mut index = vec![-1i64; n_regions];
        let base = 10_000 * s as u64;
        for slot in 0..used {
            for k in 0..f {
                features[slot * f + k] = if k == 3 {
                    rng.random_range(0.0..4.0)
                } else if rng.random_bool(0.5) {
                    rng.random_range(0.0..3.0)
                } else {
                    0.0
                };
            }
            mask[slot] = 1;
            index[slot] = next_region;
            writeln!(
                regions,
                "{next_region}\tchrT\t{}\t{}",
                base + 1000 * slot as u64,
                base + 1000 * slot as u64 + 200
            )?;
            next_region += 1;
        }
        let at = tss_slot * f;
        let z = 1.5 * features[at + 3] as f64 + 0.8 * features[at] as f64 - 1.0;
        let y = z.exp().ln_1p();
        let tss = base + 1000 * tss_slot as u64 + 100;
        let gene = format!("G{s}");
        w.push(&RegionSample {
            features: &features,
            region_mask: &mask,
            tss_index: Some(tss_slot),
            tss_slot,
            region_index: &index,
            expression: expression.map(|e| e(s, y)),
            gene: &gene,
            gene_id: &gene,
            cell_type: cell_types[s % cell_types.len()],
            chrom: "chrT",
            tss,
            strand: if s % 3 == 0 { '-' } else { '+' },
            regions_used: used,
            tss_region: Some(index[tss_slot] as usize),
        })?;
    }
    let name = |p: &Path| p.file_name().map(|n| n.to_string_lossy().into_owned());
    let meta = RegionDatasetMeta {
        cell_types: cell_types.iter().map(|c| c.to_string()).collect(),
        coordinates: "0-based half-open".into(),
        expression: Vec::new(),
        expression_transform: expression.map(|_| "log1p".into()),
        feature_names: feature_names.map(String::from).to_vec(),
        genes: "synthetic".into(),
        motif: serde_json::Value::Null,
        n_regions,
        normalisation: "none".into(),
        reference: "synthetic".into(),
        region_sources: serde_json::Value::Null,
        regions_table: name(&regions_path),
        regions_total: next_region as usize,
        samples_table: name(&samples_path),
        selection: "distance".into(),
        window_bp: 10_000,
    };
    w.finish(&meta, "luminome-engine tests", "0", "synthetic")
}

/// An untrained expression model (d 16, one layer, TSS-relative positions, Poisson) over a
/// synthetic dataset of 60 genes in two cell types ([`write_region_dataset`]), split by gene
/// blocks (4 blocks: the last is the test set, the third the dev set). Returns the checkpoint
/// (`dir/expr.safetensors`) and the dataset (`dir/genes.safetensors`).
pub fn write_expression_checkpoint(
    dir: &Path,
    head: crate::models::expression::ExpressionHead,
) -> Result<(std::path::PathBuf, std::path::PathBuf)> {
    use crate::models::expression::{ExpressionConfig, ExpressionLoss};
    use crate::models::region::holdout::HoldoutKind;
    use crate::models::region::{HoldoutArgs, RegionEncoderConfig, RegionPosition};

    let ds_path = dir.join("genes.safetensors");
    write_region_dataset(&ds_path, 60, 8, &["K562", "GM12878"], 4, Some(&|_, y| y))?;
    let ds = luminome_io::region_dataset::RegionDataset::open(&ds_path)?;
    let samples = ds.read_samples()?;
    let holdout = HoldoutArgs {
        holdout: HoldoutKind::Genes,
        blocks: 4,
        test_block: None,
        dev_block: None,
        test_cell_type: None,
    }
    .holdout(&samples, ds.cell_types(), "genes")?;
    let config = crate::ModelConfig::from(ExpressionConfig {
        encoder: RegionEncoderConfig {
            n_features: 4,
            d_model: 16,
            num_layers: 1,
            num_heads: 2,
            ffn_dim: 32,
            dropout: 0.0,
            max_regions: 8,
            position: RegionPosition::TssRelative,
            layer_norm_eps: 1e-5,
            attention: Default::default(),
        },
        head,
        loss: ExpressionLoss::Poisson,
        holdout,
    });
    let built = crate::BuiltModel::new(&config, &candle_core::Device::Cpu, 2)?;
    let ckpt = dir.join("expr.safetensors");
    let meta = crate::checkpoint::CheckpointMeta::new(
        config,
        crate::input::InputSpec::RegionFeatures(ds.feature_names().to_vec()),
        vec![],
        "test",
        "",
    );
    crate::checkpoint::save_checkpoint(&ckpt, &meta, &built.varmap)?;
    Ok((ckpt, ds_path))
}

/// An untrained dilated-CNN classifier (8 channels, 3 blocks, labels 0/1) over the
/// single-nucleotide vocabulary, averaging both strands when `rc_average`, written to `dest`.
pub fn write_cnn_checkpoint(
    dest: &Path,
    adapter: crate::models::classifier::AdapterKind,
    rc_average: bool,
) -> Result<()> {
    use crate::backbones::{BackboneConfig, CnnConfig};
    let tok = nucleotide_tokenizer();
    let rc_average = match rc_average {
        true => Some(crate::input::strand::ReverseComplement::for_tokenizer(
            &tok,
        )?),
        false => None,
    };
    let config = crate::ModelConfig::from(crate::models::classifier::ClassifierConfig {
        backbone: BackboneConfig::Cnn(CnnConfig {
            vocab_size: tok.vocab_size(),
            channels: 8,
            first_kernel: 5,
            kernel: 3,
            num_layers: 3,
            dropout: 0.0,
            max_length: 64,
            layer_norm_eps: 1e-5,
            pad_id: tok.pad_id,
        }),
        adapter,
        num_classes: 2,
        label_values: vec![0, 1],
        rc_average,
    });
    let built = crate::BuiltModel::new(&config, &candle_core::Device::Cpu, 4)?;
    let meta = crate::checkpoint::CheckpointMeta::new(
        config,
        crate::input::InputSpec::Tokens(tok),
        vec![],
        "test",
        "",
    );
    crate::checkpoint::save_checkpoint(dest, &meta, &built.varmap)
}

/// The rows of a TSV with a header line, as column → value maps (for tests reading our outputs).
pub fn tsv_rows(path: &Path) -> Vec<std::collections::HashMap<String, String>> {
    let text = std::fs::read_to_string(path).expect("read TSV");
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("a header line").split('\t').collect();
    lines
        .map(|l| {
            header
                .iter()
                .map(|h| h.to_string())
                .zip(l.split('\t').map(String::from))
                .collect()
        })
        .collect()
}

/// A random-weight tabular model (seed `seed`) whose schema is fitted on every row of `table`
/// (label column `label`, id column `id`), with every row encoded for it.
pub fn tabular_model(
    table: &Path,
    label: &str,
    id: Option<&str>,
    arch: crate::models::tabular::TabularArch,
    threshold: Option<f64>,
    seed: u64,
) -> Result<(
    crate::models::BuiltModel,
    crate::models::tabular::EncodedRows,
)> {
    use crate::models::tabular::schema::table_classes;
    use crate::models::tabular::{SchemaOptions, TabularConfig, TabularSchema};
    let t = luminome_io::table::FeatureTable::read(table, None)?;
    let opts = SchemaOptions {
        label: label.into(),
        id: id.map(String::from),
        ..Default::default()
    };
    let classes = table_classes(&t, label, None)?;
    let rows: Vec<usize> = (0..t.len()).collect();
    let (schema, _) = TabularSchema::fit(&t, &rows, &opts, classes)?;
    let encoded = schema.encode(&t, &rows)?;
    let config = crate::models::ModelConfig::from(TabularConfig {
        schema,
        arch,
        threshold,
    });
    let built = crate::models::BuiltModel::new(&config, &candle_core::Device::Cpu, seed)?;
    Ok((built, encoded))
}

/// [`tabular_model`] written to `dest` as a checkpoint.
pub fn write_tabular_checkpoint(
    dest: &Path,
    table: &Path,
    label: &str,
    id: Option<&str>,
    arch: crate::models::tabular::TabularArch,
    threshold: Option<f64>,
    seed: u64,
) -> Result<()> {
    let (built, _) = tabular_model(table, label, id, arch, threshold, seed)?;
    let config = built.config.clone();
    let columns = config
        .get::<crate::models::tabular::TabularConfig>()
        .map(|c| c.schema.columns.iter().map(|c| c.name.clone()).collect())
        .unwrap_or_default();
    let meta = crate::checkpoint::CheckpointMeta::new(
        config,
        crate::input::InputSpec::Table(columns),
        vec![],
        "test",
        "",
    );
    crate::checkpoint::save_checkpoint(dest, &meta, &built.varmap)
}

/// Ids of overlapping `k`-mers (ACGT only) with [CLS]/[SEP], as `luminome-tokenize --scheme kmer
/// -k K` writes them (k = 1: the nucleotide vocabulary's ids).
pub fn encode_kmers(seq: &[u8], k: usize) -> Vec<u32> {
    let code = |b: u8| match b {
        b'A' => 0u32,
        b'C' => 1,
        b'G' => 2,
        b'T' => 3,
        _ => panic!("test sequences are ACGT"),
    };
    let mut ids = vec![1];
    ids.extend(
        seq.windows(k)
            .map(|w| 5 + w.iter().fold(0, |v, &b| (v << 2) | code(b))),
    );
    ids.push(2);
    ids
}

/// (query, passage, passage name) triples of a retrieval task.
pub type RetrievalTriples = Vec<(Vec<u8>, Vec<u8>, String)>;

/// Writes a retrieval pairs dataset (nucleotide ids with [CLS]/[SEP]) of `(query, passage)`
/// sequences, groups by identical sequence; index names `q<i>` and the passage's own name.
pub fn write_retrieval_pairs(dest: &Path, pairs: &[(Vec<u8>, Vec<u8>, String)]) -> Result<()> {
    write_retrieval_pairs_k(dest, pairs, 1)
}

/// [`write_retrieval_pairs`] with overlapping `k`-mer tokens (k = 1: single nucleotides).
pub fn write_retrieval_pairs_k(
    dest: &Path,
    pairs: &[(Vec<u8>, Vec<u8>, String)],
    k: usize,
) -> Result<()> {
    use luminome_io::retrieval_pairs::{
        RetrievalIndexRow, RetrievalPairsMeta, RetrievalPairsWriter,
    };
    use std::collections::HashMap;
    let tok = if k == 1 {
        nucleotide_tokenizer()
    } else {
        TokenizerInfo::kmer(k, 1, true, true)
    };
    let mut w = RetrievalPairsWriter::create(dest.to_path_buf(), &tok)?;
    let (mut qg, mut pg): (HashMap<Vec<u8>, u32>, HashMap<Vec<u8>, u32>) = Default::default();
    for (i, (q, p, name)) in pairs.iter().enumerate() {
        let n = qg.len() as u32;
        let a = *qg.entry(q.clone()).or_insert(n);
        let n = pg.len() as u32;
        let b = *pg.entry(p.clone()).or_insert(n);
        w.push(
            &encode_kmers(q, k),
            &encode_kmers(p, k),
            [a, b],
            RetrievalIndexRow {
                record: 0,
                query_id: format!("q{i}"),
                passage_id: name.clone(),
                line: i as u64 + 2,
            },
        )?;
    }
    w.finish(RetrievalPairsMeta {
        kind: String::new(),
        format_version: 0,
        tokenizer: tok,
        text: false,
        num_records: 0,
        distinct_queries: 0,
        distinct_passages: 0,
        query_length: 0,
        passage_length: 0,
        index_file: String::new(),
        counts: Default::default(),
        sources: vec![],
        tool: "luminome-engine tests".into(),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        command_line: String::new(),
    })
}

/// A small retrieval task from the bundled E. coli slice (`test-data/ecoli/ecoli_50kb.fa`):
/// passages are the `window`-base windows from base `from` (`n_windows` of them); each gives
/// `per_window` queries, exact substrings of `query_len` bases at seeded offsets (the reverse
/// complement for every second one when `rc`). Returns (pairs, windows) with window names
/// `NC_000913.3:start-end`.
pub fn ecoli_retrieval_task(
    from: usize,
    n_windows: usize,
    window: usize,
    query_len: usize,
    per_window: usize,
    rc: bool,
    seed: u64,
) -> (RetrievalTriples, Vec<(String, Vec<u8>)>) {
    use rand::{Rng, SeedableRng};
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../test-data/ecoli/ecoli_50kb.fa"),
    )
    .expect("test-data/ecoli/ecoli_50kb.fa");
    let genome: Vec<u8> = text
        .lines()
        .filter(|l| !l.starts_with('>'))
        .flat_map(|l| l.trim().bytes())
        .collect();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut windows = Vec::new();
    let mut pairs = Vec::new();
    for w in 0..n_windows {
        let start = from + w * window;
        let p = genome[start..start + window].to_vec();
        let name = format!("NC_000913.3:{start}-{}", start + window);
        for k in 0..per_window {
            let off = rng.random_range(0..=window - query_len);
            let mut q = p[off..off + query_len].to_vec();
            if rc && k % 2 == 1 {
                q = q
                    .iter()
                    .rev()
                    .map(|b| match b {
                        b'A' => b'T',
                        b'C' => b'G',
                        b'G' => b'C',
                        b'T' => b'A',
                        x => *x,
                    })
                    .collect();
            }
            pairs.push((q, p.clone(), name.clone()));
        }
        windows.push((name, p));
    }
    (pairs, windows)
}

/// A random-weight dual encoder (d 16, one layer, nucleotide vocabulary, rows up to
/// `max_length` tokens) written to `dest` as a checkpoint.
pub fn write_dual_checkpoint(
    dest: &Path,
    max_length: usize,
    attention: crate::backbones::AttentionKind,
    shared: bool,
    seed: u64,
) -> Result<()> {
    let tok = nucleotide_tokenizer();
    let config = crate::ModelConfig::from(crate::models::dual::DualConfig {
        encoder: crate::backbones::EncoderConfig {
            vocab_size: tok.vocab_size(),
            d_model: 16,
            num_layers: 1,
            num_heads: 2,
            ffn_dim: 32,
            dropout: 0.0,
            max_length,
            position: crate::backbones::PositionEncoding::Learned,
            layer_norm_eps: 1e-5,
            pad_id: tok.pad_id,
            attention,
        },
        shared,
        temperature: 0.05,
    });
    let built = crate::BuiltModel::new(&config, &candle_core::Device::Cpu, seed)?;
    let meta = crate::checkpoint::CheckpointMeta::new(
        config,
        crate::input::InputSpec::Tokens(tok),
        vec![],
        "test",
        "",
    );
    crate::checkpoint::save_checkpoint(dest, &meta, &built.varmap)
}
