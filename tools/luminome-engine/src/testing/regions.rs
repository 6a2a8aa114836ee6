//! Synthetic region × feature datasets and an untrained expression checkpoint over them.

use std::path::Path;

use anyhow::Result;

use super::save_test_checkpoint;

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
    write_region_dataset_features(
        dest,
        samples,
        n_regions,
        cell_types,
        seed,
        expression,
        &feature_names,
    )
}

/// [`write_region_dataset`] with any number of features (at least 2): the last one is the
/// accessibility, the first the motif the expression follows; with 4 features it writes the same
/// values as [`write_region_dataset`] for the same seed.
pub fn write_region_dataset_features(
    dest: &Path,
    samples: usize,
    n_regions: usize,
    cell_types: &[&str],
    seed: u64,
    expression: Option<&dyn Fn(usize, f64) -> f64>,
    feature_names: &[&str],
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
    let f = feature_names.len();
    anyhow::ensure!(
        f >= 2,
        "internal: a test region dataset needs at least 2 features"
    );
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
                features[slot * f + k] = if k == f - 1 {
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
        let z = 1.5 * features[at + f - 1] as f64 + 0.8 * features[at] as f64 - 1.0;
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
        feature_names: feature_names.iter().map(|n| n.to_string()).collect(),
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
        linear_path: None,
        get: None,
        holdout,
    });
    let built = crate::BuiltModel::new(&config, &candle_core::Device::Cpu, 2)?;
    let ckpt = dir.join("expr.safetensors");
    save_test_checkpoint(
        &ckpt,
        config,
        crate::input::InputSpec::RegionFeatures(ds.feature_names().to_vec()),
        &built.varmap,
    )?;
    Ok((ckpt, ds_path))
}
