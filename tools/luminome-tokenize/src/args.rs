//! The `luminome-tokenize` command line.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Parser;
use luminome_io::seqtable::SeqTableOptions;

use crate::bases::NonAcgtPolicy;
use crate::pipeline::{InputFormat, JobInput, Overflow, RcMode, Summary, TokenizeJob};
use crate::split::{split_output, SplitPlan};
use luminome_io::token_dataset::{TokenizerInfo, TokenizerScheme};

use crate::scheme::{KmerMode, Scheme};
use crate::source::{Cut, SourceOptions};

/// The longest row `--max-length` takes (2^20 tokens).
pub const MAX_ROW_LENGTH: usize = 1 << 20;

const EXAMPLES: &str = "\
Examples:
  # GUE-style CSV (sequence,label) → single-nucleotide ids with [CLS]/[SEP], padded to 72
  # (outputs go to an existing folder: mkdir -p work)
  luminome-tokenize test-data/gue_prom_core_all/train.csv --max-length 72 -o work/prom_train.safetensors

  # a chromosome in 512-base windows every 256 bases, 6-mers, with soft-mask flags
  luminome-tokenize chr22.fa.gz --scheme kmer -k 6 --window 512 --stride 256 --overflow window \\
      --soft-mask -o chr22_6mer.safetensors

  # one FASTA per class, labelled and split 80/10/10 by record (stratified, --seed)
  luminome-tokenize promoters.fa non_promoters.fa --label 1,0 --split 0.8,0.1,0.1 -o prom.safetensors

  # peaks, centred to 200 bp, strand-aware, plus reverse complements
  luminome-tokenize peaks.narrowPeak --reference chr22.fa --width 200 --rc both -o peaks.safetensors

  # genome windows without assembly gaps for pretraining; a task tokenized to match the checkpoint
  luminome-tokenize chr22.fa.gz --scheme kmer -k 3 --kmer-mode non-overlapping --window 128 \\
      --overflow window --max-n 0 -o chr22_3mer.safetensors
  luminome-tokenize task.csv --like mlm/best.safetensors -o task.safetensors

  # (query, passage) pairs for a dual encoder: a TSV with query and passage columns
  luminome-tokenize train.pairs.tsv --format pairs --max-length 512 -o train.pairs.safetensors
  # the passage corpus to rank against, tokenized to match
  luminome-tokenize corpus.fa --like train.pairs.safetensors -o corpus.safetensors

Outputs: OUTPUT (safetensors: input_ids, attention_mask, [labels], [soft_mask]) and, beside it,
OUTPUT minus .safetensors + .index.tsv (record, shard, name, chrom start end 0-based half-open as
in BED, region chr:start-end 1-based as samtools/IGV read it, seq_length, window_offset,
window_length, strand). In Python:
  from safetensors.numpy import load_file; d = load_file('work/prom_train.safetensors')";

/// DNA → token ids, written as a safetensors token dataset with a record index.
#[derive(Debug, Parser)]
#[command(name = "luminome-tokenize", version, about, after_help = EXAMPLES)]
pub struct Args {
    /// Input: FASTA/FASTQ (plain, gzip, BGZF, zstd, bzip2), CSV/TSV table, or BED/narrowPeak (with
    /// --reference). Several are read in order into one dataset (e.g. positives.fa negatives.fa
    /// --label 1,0).
    #[arg(help_heading = "Inputs", value_name = "INPUT", required = true, num_args = 1..)]
    pub inputs: Vec<PathBuf>,

    /// Output token dataset (.safetensors); the record index is written beside it.
    #[arg(help_heading = "Outputs", short, long)]
    pub output: PathBuf,

    /// Input format.
    #[arg(long, value_enum, default_value_t = InputFormat::Auto)]
    pub format: InputFormat,

    /// Tokenization scheme.
    #[arg(long, value_enum, default_value_t = TokenizerScheme::Nucleotide)]
    pub scheme: TokenizerScheme,

    /// k for --scheme kmer (1-8).
    #[arg(short, default_value_t = 6)]
    pub k: usize,

    /// k-mer tiling for --scheme kmer.
    #[arg(long, value_enum, default_value_t = KmerMode::Overlapping)]
    pub kmer_mode: KmerMode,

    /// tokenizer.json for --scheme hf, or a published checkpoint whose tokenizer.json is used
    /// (a folder in the Hugging Face layout, or hf:ORG/NAME, e.g. hf:zhihan1996/DNABERT-2-117M).
    #[arg(help_heading = "Inputs", long)]
    pub tokenizer: Option<PathBuf>,

    /// Tokenize as this dataset or checkpoint was (scheme, k-mer tiling, [CLS]/[SEP], an hf
    /// tokenizer.json): how data to fine-tune or score a model on is made to match it.
    #[arg(help_heading = "Inputs", long, value_name = "DATASET_OR_CHECKPOINT",
          conflicts_with_all = ["scheme", "k", "kmer_mode", "tokenizer", "no_cls", "no_sep"])]
    pub like: Option<PathBuf>,

    /// Do not start records with [CLS].
    #[arg(long)]
    pub no_cls: bool,

    /// Do not end records with [SEP].
    #[arg(long)]
    pub no_sep: bool,

    /// Row length in tokens, specials included; rows are padded to it. Without it, rows are
    /// padded to the longest.
    #[arg(long)]
    pub max_length: Option<usize>,

    /// What to do with records longer than --max-length / --window.
    #[arg(long, value_enum, default_value_t = Overflow::Truncate)]
    pub overflow: Overflow,

    /// Window size in bases (for --overflow window; default: as many bases as --max-length holds).
    #[arg(long)]
    pub window: Option<usize>,

    /// Step between window starts in bases (default: the window size, i.e. no overlap).
    #[arg(long)]
    pub stride: Option<usize>,

    /// Reverse-complement augmentation.
    #[arg(long, value_enum, default_value_t = RcMode::None)]
    pub rc: RcMode,

    /// Drop rows (windows) whose fraction of N bases exceeds this (0-1), counted in the log; e.g.
    /// 0.1 keeps assembly gaps out of genome windows for pretraining. Default: keep every row.
    #[arg(long, value_name = "FRACTION")]
    pub max_n: Option<f64>,

    /// IUPAC codes and letters other than A, C, G, T, N: map to N (counted in the log) or refuse.
    #[arg(long, value_enum, default_value_t = NonAcgtPolicy::N)]
    pub non_acgt: NonAcgtPolicy,

    /// Also write soft_mask: 1 for tokens covering lowercase (repeat-masked) bases.
    #[arg(long)]
    pub soft_mask: bool,

    /// Table input: the sequence column.
    #[arg(long, default_value = "sequence")]
    pub sequence_column: String,

    /// Table input: the integer label column.
    #[arg(long, default_value = "label")]
    pub label_column: String,

    /// Table input: read no labels.
    #[arg(long)]
    pub no_labels: bool,

    /// Table input: a column naming each row (default: row1, row2, ...).
    #[arg(long)]
    pub name_column: Option<String>,

    /// --format pairs: the query column.
    #[arg(long, default_value = "query")]
    pub query_column: String,

    /// --format pairs: the positive passage column.
    #[arg(long, default_value = "passage")]
    pub passage_column: String,

    /// --format pairs: the column naming queries, used when present [default name: q<row>].
    #[arg(long, default_value = "query_id")]
    pub query_id_column: String,

    /// --format pairs: the column naming passages, used when present [default name: p<n>].
    #[arg(long, default_value = "passage_id")]
    pub passage_id_column: String,

    /// --format pairs: read each side as text (any UTF-8) for --scheme hf, not as DNA.
    #[arg(long)]
    pub text: bool,

    /// FASTA/FASTQ/BED input: give every record this integer label; with several inputs, one
    /// label each, in order (--label 1,0), or one for all.
    #[arg(long, value_delimiter = ',', allow_negative_numbers = true)]
    pub label: Vec<i64>,

    /// Share whole records out into OUTPUT stem + .train/.dev[/.test].safetensors by these
    /// fractions (e.g. 0.8,0.1,0.1), stratified by label, shuffled with --seed.
    #[arg(help_heading = "Outputs", long, value_name = "TRAIN,DEV[,TEST]")]
    pub split: Option<String>,

    /// Seed of --split's shuffle.
    #[arg(help_heading = "Outputs", long, default_value_t = 1)]
    pub seed: u64,

    /// Reference FASTA for BED input (indexed with .fai, or indexable).
    #[arg(help_heading = "Inputs", long)]
    pub reference: Option<PathBuf>,

    /// BED input: add this many bases on each side of every interval.
    #[arg(long, default_value_t = 0)]
    pub flank: u64,

    /// BED input: resize intervals to this many bases around their centre (narrowPeak: summit).
    #[arg(long)]
    pub width: Option<u64>,

    /// Write numbered shards (OUTPUT stem + .00000.safetensors, ...) of this many rows each.
    #[arg(help_heading = "Outputs", long)]
    pub shard_records: Option<u64>,

    /// Tokenize part I of N of the run's units (blocks of 1,024 records or windows, dealt round
    /// robin) into a part file (-o X.part.safetensors), one job per part on a cluster; then
    /// --gather the parts with the same arguments (docs/scale-out.md).
    #[arg(
        help_heading = "Scale-out",
        long,
        value_name = "I/N",
        conflicts_with = "gather"
    )]
    pub shard: Option<luminome_cli::shard::ShardSpec>,

    /// Join the part files of --shard 1/N .. N/N into the dataset one run with these arguments
    /// writes (the same bytes); the inputs are checked, not tokenized again.
    #[arg(help_heading = "Scale-out", long, value_name = "PARTS", num_args = 1..)]
    pub gather: Vec<PathBuf>,

    /// Worker threads (BGZF decompression and tokenizing); default: all cores. `--threads 1`
    /// still reads on one thread while tokenizing on another: up to two cores' CPU time.
    #[arg(help_heading = "Runtime", long)]
    pub threads: Option<usize>,

    /// No progress or summary on stderr.
    #[arg(help_heading = "Runtime", short, long)]
    pub quiet: bool,
}

impl Args {
    /// Builds the job this command line asks for.
    pub fn job(&self) -> Result<TokenizeJob> {
        let (scheme, hf_json, add_cls, add_sep) = match &self.like {
            Some(like) => like_scheme(like)?,
            None => {
                // A tokenizer without an end token (an EsmTokenizer whose eos_token is null)
                // adds none.
                let mut has_end = true;
                let (scheme, json) = match self.scheme {
                    TokenizerScheme::Nucleotide => (Scheme::Nucleotide, None),
                    TokenizerScheme::Kmer => (Scheme::kmer(self.k, self.kmer_mode)?, None),
                    TokenizerScheme::Hf => {
                        let path = self
                            .tokenizer
                            .as_ref()
                            .context("--scheme hf needs --tokenizer tokenizer.json")?;
                        match published_tokenizer(path)? {
                            PublishedTokenizer::Json(path) => {
                                let json = std::fs::read_to_string(&path)
                                    .with_context(|| format!("cannot read {}", path.display()))?;
                                (Scheme::hf(&path)?, Some(json))
                            }
                            PublishedTokenizer::Esm(info) => {
                                has_end = info.add_sep;
                                (Scheme::esm_vocab(info)?, None)
                            }
                        }
                    }
                    TokenizerScheme::Characters | TokenizerScheme::EsmVocab => anyhow::bail!(
                        "a published model's own vocabulary is read from its checkpoint (--scheme hf --tokenizer DIR, or luminome-mask-pairs --like)"
                    ),
                };
                (scheme, json, !self.no_cls, !self.no_sep && has_end)
            }
        };
        let threads = luminome_cli::thread_count(self.threads);
        if let Some(f) = self.max_n {
            if !(0.0..=1.0).contains(&f) {
                anyhow::bail!("--max-n {f}: a fraction of bases from 0 to 1");
            }
        }
        if self.shard_records == Some(0) {
            anyhow::bail!("--shard-records must be at least 1");
        }
        // Rows are padded to --max-length and a batch of them is held in memory: a length
        // beyond this is a typo or a whole chromosome, which --window handles.
        if let Some(l) = self.max_length.filter(|&l| l > MAX_ROW_LENGTH) {
            anyhow::bail!(
                "--max-length {l}: rows take at most {MAX_ROW_LENGTH} tokens; split long sequences with --window"
            );
        }
        Ok(TokenizeJob {
            inputs: self.job_inputs()?,
            format: self.format,
            output: self.output.clone(),
            scheme,
            hf_json,
            add_cls,
            add_sep,
            max_length: self.max_length,
            overflow: self.overflow,
            window: self.window,
            stride: self.stride,
            rc: self.rc,
            soft_mask: self.soft_mask,
            max_n: self.max_n,
            source: SourceOptions {
                cut: Cut::Whole,
                policy: self.non_acgt,
                threads,
                constant_label: None,
                table: SeqTableOptions {
                    sequence_column: self.sequence_column.clone(),
                    label_column: (!self.no_labels).then(|| self.label_column.clone()),
                    name_column: self.name_column.clone(),
                    delimiter: None,
                },
                reference: self.reference.clone(),
                flank: self.flank,
                width: self.width,
                soft_mask: self.soft_mask,
            },
            shard_records: self.shard_records,
            split: self
                .split
                .as_deref()
                .map(|s| SplitPlan::parse(s, self.seed))
                .transpose()?,
            threads,
            command_line: luminome_cli::command_line(),
            quiet: self.quiet,
            part: None,
        })
    }
}

impl Args {
    /// Each input with its --label: none, one for all, or one per input in order.
    fn job_inputs(&self) -> Result<Vec<JobInput>> {
        let n = self.inputs.len();
        let label = |k: usize| {
            match self.label.len() {
            0 => Ok(None),
            1 => Ok(Some(self.label[0])),
            m if m == n => Ok(Some(self.label[k])),
            m => anyhow::bail!(
                "--label gives {m} labels for {n} inputs: give one for all, or one per input in order"
            ),
        }
        };
        (0..n)
            .map(|k| {
                Ok(JobInput {
                    path: self.inputs[k].clone(),
                    label: label(k)?,
                })
            })
            .collect()
    }

    /// Every path the run writes: the dataset(s) and their indexes.
    fn output_paths(&self) -> Result<Vec<(String, PathBuf)>> {
        let datasets = match &self.split {
            Some(s) => SplitPlan::parse(s, self.seed)?
                .names()
                .iter()
                .map(|n| {
                    (
                        format!("the {n} split of -o"),
                        split_output(&self.output, n),
                    )
                })
                .collect(),
            None => vec![("-o".to_string(), self.output.clone())],
        };
        let mut all = Vec::new();
        for (what, path) in datasets {
            let index = luminome_io::token_dataset::index_path_for(&path);
            all.push((what.clone(), path));
            all.push((format!("the index of {what}"), index));
        }
        Ok(all)
    }
}

/// What `--tokenizer` names: a tokenizer.json, or a published checkpoint's own tokenizer.
enum PublishedTokenizer {
    Json(PathBuf),
    Esm(TokenizerInfo),
}

/// `--tokenizer`: a tokenizer.json, or a published checkpoint (a folder in the Hugging Face
/// layout, or hf:ORG/NAME) whose tokenizer is taken — its tokenizer.json, or the vocab.txt of
/// an EsmTokenizer (Nucleotide Transformer) — so data for a model is made with that model's own
/// vocabulary.
fn published_tokenizer(arg: &std::path::Path) -> Result<PublishedTokenizer> {
    let name = arg.to_string_lossy();
    if !(arg.is_dir() || name.starts_with("hf:")) {
        return Ok(PublishedTokenizer::Json(arg.to_path_buf()));
    }
    let ck = luminome_cli::hub::open_checkpoint(&name)?;
    if let Some(info) = ck.esm_tokenizer()? {
        return Ok(PublishedTokenizer::Esm(info));
    }
    let file = ck.dir.join("tokenizer.json");
    if !file.is_file() {
        anyhow::bail!(
            "{name}: no tokenizer.json (or EsmTokenizer vocab.txt) in {}",
            ck.dir.display()
        );
    }
    Ok(PublishedTokenizer::Json(file))
}

/// The scheme (and tokenizer.json, [CLS]/[SEP] framing) recorded in a dataset or checkpoint.
fn like_scheme(like: &std::path::Path) -> Result<(Scheme, Option<String>, bool, bool)> {
    let t = luminome_io::token_dataset::tokenizer_of(like)
        .with_context(|| format!("--like {}", like.display()))?;
    let (scheme, json) = match (t.scheme, t.k, t.kmer_step) {
        (TokenizerScheme::Nucleotide, _, _) => (Scheme::Nucleotide, None),
        (TokenizerScheme::Kmer, Some(k), Some(1)) => {
            (Scheme::kmer(k, KmerMode::Overlapping)?, None)
        }
        (TokenizerScheme::Kmer, Some(k), Some(step)) if step == k => {
            (Scheme::kmer(k, KmerMode::NonOverlapping)?, None)
        }
        (TokenizerScheme::Hf, _, _) => {
            let json = t.hf_tokenizer_json.clone().with_context(|| {
                format!(
                    "{}: its hf tokenizer has no tokenizer.json recorded",
                    like.display()
                )
            })?;
            let scheme = Scheme::hf_from_json(&json)
                .with_context(|| format!("the tokenizer recorded in {}", like.display()))?;
            (scheme, Some(json))
        }
        (TokenizerScheme::EsmVocab, _, _) => (
            Scheme::esm_vocab(t.clone())
                .with_context(|| format!("the tokenizer recorded in {}", like.display()))?,
            None,
        ),
        _ => anyhow::bail!(
            "{}: a tokenizer this version cannot remake ({})",
            like.display(),
            t.describe()
        ),
    };
    // The remade tokenizer must give the recorded vocabulary, or the ids would not match.
    let remade = scheme.info(t.add_cls, t.add_sep, json.clone());
    if !remade.same_tokenization(&t) {
        anyhow::bail!(
            "{}: its tokenizer ({}) is not the one this version makes for those settings",
            like.display(),
            t.describe()
        );
    }
    Ok((scheme, json, t.add_cls, t.add_sep))
}

/// Parses nothing: runs the job for already-parsed arguments.
pub fn run(args: &Args) -> Result<Summary> {
    let mut inputs: Vec<(&str, &std::path::Path)> = args
        .inputs
        .iter()
        .map(|p| ("the input", p.as_path()))
        .collect();
    if let Some(r) = &args.reference {
        inputs.push(("--reference", r.as_path()));
    }
    let outputs = args.output_paths()?;
    let outputs: Vec<(&str, &std::path::Path)> = outputs
        .iter()
        .map(|(w, p)| (w.as_str(), p.as_path()))
        .collect();
    luminome_io::atomic::check_outputs_distinct(&outputs, &inputs)?;
    luminome_io::atomic::check_extension(
        "-o",
        &args.output,
        luminome_io::atomic::OutputKind::Safetensors,
    )?;
    let job = args.job()?;
    if args.format == InputFormat::Pairs {
        if job.inputs.len() > 1 || job.split.is_some() {
            anyhow::bail!("--format pairs reads one table, without --split");
        }
        return crate::pairs::run(
            &job,
            &crate::pairs::PairsOptions {
                query_column: args.query_column.clone(),
                passage_column: args.passage_column.clone(),
                query_id_column: args.query_id_column.clone(),
                passage_id_column: args.passage_id_column.clone(),
                text: args.text,
            },
        );
    }
    if args.text {
        anyhow::bail!("--text is for --format pairs");
    }
    if args.shard.is_some() || !args.gather.is_empty() {
        return run_sharded(args, job);
    }
    crate::pipeline::run(&job)
}

/// `--shard I/N` (one part) or `--gather PARTS` (the dataset of the whole run).
fn run_sharded(args: &Args, mut job: TokenizeJob) -> Result<Summary> {
    if job.split.is_some() {
        anyhow::bail!("--split shares records out by a shuffle of the whole input: tokenize with --split in one job, or shard without it");
    }
    let identity = crate::shard::run_identity(args, &job)?;
    if let Some(spec) = args.shard {
        job.part = Some(crate::shard::PartOf { spec, identity });
        return crate::pipeline::run(&job);
    }
    let parts: Vec<(&str, &std::path::Path)> = args
        .gather
        .iter()
        .map(|p| ("--gather", p.as_path()))
        .collect();
    luminome_io::atomic::check_outputs_distinct(&[("-o", args.output.as_path())], &parts)?;
    // The dataset records the command one run would have: this one without --gather PARTS.
    luminome_cli::record_command_without(luminome_cli::shard::is_gather_arg);
    job.command_line = luminome_cli::command_line();
    crate::pipeline::gather(&job, &args.gather, &identity)
}
