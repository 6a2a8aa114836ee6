//! Dual encoders under `luminome-predict`: retrieval evaluation of a pairs dataset (against its
//! own passages or a `--corpus`), and embeddings of any token dataset.
//!
//! Outputs: `-o` one line per distinct query (`record name relevant first_rank rr top
//! top_scores positive_similarity`; `top`: the 10 best passages, best first) — or, for a token
//! dataset, one line per embedded row; `--metrics` (metric, value): full-corpus and in-batch
//! retrieval metrics and embedding statistics; `--embeddings`: safetensors with `query` and
//! `passage` (f32 `[n, dim]`, L2-normalised; a token dataset: `embedding`) and, beside it,
//! `<stem>.index.tsv` (`set row name`) naming each row, for numpy or FAISS.

use std::io::Write;
use std::path::Path;

use anyhow::{bail, Context, Result};
use candle_core::Device;
use luminome_engine::checkpoint::Checkpoint;
use luminome_engine::models::dual::retrieval::{
    embed_rows, evaluate, Corpus, RetrievalReport, RetrievalSet,
};
use luminome_engine::models::dual::setup::open_pairs;
use luminome_engine::models::dual::DualConfig;
use luminome_io::atomic::AtomicWriter;
use luminome_io::retrieval_pairs::{Side, RETRIEVAL_PAIRS_KIND};
use luminome_io::token_dataset::{TokenDataset, TOKEN_DATASET_KIND};

use crate::args::{EmbedSide, PredictArgs};

/// The kind a Luminome safetensors file declares ("" when none).
pub fn dataset_kind(path: &Path) -> String {
    let file = if path.exists() {
        path.to_path_buf()
    } else {
        luminome_io::token_dataset::shard_path(path, 0)
    };
    luminome_io::tensorfile::TensorFile::open(&file)
        .ok()
        .and_then(|f| f.metadata().get("kind").cloned())
        .unwrap_or_default()
}

// The embeddings file and its index, shared with the other families that write embeddings.
pub use luminome_engine::predict::embeddings::{embeddings_index, write_embeddings};

/// A record's name for output: its source record's name when the row is the whole record (a
/// FASTA record, a BED interval), its region `chr:start-end(strand)` (1-based inclusive) when
/// it is a window of one.
fn token_record_names(ds: &TokenDataset) -> Result<Vec<String>> {
    let index = ds.read_index()?;
    if index.len() != ds.len() {
        bail!(
            "{}: the record index {} has {} rows but the dataset has {} records",
            ds.path().display(),
            luminome_io::token_dataset::index_path_for(ds.path()).display(),
            index.len(),
            ds.len()
        );
    }
    Ok(index
        .into_iter()
        .map(|r| {
            let whole = r.window_offset == 0 && r.window_length == r.seq_length;
            match &r.interval {
                // 1-based inclusive, as the index's region column; the strand tells a
                // window from its reverse complement (--rc both).
                Some(i) if !whole => format!("{}({})", i.region(), r.strand),
                _ => r.name,
            }
        })
        .collect())
}

fn metadata(args: &PredictArgs, dim: usize, extra: serde_json::Value) -> serde_json::Value {
    serde_json::json!({
        "dim": dim,
        "normalized": "L2",
        "checkpoint": args.checkpoint().display().to_string(),
        "dataset": args.dataset.display().to_string(),
        "corpus": args.corpus.as_ref().map(|p| p.display().to_string()),
        "tool": "luminome-predict",
        "tool_version": env!("CARGO_PKG_VERSION"),
        "command_line": luminome_cli::command_line(),
        "details": extra,
    })
}

/// Runs a dual-encoder checkpoint on `args.dataset`.
pub fn run(args: &PredictArgs, device: Device) -> Result<()> {
    let ck = Checkpoint::load_frozen(args.checkpoint(), &device)?;
    let model = ck.get::<DualConfig>()?;
    let max_len = model.config.encoder.max_length;
    let kind = dataset_kind(&args.dataset);
    if kind == TOKEN_DATASET_KIND {
        return embed_dataset(args, &ck, device);
    }
    if kind != RETRIEVAL_PAIRS_KIND {
        bail!(
            "{}: a dual encoder evaluates a retrieval pairs dataset (luminome-tokenize --format pairs) or embeds a token dataset; this file is {}",
            args.dataset.display(),
            if kind.is_empty() { "neither".to_string() } else { format!("of kind {kind}") }
        );
    }
    if args.side.is_some() {
        bail!("--side is for embedding a token dataset; a pairs dataset embeds both sides");
    }
    let pairs = open_pairs(&args.dataset, "evaluation")?;
    ck.meta
        .check_tokenizer(args.checkpoint(), &args.dataset, pairs.tokenizer())?;
    let longest = pairs.length(Side::Query).max(pairs.length(Side::Passage));
    if longest > max_len {
        bail!(
            "{}: rows of {longest} tokens are longer than the model's max length {max_len}",
            args.dataset.display()
        );
    }
    let index = pairs.read_index()?;
    let corpus = open_corpus(args, max_len)?;
    let set = match &corpus {
        Some(c) => RetrievalSet::with_corpus(&pairs, c, &index)?,
        None => RetrievalSet::from_pairs(&pairs),
    };
    let report = evaluate(
        model,
        &pairs,
        &set,
        args.in_batch_size,
        args.batch_size,
        &device,
    )?;
    let passage_names: Vec<String> = match (&set.corpus, &corpus) {
        (Corpus::Tokens(_, rows), Some(c)) => {
            let names = token_record_names(c)?;
            rows.iter().map(|&r| names[r].clone()).collect()
        }
        (Corpus::Pairs(rows), _) => rows.iter().map(|&r| index[r].passage_id.clone()).collect(),
        _ => unreachable!("a token corpus comes with its dataset"),
    };
    let query_names: Vec<String> = set
        .query_rows
        .iter()
        .map(|&r| index[r].query_id.clone())
        .collect();
    let out = write_rankings(args, &report, &set, &query_names, &passage_names)?;
    let rows = report.metric_rows();
    let metrics_file = match &args.metrics {
        Some(path) => Some(write_metrics(path, &rows, set.merged_duplicates)?),
        None => None,
    };
    let embedding_files = match &args.embeddings {
        Some(path) => write_embeddings(
            path,
            &[
                ("query", &report.query_embeddings, &query_names),
                ("passage", &report.passage_embeddings, &passage_names),
            ],
            report.dim,
            metadata(
                args,
                report.dim,
                serde_json::json!({"queries": query_names.len(), "passages": passage_names.len()}),
            ),
        )?,
        None => Vec::new(),
    };
    out.commit()?;
    if let Some(w) = metrics_file {
        w.commit()?;
    }
    for f in embedding_files {
        f.commit_boxed()?;
    }
    if !args.runtime.quiet {
        eprintln!(
            "luminome-predict: {} queries ranked against {} passages{} → {}",
            report.per_query.len(),
            report.corpus_size,
            if set.merged_duplicates > 0 {
                format!(
                    " ({} identical corpus records merged)",
                    set.merged_duplicates
                )
            } else {
                String::new()
            },
            args.output.display()
        );
        for (k, v) in rows {
            eprintln!("  {k}\t{v:.6}");
        }
    }
    Ok(())
}

/// `--corpus`: the token dataset queries are ranked against, its rows no longer than the model's.
fn open_corpus(args: &PredictArgs, max_len: usize) -> Result<Option<TokenDataset>> {
    let Some(path) = args.corpus.as_deref() else {
        return Ok(None);
    };
    let c = TokenDataset::open(path)
        .with_context(|| format!("cannot open the corpus {}", path.display()))?;
    if c.max_length() > max_len {
        bail!(
            "{}: rows of {} tokens are longer than the model's max length {max_len}",
            c.path().display(),
            c.max_length()
        );
    }
    Ok(Some(c))
}

/// `-o`: one line per distinct query (in `set.query_rows` order), uncommitted.
fn write_rankings(
    args: &PredictArgs,
    report: &RetrievalReport,
    set: &RetrievalSet,
    query_names: &[String],
    passage_names: &[String],
) -> Result<AtomicWriter> {
    let mut out = AtomicWriter::create(&args.output)?;
    writeln!(
        out,
        "record\tname\trelevant\tfirst_rank\trr\ttop\ttop_scores\tpositive_similarity"
    )?;
    for (qi, (q, name)) in report.per_query.iter().zip(query_names).enumerate() {
        let relevant: Vec<&str> = set.relevant[qi]
            .iter()
            .map(|&j| passage_names[j].as_str())
            .collect();
        let top: Vec<&str> = q
            .top
            .iter()
            .map(|&(j, _)| passage_names[j].as_str())
            .collect();
        let top_scores: Vec<String> = q.top.iter().map(|&(_, s)| format!("{s:.4}")).collect();
        writeln!(
            out,
            "{}\t{name}\t{}\t{}\t{:.6}\t{}\t{}\t{:.6}",
            q.row,
            relevant.join(","),
            q.ranks[0],
            q.scores.rr,
            top.join(","),
            top_scores.join(","),
            q.positive_similarity
        )?;
    }
    Ok(out)
}

/// `--metrics`: the report's rows, and the corpus duplicates merged when there were any.
fn write_metrics(path: &Path, rows: &[(String, f64)], merged: usize) -> Result<AtomicWriter> {
    let mut w = AtomicWriter::create(path)?;
    writeln!(w, "metric\tvalue")?;
    for (k, v) in rows {
        writeln!(w, "{k}\t{v}")?;
    }
    if merged > 0 {
        writeln!(w, "corpus_duplicates_merged\t{merged}")?;
    }
    Ok(w)
}

/// Embeddings of every row of a token dataset by one of the two encoders.
fn embed_dataset(args: &PredictArgs, ck: &Checkpoint, device: Device) -> Result<()> {
    let model = ck.get::<DualConfig>()?;
    let Some(path) = &args.embeddings else {
        bail!(
            "{}: a token dataset given to a dual encoder is embedded: name the output with --embeddings FILE.safetensors",
            args.dataset.display()
        );
    };
    if args.corpus.is_some() || args.metrics.is_some() {
        bail!("--corpus and --metrics are for a pairs dataset (retrieval evaluation)");
    }
    let ds = TokenDataset::open(&args.dataset)?;
    ck.meta
        .check_tokenizer(args.checkpoint(), &args.dataset, ds.tokenizer())?;
    let max_len = model.config.encoder.max_length;
    if ds.max_length() > max_len {
        bail!(
            "{}: rows of {} tokens are longer than the model's max length {max_len}",
            ds.path().display(),
            ds.max_length()
        );
    }
    let side = match args.side.unwrap_or(EmbedSide::Passage) {
        EmbedSide::Query => Side::Query,
        EmbedSide::Passage => Side::Passage,
    };
    let e = embed_rows(model, side, ds.len(), args.batch_size, &device, &|r| {
        ds.batch(r)
    })?;
    let names = token_record_names(&ds)?;
    let mut out = AtomicWriter::create(&args.output)?;
    writeln!(out, "record\tname")?;
    for (i, n) in names.iter().enumerate() {
        writeln!(out, "{i}\t{n}")?;
    }
    let dim = model.config.encoder.d_model;
    let files = write_embeddings(
        path,
        &[("embedding", &e, &names)],
        dim,
        metadata(
            args,
            dim,
            serde_json::json!({"side": side.name(), "rows": names.len()}),
        ),
    )?;
    out.commit()?;
    for f in files {
        f.commit_boxed()?;
    }
    if !args.runtime.quiet {
        eprintln!(
            "luminome-predict: {} records embedded by the {} encoder → {}",
            names.len(),
            side.name(),
            path.display()
        );
    }
    Ok(())
}

/// For the refusal of a pairs dataset given to another kind of model.
pub fn is_pairs(path: &Path) -> bool {
    dataset_kind(path) == RETRIEVAL_PAIRS_KIND
}
