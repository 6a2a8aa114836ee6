//! `luminome-importance`: per-token and per-base importance of a trained sequence classifier,
//! and per-region and per-motif importance of an expression model ([`expression`]).
//!
//! - [`args`]: the command line (methods, reductions, outputs).
//! - [`methods`]: gates (DynamicGated g_i^final reduced over channels), gradient × input and
//!   integrated gradients on the token embeddings.
//! - [`deeplift`]: DeepLIFT/SHAP against dinucleotide-shuffled references (CNN and standard
//!   transformer classifiers).
//! - [`bases`]: token → base spans, k-mer scores spread back onto bases, genomic positions.
//! - [`outputs`]: TSV, bedGraph, npz.
//! - [`sink`]: where a sequence classifier's per-record outputs go: one job's writers, a
//!   `--shard` part, or the `--gather` of the parts into one job's outputs.
//! - [`selection`]: which records, which class, the weights of the explained output.
//!
//! Every check (model kind, vocabulary, lengths, labels, method vs adapter, outputs vs
//! tokenizer) runs before any output is started; outputs appear at their final paths only when
//! the whole run succeeded. See docs/predict-importance.md.

pub mod args;
pub mod bases;
pub mod deeplift;
pub mod expression;
pub mod ism;
pub mod methods;
pub mod outputs;
pub mod rows;
pub mod selection;
pub mod sink;
pub mod tabular;

use std::time::Instant;

use anyhow::{bail, Result};
use luminome_cli::progress_bar;
use luminome_engine::models::bag_of_tokens::BagOfTokensConfig;
use luminome_engine::models::classifier::ClassifierConfig;
use luminome_engine::models::kmer_linear::KmerLinearConfig;
use luminome_engine::models::token::{ClassifierInput, TokenClassifier};
use luminome_engine::models::FamilyConfig;
use luminome_engine::parse_device;
use luminome_io::atomic::{check_output_dir, AtomicWriter};
use luminome_io::token_dataset::TokenBatch;

use crate::args::{ImportanceArgs, Method};
use crate::bases::{base_scores, row_bases, scored_tokens};
use crate::methods::{token_scores, MethodOptions};
use crate::outputs::{write_tsv_record, GenomeTrack, ModiscoArrays, TSV_HEADER};
use crate::selection::{choose_target, output_weights, select_records, widest_row, Target};
use crate::sink::RecordOutputs;

/// A sequence classifier and the dataset it is explained on, checked against each other.
pub type Input = ClassifierInput<ClassifierConfig>;

/// Runs the command.
pub fn run(args: &ImportanceArgs) -> Result<()> {
    let started = Instant::now();
    if args.batch_size == 0 || args.ism_rows == 0 {
        bail!("--batch-size and --ism-rows must be at least 1");
    }
    if args.positions.is_some() && args.method != Method::Ism {
        bail!("--positions restricts --method ism; the other methods score every position");
    }
    if args.shuffles == 0 || args.shuffles > deeplift::MAX_SHUFFLES {
        bail!(
            "--shuffles must be between 1 and {}, got {}",
            deeplift::MAX_SHUFFLES,
            args.shuffles
        );
    }
    // Each step is a forward and backward pass per batch: past 10,000 the run never ends.
    if args.ig_steps == 0 || args.ig_steps > 10_000 {
        bail!(
            "--ig-steps must be between 1 and 10000, got {}",
            args.ig_steps
        );
    }
    args.runtime.apply_threads();
    luminome_cli::on_pool(|| run_on_pool(args, started))
}

/// [`run`] from the thread pool on.
fn run_on_pool(args: &ImportanceArgs, started: Instant) -> Result<()> {
    for out in [
        Some(&args.output),
        args.bedgraph.as_ref(),
        args.npz.as_ref(),
    ]
    .into_iter()
    .flatten()
    {
        check_output_dir(out)?;
    }
    let dataset_index = luminome_io::token_dataset::index_path_for(&args.dataset);
    // A region dataset's side tables: not read here, but part of the dataset (as in predict).
    let side_tables = ["samples.tsv", "regions.tsv"]
        .map(|s| luminome_io::token_dataset::side_path_for(&args.dataset, s));
    let outputs: Vec<(&str, &std::path::Path)> = [
        ("-o", Some(&args.output)),
        ("--bedgraph", args.bedgraph.as_ref()),
        ("--npz", args.npz.as_ref()),
        ("--ranking", args.ranking.as_ref()),
    ]
    .into_iter()
    .filter_map(|(f, p)| p.map(|p| (f, p.as_path())))
    .collect();
    let mut inputs = vec![
        ("--checkpoint", args.checkpoint.as_path()),
        ("--dataset", args.dataset.as_path()),
        ("the index of --dataset", dataset_index.as_path()),
        ("a side table of --dataset", side_tables[0].as_path()),
        ("a side table of --dataset", side_tables[1].as_path()),
    ];
    inputs.extend(args.positions.as_deref().map(|p| ("--positions", p)));
    inputs.extend(args.gather.iter().map(|p| ("--gather", p.as_path())));
    luminome_io::atomic::check_outputs_distinct(&outputs, &inputs)?;
    {
        use luminome_io::atomic::{check_extension, OutputKind};
        // A part is one safetensors file (-o); --npz and --bedgraph only say what it keeps.
        let kind = match args.shard {
            Some(_) => OutputKind::Safetensors,
            None => OutputKind::Tsv,
        };
        check_extension("-o", &args.output, kind)?;
        for (flag, path, kind) in [
            ("--bedgraph", &args.bedgraph, OutputKind::BedGraph),
            ("--npz", &args.npz, OutputKind::Npz),
            ("--ranking", &args.ranking, OutputKind::Tsv),
        ] {
            if let Some(p) = path {
                check_extension(flag, p, kind)?;
            }
        }
    }
    let meta = luminome_engine::checkpoint::read_checkpoint_meta(&args.checkpoint)?;
    match explainer(meta.model.kind()) {
        Some(Explainer::Expression) => expression::run(args, started),
        Some(Explainer::Tabular) => tabular::run(args, started),
        Some(Explainer::Tokens(family)) => explain_tokens(args, family, started),
        Some(Explainer::No(_)) | None => bail!(
            "{}: this checkpoint holds a {} (kind {}): {}",
            args.checkpoint.display(),
            meta.model.family(),
            meta.model.kind(),
            why_not(meta.model.kind())
        ),
    }
}

/// A token classifier's bases and tokens, by the methods its family supports.
fn explain_tokens(args: &ImportanceArgs, token_model: TokenModel, started: Instant) -> Result<()> {
    if args.method == Method::Attention {
        bail!(
            "{}: --method attention is for tabular FT-Transformer models",
            args.checkpoint.display()
        );
    }
    if args.ranking.is_some() || args.top.is_some() {
        bail!("--ranking and --top are for tabular and expression models");
    }
    if args.method == Method::Pooling {
        bail!(
            "{}: --method pooling is for expression models with the attention-pooling head",
            args.checkpoint.display()
        );
    }
    if args.subset.is_some() {
        bail!("--subset is for expression models trained with --holdout");
    }
    let device = parse_device(&args.runtime.device)?;
    if token_model == TokenModel::BagOfTokens {
        if args.method != Method::Ism {
            bail!(
                "{}: a bag-of-tokens model is linear in its token counts (each token's per-class weight is its contribution); --method ism scores its substitutions, the gradient methods are for CNN and transformer classifiers",
                args.checkpoint.display()
            );
        }
        let input =
            ClassifierInput::<BagOfTokensConfig>::open(&args.checkpoint, &args.dataset, device)?;
        return ism_run(args, &input, started);
    }
    if token_model == TokenModel::KmerLinear {
        if args.method == Method::Gates {
            bail!(
                "{}: --method gates needs a DynamicGated model; a k-mer linear model is explained exactly by its k-mer weights (--method saliency or ig, which agree for a linear model)",
                args.checkpoint.display()
            );
        }
        let input =
            ClassifierInput::<KmerLinearConfig>::open(&args.checkpoint, &args.dataset, device)?;
        if args.method == Method::Ism {
            return ism_run(args, &input, started);
        }
        if args.method == Method::DeepLiftShap {
            bail!(
                "{}: a k-mer linear model is explained exactly by its k-mer weights (--method saliency or ig, which agree for a linear model); --method deepliftshap is for CNN and transformer classifiers",
                args.checkpoint.display()
            );
        }
        return explain(args, &input, started, kmer_token_scores);
    }
    let input = Input::open(&args.checkpoint, &args.dataset, device)?;
    if args.method == Method::Ism {
        return ism_run(args, &input, started);
    }
    if args.method == Method::DeepLiftShap {
        return deeplift::run(args, &input, started);
    }
    if args.method == Method::Gates && !input.config.adapter.has_gates() {
        bail!(
            "{}: --method gates needs a DynamicGated model (adapter gated or gated-max); this checkpoint's adapter is {}. Use --method saliency or --method ig",
            args.checkpoint.display(),
            input.config.adapter.name()
        );
    }
    let opts = MethodOptions {
        method: args.method,
        reduce: args.reduce,
        ig_steps: args.ig_steps,
    };
    explain(args, &input, started, |input, batch, targets| {
        token_scores(input, batch, targets, &opts)
    })
}

/// How luminome-importance explains a family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Explainer {
    /// Attention pooling, gradients and ISM over the regions of a gene (`expression.rs`).
    Expression,
    /// Columns of a table row (`tabular.rs`).
    Tabular,
    /// Bases and tokens of a sequence classifier.
    Tokens(TokenModel),
    /// Not explained: why, and what to explain instead.
    No(&'static str),
}

/// The token classifiers, each with the methods it supports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenModel {
    /// Every method (gates for DynamicGated models).
    Classifier,
    /// Its exact k-mer weights (saliency and ig agree) and ISM.
    KmerLinear,
    /// ISM.
    BagOfTokens,
}

/// How each registered family is explained, by `kind`; `None` for a kind the registry does not
/// know. Every registered family has an arm (`tests/registry.rs`).
pub fn explainer(kind: &str) -> Option<Explainer> {
    use luminome_engine::models::*;
    Some(match kind {
        expression::ExpressionConfig::KIND => Explainer::Expression,
        tabular::TabularConfig::KIND => Explainer::Tabular,
        classifier::ClassifierConfig::KIND => Explainer::Tokens(TokenModel::Classifier),
        kmer_linear::KmerLinearConfig::KIND => Explainer::Tokens(TokenModel::KmerLinear),
        bag_of_tokens::BagOfTokensConfig::KIND => Explainer::Tokens(TokenModel::BagOfTokens),
        mlm::MlmConfig::KIND => Explainer::No(
            "a masked-LM pretraining model predicts masked tokens, not a class; explain the classifier fine-tuned from it (luminome-train classify --init)",
        ),
        region_pretrain::RegionPretrainConfig::KIND => Explainer::No(
            "a region pretraining model; explain the expression model fine-tuned from it (luminome-train expression --init)",
        ),
        bistrand::BiStrandConfig::KIND => Explainer::No(
            "a bi-strand model's predictions are variant effects: luminome-predict --vcf scores each variant",
        ),
        dual::DualConfig::KIND => Explainer::No(
            "a dual encoder ranks passages by similarity; luminome-predict --corpus ranks them",
        ),
        _ => return None,
    })
}

/// Why a kind is not explained (for the refusal).
fn why_not(kind: &str) -> &'static str {
    match explainer(kind) {
        Some(Explainer::No(why)) => why,
        _ => "luminome-importance explains sequence classifiers, expression and tabular models",
    }
}

/// Token scores of a k-mer linear model: each base's exact share of the target class's logit
/// (centred over the classes; see `KmerLinear::base_contributions`), and each token the mean of
/// the bases it covers — the bases themselves for nucleotide tokens.
fn kmer_token_scores(
    input: &ClassifierInput<KmerLinearConfig>,
    batch: &TokenBatch,
    targets: &[usize],
) -> Result<Vec<Vec<f32>>> {
    let model = input.model()?;
    let tok = input.dataset.tokenizer();
    let l = batch.max_length;
    let mut out = Vec::with_capacity(batch.batch);
    for (r, &target) in targets.iter().enumerate() {
        let ids = &batch.input_ids[r * l..(r + 1) * l];
        let mask = &batch.attention_mask[r * l..(r + 1) * l];
        let bases = luminome_engine::models::kmer_linear::features::row_bases(tok, ids, mask)
            .unwrap_or_default();
        let per_base = model.base_contributions(&bases, target)?;
        let scores = ids
            .iter()
            .enumerate()
            .map(|(t, &id)| match tok.token_span(t, id) {
                Some((s, e)) if mask[t] != 0 && e <= per_base.len() && e > s => {
                    per_base[s..e].iter().sum::<f32>() / (e - s) as f32
                }
                _ => 0.0,
            })
            .collect();
        out.push(scores);
    }
    Ok(out)
}

/// `--method ism` on a sequence classifier: the mutagenesis of every selected record, written
/// as the ISM TSV, npz and bedGraph.
fn ism_run<C: FamilyConfig>(
    args: &ImportanceArgs,
    input: &ClassifierInput<C>,
    started: Instant,
) -> Result<()>
where
    C::Model: TokenClassifier,
{
    let tok = input.dataset.tokenizer().clone();
    let mutator = ism::Mutator::new(&tok, &args.dataset)?;
    let target = choose_target(args, input)?;
    let mut records = select_records(args, input)?;
    let only = match &args.positions {
        Some(path) => Some(restrict_to_positions(
            &ism::Positions::read(path)?,
            input,
            &mut records,
            path,
            args.runtime.quiet,
        )?),
        None => None,
    };
    let classes = input.model()?.label_values().len();
    let arrays = ism::IsmArrays::new(widest_row(input, &records)?);
    let specs = arrays.specs(records.len());
    let started_run = RecordOutputs::start(
        args,
        ism::ISM_TSV_HEADER,
        &specs,
        &records,
        args.batch_size,
        &input.index,
    )?;
    let Some((mut out, mine)) = started_run else {
        return Ok(());
    };
    let bar = progress_bar(mine.len() as u64, args.runtime.quiet);
    let mut forward_rows = 0usize;
    for chunk in mine.chunks(args.batch_size) {
        let batch = input.batch(chunk)?;
        let predicted = match target {
            Target::Fixed(_) => None,
            Target::Predicted => Some(input.logits(chunk)?),
        };
        let l = batch.max_length;
        for (i, &r) in chunk.iter().enumerate() {
            let weights = output_weights(&target, predicted.as_ref(), i, classes);
            let row = i * l..(i + 1) * l;
            let result = ism::mutagenesis(
                input,
                &mutator,
                (&batch.input_ids[row.clone()], &batch.attention_mask[row]),
                &weights,
                args.ism_rows,
                only.as_ref().map(|o| o[&r].as_slice()),
            )?;
            forward_rows += 1
                + (0..result.delta.len())
                    .filter(|&p| result.mutated[p])
                    .map(|p| if result.bases[p].is_some() { 3 } else { 4 })
                    .sum::<usize>();
            let index = &input.index[r];
            ism::write_tsv(
                out.tsv(),
                index.record,
                &index.name,
                &result,
                args.ism_score,
            )?;
            if out.has_track() {
                let scores: Vec<Option<f32>> = (0..result.delta.len())
                    .map(|p| result.mutated[p].then(|| result.score(p, args.ism_score)))
                    .collect();
                out.track(index, &scores);
            }
            if let Some(n) = out.arrays() {
                arrays.push(n, index.record, &result, args.ism_score)?;
            }
            out.end_record(r)?;
        }
        bar.inc(chunk.len() as u64);
    }
    bar.finish_and_clear();
    out.commit(args, records.len())?;
    if !args.runtime.quiet {
        eprintln!(
            "luminome-importance: {} records, method ism ({forward_rows} forward rows) → {} ({:.1}s)",
            mine.len(),
            args.output.display(),
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// `--positions`: which row bases of each record to mutate. Records without coordinates, or
/// with no base in the intervals, are left out (counted on stderr); none left is an error.
fn restrict_to_positions<C: FamilyConfig>(
    positions: &ism::Positions,
    input: &ClassifierInput<C>,
    records: &mut Vec<usize>,
    path: &std::path::Path,
    quiet: bool,
) -> Result<std::collections::HashMap<usize, Vec<bool>>>
where
    C::Model: TokenClassifier,
{
    let (mut no_coords, mut outside) = (0, 0);
    let mut only = std::collections::HashMap::new();
    records.retain(|&r| {
        let index = &input.index[r];
        match positions.of_row(index, index.window_length as usize) {
            None => {
                no_coords += 1;
                false
            }
            Some(m) if !m.contains(&true) => {
                outside += 1;
                false
            }
            Some(m) => {
                only.insert(r, m);
                true
            }
        }
    });
    if !quiet && no_coords + outside > 0 {
        eprintln!(
            "luminome-importance: --positions {}: {no_coords} records without genomic coordinates and {outside} with no base in its intervals are left out",
            path.display()
        );
    }
    if records.is_empty() {
        bail!(
            "--positions {}: no selected record has a base in its intervals ({no_coords} have no genomic coordinates)",
            path.display()
        );
    }
    Ok(only)
}

/// Writes the bedGraph (saying how many records had no coordinates) and moves the TSV, the
/// track and the npz (`commit_npz`) to their final names, once everything is complete.
pub(crate) fn commit_outputs(
    args: &ImportanceArgs,
    records: usize,
    tsv: AtomicWriter,
    track: Option<&GenomeTrack>,
    commit_npz: impl FnOnce() -> Result<()>,
) -> Result<()> {
    let bedgraph = match (&args.bedgraph, track) {
        (Some(path), Some(t)) => {
            if !args.runtime.quiet && t.records_without_coords > 0 {
                eprintln!(
                    "luminome-importance: {} of {records} records have no genomic coordinates (chrom '.' in the index) and are not in the bedGraph{}",
                    t.records_without_coords,
                    if t.records_placed == 0 { "; it holds only its track line" } else { "" }
                );
            }
            Some(t.write(
                path,
                &format!("luminome-importance {}", args.method.name()),
                args.chrom_sizes.as_deref(),
            )?)
        }
        _ => None,
    };
    tsv.commit()?;
    if let Some(b) = bedgraph {
        b.commit()?;
    }
    commit_npz()
}

/// Scores the selected records of `input` with `score` (token scores `[batch][positions]` of a
/// batch for each row's target class) and writes the outputs.
fn explain<C: FamilyConfig>(
    args: &ImportanceArgs,
    input: &ClassifierInput<C>,
    started: Instant,
    score: impl Fn(&ClassifierInput<C>, &TokenBatch, &[usize]) -> Result<Vec<Vec<f32>>>,
) -> Result<()>
where
    C::Model: TokenClassifier,
{
    let tok = input.dataset.tokenizer().clone();
    if (args.bedgraph.is_some() || args.npz.is_some()) && !tok.scheme.has_row_spans() {
        bail!(
            "{}: --bedgraph and --npz need tokens of known bases (nucleotide, kmer or a Nucleotide Transformer's 6-mers); this dataset uses the {} scheme",
            args.dataset.display(),
            tok.scheme
        );
    }
    let target = choose_target(args, input)?;
    let records = select_records(args, input)?;
    let arrays = ModiscoArrays::new(widest_row(input, &records)?);
    let specs = arrays.specs(records.len());
    let started_run = RecordOutputs::start(
        args,
        TSV_HEADER,
        &specs,
        &records,
        args.batch_size,
        &input.index,
    )?;
    let Some((mut out, mine)) = started_run else {
        return Ok(());
    };
    let bar = progress_bar(mine.len() as u64, args.runtime.quiet);
    for chunk in mine.chunks(args.batch_size) {
        let batch = input.batch(chunk)?;
        let targets: Vec<usize> = match target {
            Target::Fixed(c) => vec![c; chunk.len()],
            Target::Predicted if args.method == Method::Gates => vec![0; chunk.len()],
            Target::Predicted => input
                .logits(chunk)?
                .iter()
                .map(|l| {
                    l.iter()
                        .enumerate()
                        .fold(0, |best, (k, &v)| if v > l[best] { k } else { best })
                })
                .collect(),
        };
        let scores = score(input, &batch, &targets)?;
        let l = batch.max_length;
        for (i, &r) in chunk.iter().enumerate() {
            let row = i * l..(i + 1) * l;
            let tokens = scored_tokens(
                &tok,
                &batch.input_ids[row.clone()],
                &batch.attention_mask[row],
                &scores[i],
            );
            let index = &input.index[r];
            write_tsv_record(out.tsv(), &tok, index.record, &index.name, &tokens)?;
            let n_bases = row_bases(&tokens);
            if out.has_track() {
                out.track(index, &base_scores(&tokens, n_bases));
            }
            if let Some(n) = out.arrays() {
                arrays.push(n, &tok, index.record, &tokens, n_bases)?;
            }
            out.end_record(r)?;
        }
        bar.inc(chunk.len() as u64);
    }
    bar.finish_and_clear();
    out.commit(args, records.len())?;
    if !args.runtime.quiet {
        eprintln!(
            "luminome-importance: {} records, method {:?} → {} ({:.1}s)",
            mine.len(),
            args.method,
            args.output.display(),
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}
