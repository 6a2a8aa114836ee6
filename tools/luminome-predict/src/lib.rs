//! `luminome-predict`: runs a trained model over a dataset, in batches, and writes one TSV line
//! per record; with labels, metrics from `luminome-metrics`.
//!
//! Each model family brings its own [`Predictor`] (in its folder in the engine); the families
//! this tool runs are listed in [`predictors`], one line each, and dispatched on the
//! checkpoint's `kind`.
//!
//! - [`args`]: the command line.
//!
//! Outputs are written under temporary names and renamed when everything succeeded.

pub mod args;
pub mod retrieval;
pub mod shard;

use std::io::Write;
use std::path::Path;

use anyhow::{bail, Context, Result};
use candle_core::Device;
use luminome_cli::progress_bar;
use luminome_engine::checkpoint::read_checkpoint_meta;
use luminome_engine::models::dual::DualConfig;
use luminome_engine::models::mlm::MlmConfig;
use luminome_engine::models::region_pretrain::RegionPretrainConfig;
use luminome_engine::models::{caduceus, get_region, Registered};
use luminome_engine::parse_device;
use luminome_engine::predict::{
    EnsemblePredictor, ExtraOutputs, Predictor, PredictorEntry, SelectsSubset,
};
use luminome_io::atomic::{check_output_dir, AtomicWriter};

use crate::args::PredictArgs;

/// Declares the model families luminome-predict runs, one config type each.
macro_rules! predict_families {
    ($($config:ty,)+) => {
        /// The model families luminome-predict runs.
        pub fn predictors() -> Vec<PredictorEntry> {
            vec![$(PredictorEntry::of::<$config>(),)+]
        }
    };
}

predict_families! {
    luminome_engine::models::classifier::ClassifierConfig,
    luminome_engine::models::bag_of_tokens::BagOfTokensConfig,
    luminome_engine::models::kmer_linear::KmerLinearConfig,
    luminome_engine::models::bistrand::BiStrandConfig,
    luminome_engine::models::expression::ExpressionConfig,
    luminome_engine::models::tabular::TabularConfig,
}

/// The registered families luminome-predict does not open through [`predictors`], and what it
/// does with them instead; with [`predictors`] they cover the registry (`tests/registry.rs`).
pub const OTHER_FAMILIES: [(&str, &str); 3] = [
    (
        DualConfig::KIND,
        "ranks a corpus for each query (--corpus, or --embeddings to embed one side)",
    ),
    (
        MlmConfig::KIND,
        "not run: a masked-LM pretraining model; fine-tune it with `luminome-train classify --init`",
    ),
    (
        RegionPretrainConfig::KIND,
        "not run: a region pretraining model; fine-tune it with `luminome-train expression --init`",
    ),
];

/// Reads the checkpoint's model kind and opens the matching predictor on `dataset`.
pub fn open_predictor(
    checkpoint: &Path,
    dataset: &Path,
    device: Device,
) -> Result<Box<dyn Predictor>> {
    let meta = read_checkpoint_meta(checkpoint)?;
    let entries = predictors();
    match entries.iter().find(|e| e.kind == meta.model.kind()) {
        Some(e) => (e.open)(checkpoint, dataset, device),
        None => {
            let why = OTHER_FAMILIES
                .iter()
                .find(|(k, _)| *k == meta.model.kind())
                .map(|(_, why)| format!(": {why}"))
                .unwrap_or_default();
            bail!(
                "{}: this checkpoint holds a {} (kind {}){why}; luminome-predict runs {}",
                checkpoint.display(),
                meta.model.family(),
                meta.model.kind(),
                entries
                    .iter()
                    .map(|e| format!("{}s (kind {})", e.family, e.kind))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    }
}

/// Checks, before anything is opened, that several checkpoints can make one ensemble: every one
/// of a family that averages (classifiers), and no file given twice (it would count double).
fn check_ensemble(checkpoints: &[std::path::PathBuf]) -> Result<()> {
    let entries = predictors();
    for (i, c) in checkpoints.iter().enumerate() {
        let meta = read_checkpoint_meta(c)?;
        let kind = meta.model.kind();
        if !entries.iter().any(|e| e.kind == kind && e.ensembles) {
            bail!(
                "{}: holds a {} (kind {kind}); several checkpoints are averaged only for {}",
                c.display(),
                meta.model.family(),
                entries
                    .iter()
                    .filter(|e| e.ensembles)
                    .map(|e| format!("{}s (kind {})", e.family, e.kind))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        if let Some(j) = checkpoints[..i]
            .iter()
            .position(|d| luminome_io::atomic::same_file(c, d))
        {
            bail!(
                "--checkpoint {} is given twice (members {} and {}); each member of an ensemble counts once",
                c.display(),
                j + 1,
                i + 1
            );
        }
    }
    Ok(())
}

/// Runs the command.
pub fn run(args: &PredictArgs) -> Result<()> {
    if args.batch_size == 0 {
        bail!("--batch-size must be at least 1");
    }
    args.runtime.apply_threads();
    luminome_cli::on_pool(|| run_on_pool(args))
}

/// Every output's folder exists, no output is an input or another output, and each output
/// has its kind's extension — before anything is opened.
fn check_paths(args: &PredictArgs) -> Result<()> {
    for out in [
        Some(&args.output),
        args.metrics.as_ref(),
        args.vcf.as_ref(),
        args.bedgraph.as_ref(),
        args.npz.as_ref(),
        args.embeddings.as_ref(),
    ]
    .into_iter()
    .flatten()
    {
        check_output_dir(out)?;
    }
    if args.in_batch_size == 0 {
        bail!("--in-batch-size must be at least 1");
    }
    let dataset_index = luminome_io::token_dataset::index_path_for(&args.dataset);
    // A region dataset's side tables are not read here, but writing over them destroys the
    // dataset a user will read again: protected like inputs.
    let side_tables = ["samples.tsv", "regions.tsv"]
        .map(|s| luminome_io::token_dataset::side_path_for(&args.dataset, s));
    let mut inputs = vec![
        ("--dataset", args.dataset.as_path()),
        ("the index of --dataset", dataset_index.as_path()),
        ("a side table of --dataset", side_tables[0].as_path()),
        ("a side table of --dataset", side_tables[1].as_path()),
    ];
    for c in &args.checkpoints {
        inputs.push(("--checkpoint", c.as_path()));
    }
    if let Some(v) = &args.variants {
        inputs.push(("--variants", v.as_path()));
    }
    for part in &args.gather {
        inputs.push(("--gather", part.as_path()));
    }
    let corpus_index = args
        .corpus
        .as_deref()
        .map(luminome_io::token_dataset::index_path_for);
    if let (Some(c), Some(ci)) = (&args.corpus, &corpus_index) {
        inputs.push(("--corpus", c.as_path()));
        inputs.push(("the index of --corpus", ci.as_path()));
    }
    let embeddings_index = args.embeddings.as_deref().map(retrieval::embeddings_index);
    let outputs: Vec<(&str, &std::path::Path)> = [
        ("-o", Some(&args.output)),
        ("--metrics", args.metrics.as_ref()),
        ("--vcf", args.vcf.as_ref()),
        ("--bedgraph", args.bedgraph.as_ref()),
        ("--npz", args.npz.as_ref()),
        ("--embeddings", args.embeddings.as_ref()),
        ("the index of --embeddings", embeddings_index.as_ref()),
    ]
    .into_iter()
    .filter_map(|(f, p)| p.map(|p| (f, p.as_path())))
    .collect();
    luminome_io::atomic::check_outputs_distinct(&outputs, &inputs)?;
    {
        use luminome_io::atomic::{check_extension, OutputKind};
        let part = args.shard.is_some();
        let kind = if part {
            OutputKind::Safetensors
        } else {
            OutputKind::Tsv
        };
        check_extension("-o", &args.output, kind)?;
        for (flag, path, kind) in [
            ("--metrics", &args.metrics, OutputKind::Tsv),
            ("--vcf", &args.vcf, OutputKind::Vcf),
            ("--bedgraph", &args.bedgraph, OutputKind::BedGraph),
            ("--npz", &args.npz, OutputKind::Npz),
            ("--embeddings", &args.embeddings, OutputKind::Safetensors),
        ] {
            if let Some(p) = path {
                check_extension(flag, p, kind)?;
            }
        }
    }
    Ok(())
}

/// [`run`] from the thread pool on.
fn run_on_pool(args: &PredictArgs) -> Result<()> {
    check_paths(args)?;
    let device = parse_device(&args.runtime.device)?;
    if let Some(get) = get_checkpoint(args)? {
        return run_get(args, &get, device);
    }
    if args.get_heads.is_some() {
        bail!("--get-heads is for GET checkpoints (.ckpt/.pth/.pt, or a GET folder or safetensors file)");
    }
    let published = args
        .checkpoints
        .iter()
        .any(|c| caduceus::is_published_checkpoint(c));
    if published {
        return run_published(args, device);
    }
    if args.strands.is_some() {
        bail!("--strands is for published models (a checkpoint folder or hf:ORG/NAME)");
    }
    if args.checkpoints.len() > 1 {
        check_ensemble(&args.checkpoints)?;
    }
    let kind = read_checkpoint_meta(args.checkpoint())?.model.kind();
    if kind == DualConfig::KIND {
        if args.shard.is_some() || !args.gather.is_empty() {
            bail!("--shard and --gather are not for dual encoders (a retrieval run ranks every query against the whole corpus)");
        }
        if args.subset.is_some()
            || args.variants.is_some()
            || args.vcf.is_some()
            || args.bedgraph.is_some()
            || args.npz.is_some()
        {
            bail!("--subset, --variants, --vcf, --bedgraph and --npz are not for dual encoders");
        }
        return retrieval::run(args, device);
    }
    if args.corpus.is_some() || args.embeddings.is_some() || args.side.is_some() {
        bail!(
            "{}: --corpus, --embeddings and --side are for dual encoders (luminome-train dual); this checkpoint holds a {kind} model",
            args.checkpoint().display()
        );
    }
    if retrieval::is_pairs(&args.dataset) {
        bail!(
            "{}: a retrieval pairs dataset is evaluated by a dual encoder (luminome-train dual); {} holds a {kind} model",
            args.dataset.display(),
            args.checkpoint().display()
        );
    }
    let mut predictor = open_checkpoints(args, device)?;
    if let Some(subset) = args.subset {
        let Some(subsets) = predictor.subsets() else {
            bail!(
                "--subset {} is for expression models trained with --holdout",
                subset.name()
            );
        };
        subsets.select_subset(subset)?;
    }
    write_predictions(args, predictor.as_mut())
}

/// The model of `--checkpoint` on the dataset, or the ensemble of several.
fn open_checkpoints(args: &PredictArgs, device: Device) -> Result<Box<dyn Predictor>> {
    if args.checkpoints.len() == 1 {
        return open_predictor(args.checkpoint(), &args.dataset, device);
    }
    let members = args
        .checkpoints
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let member = open_predictor(c, &args.dataset, device.clone())
                .with_context(|| format!("ensemble member {} ({})", i + 1, c.display()))?;
            Ok((member, c.clone()))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Box::new(EnsemblePredictor::new(members)?))
}

/// A published model (Caduceus/PlantCaduceus folder or hf:ORG/NAME) on a variant dataset.
fn run_published(args: &PredictArgs, device: Device) -> Result<()> {
    if args.checkpoints.len() > 1 {
        bail!("several checkpoints are averaged only for classifiers; give one published model");
    }
    if args.subset.is_some() || args.corpus.is_some() || args.side.is_some() {
        bail!("--subset, --corpus and --side are not for published variant-effect models");
    }
    let arg = args
        .checkpoint()
        .to_str()
        .context("--checkpoint is not UTF-8")?;
    if args.checkpoint().is_dir() {
        // The folder's layout first: a Luminome run folder given where its checkpoint file was
        // meant is named as such (the dataset check would otherwise speak of paired datasets).
        luminome_io::hf_checkpoint::HfCheckpoint::open(args.checkpoint(), arg)?;
    }
    let mut predictor = caduceus::CaduceusPredictor::open(arg, &args.dataset, device)?
        .with_strands(args.strands.unwrap_or_default())
        .with_embeddings(args.embeddings.is_some());
    write_predictions(args, &mut predictor)
}

/// The GET region checkpoint among `--checkpoint`, resolved to a path (an `hf:` name to its
/// folder in the Hugging Face cache), when there is one; `None` for every other model.
fn get_checkpoint(args: &PredictArgs) -> Result<Option<std::path::PathBuf>> {
    let resolve = |c: &std::path::PathBuf| -> Option<std::path::PathBuf> {
        let path = match c.to_str().filter(|s| s.starts_with("hf:")) {
            // An hf: name that cannot be had is left to the Caduceus loader, which says why.
            Some(name) => luminome_cli::hub::open_checkpoint(name)
                .ok()?
                .config_path()
                .parent()?
                .to_path_buf(),
            None => c.clone(),
        };
        get_region::is_get_checkpoint(&path).then_some(path)
    };
    let found: Vec<std::path::PathBuf> = args.checkpoints.iter().filter_map(resolve).collect();
    match found.len() {
        0 => Ok(None),
        _ if args.checkpoints.len() > 1 => bail!(
            "several checkpoints are averaged only for classifiers; give one GET checkpoint ({})",
            found[0].display()
        ),
        _ => Ok(found.into_iter().next()),
    }
}

/// A published GET region model (GETRegionFinetune) on a region dataset.
fn run_get(args: &PredictArgs, checkpoint: &Path, device: Device) -> Result<()> {
    if args.corpus.is_some()
        || args.side.is_some()
        || args.embeddings.is_some()
        || args.strands.is_some()
        || args.variants.is_some()
    {
        bail!(
            "--corpus, --side, --embeddings, --strands and --variants are not for GET region models"
        );
    }
    let mut predictor =
        get_region::GetPredictor::open(checkpoint, args.get_heads, &args.dataset, device)?;
    if let Some(subset) = args.subset {
        predictor.select_subset(subset)?;
    }
    write_predictions(args, &mut predictor)
}

/// Predicts `records`, batch by batch, writing their TSV rows to `out`.
fn predict_rows(
    args: &PredictArgs,
    predictor: &mut dyn Predictor,
    records: std::ops::Range<usize>,
    out: &mut impl Write,
) -> Result<()> {
    let bar = progress_bar(records.len() as u64, args.runtime.quiet);
    let records: Vec<usize> = records.collect();
    for chunk in records.chunks(args.batch_size) {
        for row in predictor.predict(chunk)? {
            let values = row.values.join("\t");
            writeln!(out, "{}\t{}\t{values}", row.record, row.name)?;
        }
        bar.inc(chunk.len() as u64);
    }
    bar.finish_and_clear();
    Ok(())
}

/// `--shard I/N`: predicts the part's records and writes the part file (-o).
fn predict_shard(
    args: &PredictArgs,
    predictor: &mut dyn Predictor,
    spec: shard::ShardSpec,
    header: &str,
) -> Result<()> {
    let n = predictor.len();
    let range = spec.records(n, args.batch_size);
    if let Some(t) = predictor.tallied() {
        t.start_tally();
    }
    let mut rows = Vec::new();
    predict_rows(args, predictor, range.clone(), &mut rows)?;
    let part = shard::Part {
        spec,
        range: range.clone(),
        rows,
        tally: predictor.tallied().map(|t| t.tally()),
    };
    shard::write_part(&args.output, args, n, header, &part)?.commit()?;
    if !args.runtime.quiet {
        eprintln!(
            "luminome-predict: part {spec}, records {}..{} of {n} → {}",
            range.start,
            range.end,
            args.output.display()
        );
    }
    Ok(())
}

/// `--gather PARTS`: the parts' rows to `out`, their tallies replayed so the metrics and extra
/// outputs are the unsharded run's; returns the metrics.
fn gather_parts(
    args: &PredictArgs,
    predictor: &mut dyn Predictor,
    extra: &ExtraOutputs,
    header: &str,
    out: &mut impl Write,
) -> Result<Option<Vec<(String, String)>>> {
    let rows_only = || {
        anyhow::anyhow!(
            "--gather: this model's parts carry only their rows, so --metrics, --vcf, --bedgraph and --npz cannot be gathered; run those unsharded"
        )
    };
    let wants_more = args.metrics.is_some() || extra.any();
    // Refused before any part is read when the model keeps no tally at all.
    if wants_more && predictor.tallied().is_none() {
        return Err(rows_only());
    }
    luminome_cli::record_command_without(shard::is_gather_arg);
    let tally = shard::gather(args, predictor.len(), header, out)?;
    match (&tally, predictor.tallied()) {
        (Some(tally), Some(tallied)) => {
            tallied.replay(tally)?;
            predictor.metrics()
        }
        _ if wants_more => Err(rows_only()),
        _ => Ok(None),
    }
}

/// Runs `predictor` over the dataset and writes the TSV, the metrics and the extra outputs.
fn write_predictions(args: &PredictArgs, predictor: &mut dyn Predictor) -> Result<()> {
    let extra = ExtraOutputs {
        vcf: args.vcf.clone(),
        bedgraph: args.bedgraph.clone(),
        npz: args.npz.clone(),
        chrom_sizes: args.chrom_sizes.clone(),
        variants: args.variants.clone(),
        embeddings: args.embeddings.clone(),
    };
    if args.metrics.is_some() && !predictor.has_truth() {
        bail!(
            "{}: --metrics needs true labels or values, and this dataset has none",
            args.dataset.display()
        );
    }
    match predictor.extra_outputs() {
        Some(writer) => writer.check_extra(&extra)?,
        None if extra.any() => bail!(
            "--vcf, --bedgraph and --npz are written for variant datasets scored by a bi-strand or published Caduceus model"
        ),
        None => {}
    }
    if predictor.is_empty() {
        // An empty table and a metrics file of nothing would read as a finished prediction.
        bail!(
            "{}: no records to predict (the dataset is empty{})",
            args.dataset.display(),
            if args.subset.is_some() {
                ", or --subset selects none of it"
            } else {
                ""
            }
        );
    }
    let mut header = vec!["record".to_string(), "name".to_string()];
    header.extend(predictor.columns());
    let header = header.join("\t");
    let n = predictor.len();
    if let Some(spec) = args.shard {
        return predict_shard(args, predictor, spec, &header);
    }
    let mut out = AtomicWriter::create(&args.output)?;
    writeln!(out, "{header}")?;
    let metrics = if args.gather.is_empty() {
        predict_rows(args, predictor, 0..n, &mut out)?;
        predictor.metrics()?
    } else {
        gather_parts(args, predictor, &extra, &header, &mut out)?
    };
    let metrics_file = match (&args.metrics, &metrics) {
        (Some(path), Some(rows)) => {
            let mut w = AtomicWriter::create(path)?;
            writeln!(w, "metric\tvalue")?;
            for (k, v) in rows {
                writeln!(w, "{k}\t{v}")?;
            }
            Some(w)
        }
        _ => None,
    };
    let extra_files = match predictor.extra_outputs() {
        Some(writer) => writer.write_extra(&extra)?,
        None => Vec::new(),
    };
    out.commit()?;
    if let Some(w) = metrics_file {
        w.commit()?;
    }
    for f in extra_files {
        f.commit_boxed()?;
    }
    if !args.runtime.quiet {
        eprintln!("luminome-predict: {n} records → {}", args.output.display());
        if args.checkpoints.len() > 1 {
            eprintln!(
                "  an ensemble of {} checkpoints: the mean of their class probabilities",
                args.checkpoints.len()
            );
        }
        if let Some(rows) = metrics {
            for (k, v) in rows.iter().filter(|(k, _)| !k.starts_with("confusion_")) {
                eprintln!("  {k}\t{v}");
            }
            let confusion: Vec<String> = rows
                .iter()
                .filter(|(k, _)| k.starts_with("confusion_"))
                .map(|(k, v)| format!("{}={v}", k.trim_start_matches("confusion_")))
                .collect();
            if !confusion.is_empty() {
                eprintln!("  confusion\t{}", confusion.join(" "));
            }
        }
    }
    Ok(())
}
