//! `--format pairs`: a CSV/TSV of (query, positive passage) pairs → a retrieval pairs dataset
//! (`luminome_io::retrieval_pairs`) for dual encoders.
//!
//! Each side is tokenized like a table row ([CLS]/[SEP] framing, `--max-length` with
//! `--overflow truncate|error`): DNA cleaned to ACGTN, or, with `--text`, any UTF-8 text through
//! a `tokenizer.json`. Rows whose query (passage) has the same tokens share a group number.
//! Refused, naming the line: a missing column, an empty side, an id (query_id/passage_id column)
//! given to two different texts. A row that repeats an earlier pair exactly (the same query and
//! passage tokens) adds nothing and would put a copy of a positive among its own negatives: it is
//! left out, counted, and the first such line named on stderr. A query with several positive
//! passages is kept (counted): training keeps its rows in different batches and evaluation scores
//! all its passages as relevant.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::Path;

use anyhow::{bail, Context, Result};
use luminome_io::retrieval_pairs::{RetrievalIndexRow, RetrievalPairsMeta, RetrievalPairsWriter};
use luminome_io::InputError;

use crate::bases::{self, ChangeCounts};
use crate::pipeline::{encode_row, Overflow, RcMode, Summary, TokenizeJob};
use crate::scheme::Scheme;

/// The columns of a pairs table and how its sides are read.
#[derive(Debug, Clone)]
pub struct PairsOptions {
    pub query_column: String,
    pub passage_column: String,
    /// Used when the table has it: names each query (default `q<row>`).
    pub query_id_column: String,
    /// Used when the table has it: names each passage (default `p<group>`).
    pub passage_id_column: String,
    /// Sides are text for a `tokenizer.json`, not DNA.
    pub text: bool,
}

/// A 128-bit fingerprint of a token row (two SipHash streams): the group key.
fn fingerprint(ids: &[u32]) -> u128 {
    let half = |salt: u8| {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        salt.hash(&mut h);
        ids.hash(&mut h);
        h.finish()
    };
    (u128::from(half(1)) << 64) | u128::from(half(2))
}

/// Group numbers in order of first appearance.
#[derive(Default)]
struct Groups {
    by_key: HashMap<u128, u32>,
}

impl Groups {
    fn get(&mut self, ids: &[u32]) -> u32 {
        let n = self.by_key.len() as u32;
        *self.by_key.entry(fingerprint(ids)).or_insert(n)
    }
}

/// Which text an id names, and where it was first seen.
#[derive(Default)]
struct Ids {
    by_id: HashMap<String, (u32, u64)>,
}

impl Ids {
    fn check(&mut self, path: &Path, id: &str, group: u32, line: u64, what: &str) -> Result<()> {
        match self.by_id.entry(id.to_string()) {
            Entry::Occupied(e) if e.get().0 != group => Err(InputError::line(
                path,
                line,
                format!(
                    "{what} id {id:?} was given to another {what} on line {}; an id must name one {what}",
                    e.get().1
                ),
            )
            .into()),
            Entry::Occupied(_) => Ok(()),
            Entry::Vacant(v) => {
                v.insert((group, line));
                Ok(())
            }
        }
    }
}

fn column(headers: &csv::ByteRecord, name: &str) -> Option<usize> {
    headers.iter().position(|h| h == name.as_bytes())
}

/// Tokenizes one side of a pair (unpadded ids with the job's framing).
fn side_ids(
    job: &TokenizeJob,
    text: bool,
    raw: &[u8],
    changes: &mut ChangeCounts,
    origin: &str,
    err: &dyn Fn(String) -> InputError,
) -> Result<(Vec<u32>, bool)> {
    let (mut b, mut s) = (Vec::with_capacity(raw.len()), Vec::new());
    if text {
        std::str::from_utf8(raw).map_err(|e| err(format!("not UTF-8 text: {e}")))?;
        b.extend_from_slice(raw);
    } else {
        bases::clean(raw, job.source.policy, &mut b, &mut s, changes)
            .map_err(|bad| err(bad.describe()))?;
    }
    let (ids, _, truncated) = encode_row(job, &b, &s, None, origin)?;
    Ok((ids, truncated))
}

/// Reads the pairs table of `job.input` and writes its retrieval pairs dataset.
pub fn run(job: &TokenizeJob, opts: &PairsOptions) -> Result<Summary> {
    let start = std::time::Instant::now();
    check_job(job, opts)?;
    let path = &job.inputs[0].path;
    let (mut reader, cols) = open_table(path, opts)?;
    let tokenizer = job
        .scheme
        .info(job.add_cls, job.add_sep, job.hf_json.clone());
    let mut writer = RetrievalPairsWriter::create(job.output.clone(), &tokenizer)?;
    let mut tally = PairTally::default();
    let mut summary = Summary::default();
    let mut record = csv::ByteRecord::new();
    let mut row = 0u64;
    loop {
        let line_guess = row + 2;
        let more = reader
            .read_byte_record(&mut record)
            .map_err(|e| luminome_io::seqtable::csv_error(path, e, line_guess))?;
        if !more {
            break;
        }
        row += 1;
        let line = record.position().map_or(line_guess, |p| p.line());
        let err = |m: String| InputError::line(path, line, m);
        let origin = format!("{}: line {line}", path.display());
        let field = |i: usize| record.get(i).unwrap_or(b"");
        let mut sides = [(Vec::new(), false), (Vec::new(), false)];
        for (k, (col, what)) in [(cols.query, "query"), (cols.passage, "passage")]
            .into_iter()
            .enumerate()
        {
            let raw = field(col);
            if raw.iter().all(|b| b.is_ascii_whitespace()) {
                return Err(err(format!("the {what} is empty")).into());
            }
            sides[k] = side_ids(job, opts.text, raw, &mut summary.changed, &origin, &err)
                .with_context(|| format!("{origin}: the {what}"))?;
            summary.bases += raw.len() as u64;
            tally.truncated[k] += u64::from(sides[k].1);
        }
        let [(q, _), (p, _)] = sides;
        let Some(groups) = tally.groups(&q, &p, path, line, job.quiet) else {
            continue;
        };
        let id = |col: Option<usize>, fallback: String| match col {
            Some(c) => row_id(field(c), &err),
            None => Ok(fallback),
        };
        let query_id = id(cols.query_id, format!("q{row}"))?;
        let passage_id = id(cols.passage_id, format!("p{}", groups[1] + 1))?;
        if cols.query_id.is_some() {
            tally
                .query_ids
                .check(path, &query_id, groups[0], line, "query")?;
        }
        if cols.passage_id.is_some() {
            tally
                .passage_ids
                .check(path, &passage_id, groups[1], line, "passage")?;
        }
        let index = RetrievalIndexRow {
            record: 0,
            query_id,
            passage_id,
            line,
        };
        writer.push(&q, &p, groups, index)?;
    }
    if row == 0 {
        return Err(InputError::file(path, "the table has a header but no pairs").into());
    }
    let written = writer.len();
    writer.finish(RetrievalPairsMeta {
        kind: String::new(),
        format_version: 0,
        tokenizer,
        text: opts.text,
        num_records: 0,
        distinct_queries: 0,
        distinct_passages: 0,
        query_length: 0,
        passage_length: 0,
        index_file: String::new(),
        counts: tally.counts(),
        sources: vec![path.display().to_string()],
        tool: "luminome-tokenize".into(),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        command_line: job.command_line.clone(),
    })?;
    summary.input_records = row;
    summary.rows = written;
    summary.truncated = tally.truncated.iter().sum();
    if !job.quiet {
        let [truncated_q, truncated_p] = tally.truncated;
        eprintln!(
            "luminome-tokenize: {written} pairs of {row} rows ({} repeated pairs left out; {} distinct queries, {} distinct passages; {} queries with several positives; truncated: {truncated_q} queries, {truncated_p} passages) → {} in {:.1}s",
            tally.duplicates,
            tally.query_groups.by_key.len(),
            tally.passage_groups.by_key.len(),
            tally.several,
            job.output.display(),
            start.elapsed().as_secs_f64()
        );
        if summary.changed.total() > 0 {
            eprintln!(
                "luminome-tokenize: letters read as N: {}",
                summary.changed.summary()
            );
        }
    }
    Ok(summary)
}

/// Refuses the tokenize flags a pairs table does not take.
fn check_job(job: &TokenizeJob, opts: &PairsOptions) -> Result<()> {
    if opts.text && !matches!(job.scheme, Scheme::Hf(..)) {
        bail!("--text reads each side as text: it needs --scheme hf --tokenizer tokenizer.json");
    }
    if job.overflow == Overflow::Window || job.window.is_some() || job.stride.is_some() {
        bail!("--format pairs tokenizes whole sides: --overflow window, --window and --stride do not apply (use --max-length with --overflow truncate or error)");
    }
    if job.rc != RcMode::None || job.soft_mask || job.max_n.is_some() || job.shard_records.is_some()
    {
        bail!("--rc, --soft-mask, --max-n and --shard-records do not apply to --format pairs");
    }
    if let Some(l) = job.max_length {
        let specials = usize::from(job.add_cls) + usize::from(job.add_sep);
        if l <= specials {
            bail!("--max-length {l} leaves no room for sequence tokens");
        }
    }
    Ok(())
}

/// The columns a pairs table's rows are read from.
struct PairColumns {
    query: usize,
    passage: usize,
    /// The id columns, when the table has them.
    query_id: Option<usize>,
    passage_id: Option<usize>,
}

type TableReader = csv::Reader<Box<dyn std::io::BufRead + Send>>;

/// The pairs table's reader, past its header, and its columns (a missing side is refused).
fn open_table(path: &Path, opts: &PairsOptions) -> Result<(TableReader, PairColumns)> {
    let (inner, _) = luminome_io::compress::open(path, 1)?;
    let mut reader = csv::ReaderBuilder::new()
        .delimiter(luminome_io::seqtable::delimiter_for(path))
        .has_headers(true)
        .from_reader(inner);
    let headers = reader
        .byte_headers()
        .map_err(|e| luminome_io::seqtable::csv_error(path, e, 1))?
        .clone();
    let names: Vec<String> = headers
        .iter()
        .map(|h| String::from_utf8_lossy(h).into_owned())
        .collect();
    let find = |name: &str| -> Result<usize> {
        column(&headers, name).ok_or_else(|| {
            InputError::line(
                path,
                1,
                format!(
                    "no {name:?} column in the header (columns: {}); name the columns with --query-column and --passage-column",
                    names.join(", ")
                ),
            )
            .into()
        })
    };
    let cols = PairColumns {
        query: find(&opts.query_column)?,
        passage: find(&opts.passage_column)?,
        query_id: column(&headers, &opts.query_id_column),
        passage_id: column(&headers, &opts.passage_id_column),
    };
    Ok((reader, cols))
}

/// An id cell: trimmed, non-empty, without tab or line break.
fn row_id(cell: &[u8], err: &dyn Fn(String) -> InputError) -> Result<String> {
    let v = String::from_utf8_lossy(cell).trim().to_string();
    if v.is_empty() || v.contains(['\t', '\n', '\r']) {
        return Err(err(format!(
            "an id must be non-empty and hold no tab or line break, found {:?}",
            v.chars().take(60).collect::<String>()
        ))
        .into());
    }
    Ok(v)
}

/// What the pairs read so far add up to: the groups of queries and passages, the ids given to
/// them, repeated pairs, queries with several positives and truncated sides.
#[derive(Default)]
struct PairTally {
    query_groups: Groups,
    passage_groups: Groups,
    query_ids: Ids,
    passage_ids: Ids,
    /// Each (query group, passage group) pair and the line it was first on.
    seen_pairs: HashMap<(u32, u32), u64>,
    /// A query group's positive passage group (`u32::MAX` once it has several).
    positives: HashMap<u32, u32>,
    several: u64,
    duplicates: u64,
    /// Truncated queries and passages.
    truncated: [u64; 2],
}

impl PairTally {
    /// The groups of the pair `(q, p)` on `line`; `None` for a repeat of an earlier pair (left
    /// out and counted; the first repeat is named on stderr).
    fn groups(
        &mut self,
        q: &[u32],
        p: &[u32],
        path: &Path,
        line: u64,
        quiet: bool,
    ) -> Option<[u32; 2]> {
        let groups = [self.query_groups.get(q), self.passage_groups.get(p)];
        match self.seen_pairs.entry((groups[0], groups[1])) {
            Entry::Occupied(e) => {
                if self.duplicates == 0 && !quiet {
                    eprintln!(
                        "luminome-tokenize: warning: {}: line {line} repeats the pair on line {} (the same query and passage); repeated pairs are left out and counted",
                        path.display(),
                        e.get()
                    );
                }
                self.duplicates += 1;
                return None;
            }
            Entry::Vacant(v) => {
                v.insert(line);
            }
        }
        if let Some(&first) = self.positives.get(&groups[0]) {
            if first != groups[1] && first != u32::MAX {
                self.several += 1;
                self.positives.insert(groups[0], u32::MAX);
            }
        } else {
            self.positives.insert(groups[0], groups[1]);
        }
        Some(groups)
    }

    /// The counts written into the dataset's metadata.
    fn counts(&self) -> std::collections::BTreeMap<String, u64> {
        [
            ("truncated_queries", self.truncated[0]),
            ("truncated_passages", self.truncated[1]),
            ("queries_with_several_positives", self.several),
            ("repeated_pairs_left_out", self.duplicates),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }
}
