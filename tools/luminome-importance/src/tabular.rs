//! `luminome-importance` on tabular models: each sample's columns ranked by how much they moved
//! its prediction, and the global ranking over the scored samples (see
//! `luminome_engine::models::tabular::explain` for the three methods).
//!
//! TSV: `sample feature value importance rank`, per sample every column (or the `--top`),
//! largest |importance| first; `--ranking`: `feature mean_abs_importance mean_importance n rank`.

use std::io::Write;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use luminome_cli::progress_bar;
use luminome_engine::models::tabular::explain::{column_scores, ColumnMethod};
use luminome_engine::models::tabular::setup::predicted_class;
use luminome_engine::models::tabular::task::predict_probs;
use luminome_engine::models::tabular::{TabularArch, TabularInput, TabularModel};
use luminome_engine::parse_device;
use luminome_io::atomic::AtomicWriter;

use crate::args::{ImportanceArgs, Method};
use crate::rows::{self, RowRun};

pub fn run(args: &ImportanceArgs, started: Instant) -> Result<()> {
    let method = check_args(args)?;
    let device = parse_device(&args.runtime.device)?;
    let input = TabularInput::open(&args.checkpoint, &args.dataset, device.clone())?;
    let model = input.model()?;
    let schema = &model.config.schema;
    let fixed = fixed_target(args, &schema.classes)?;
    if method == ColumnMethod::Attention && matches!(model.config.arch, TabularArch::Mlp { .. }) {
        bail!(
            "{}: --method attention needs an FT-Transformer; this model is an MLP (use saliency or ig)",
            args.checkpoint.display()
        );
    }
    let mut records: Vec<usize> = (0..input.rows.n).collect();
    if let Some(n) = args.records {
        records.truncate(n);
    }
    let names: Vec<&str> = schema.columns.iter().map(|c| c.name.as_str()).collect();
    let cols: Vec<usize> = names
        .iter()
        .map(|n| input.table.require(n, "feature"))
        .collect::<std::result::Result<_, _>>()?;
    let f = names.len();
    let pass = args.batch_size.max(1);
    let explain = Explain {
        input: &input,
        model,
        method,
        fixed,
        pass,
    };
    let out = match rows::start(args, &records, pass, f, 0)? {
        RowRun::Explain {
            records: mine,
            part: Some(mut part),
        } => {
            explain.samples(mine, args.runtime.quiet, |r, s| part.push(r, s, &[]))?;
            part.commit()?;
            if !args.runtime.quiet {
                eprintln!(
                    "luminome-importance: {} samples (part {}), method {} → {} ({:.1}s)",
                    mine.len(),
                    args.shard.map(|s| s.to_string()).unwrap_or_default(),
                    args.method.name(),
                    args.output.display(),
                    started.elapsed().as_secs_f64()
                );
            }
            return Ok(());
        }
        RowRun::Explain {
            records: mine,
            part: None,
        } => {
            let mut out = Outputs::open(args, &input, &names, &cols)?;
            explain.samples(mine, args.runtime.quiet, |r, s| out.sample(r, s))?;
            out
        }
        RowRun::Gather => {
            let mut out = Outputs::open(args, &input, &names, &cols)?;
            rows::replay(args, &records, pass, (f, 0), |r, s, _| out.sample(r, s))?;
            out
        }
    };
    out.finish(args, records.len(), started)
}

/// The model and the class each sample is explained for.
struct Explain<'a> {
    input: &'a TabularInput,
    model: &'a TabularModel,
    method: ColumnMethod,
    fixed: Option<usize>,
    pass: usize,
}

impl Explain<'_> {
    /// Scores `records` in passes, handing each sample's column scores to `sample`.
    fn samples(
        &self,
        records: &[usize],
        quiet: bool,
        mut sample: impl FnMut(usize, &[f32]) -> Result<()>,
    ) -> Result<()> {
        let (model, input) = (self.model, self.input);
        let classes = model.config.schema.classes.len();
        let f = model.config.schema.columns.len();
        let device = &input.device;
        let bar = progress_bar(records.len() as u64, quiet);
        for chunk in records.chunks(self.pass) {
            let t = model.tensors(&input.rows, chunk, device)?;
            let targets: Vec<usize> = match self.fixed {
                Some(k) => vec![k; chunk.len()],
                None => {
                    let sub = input.rows.select(chunk);
                    let p = predict_probs(model, &sub, chunk.len(), device)?;
                    p.chunks(classes)
                        .map(|p| predicted_class(p, model.config.threshold))
                        .collect()
                }
            };
            let scores = column_scores(model, &t, &targets, self.method)?;
            for (i, &r) in chunk.iter().enumerate() {
                sample(r, &scores[i * f..(i + 1) * f])?;
            }
            bar.inc(chunk.len() as u64);
        }
        bar.finish_and_clear();
        Ok(())
    }
}

/// One job's TSV and column sums, written from each sample's scores in sample order.
struct Outputs<'a> {
    input: &'a TabularInput,
    names: &'a [&'a str],
    cols: &'a [usize],
    top: usize,
    tsv: AtomicWriter,
    sums: ColumnSums,
}

impl<'a> Outputs<'a> {
    fn open(
        args: &ImportanceArgs,
        input: &'a TabularInput,
        names: &'a [&'a str],
        cols: &'a [usize],
    ) -> Result<Self> {
        let f = names.len();
        let mut tsv = AtomicWriter::create(&args.output)?;
        writeln!(tsv, "sample\tfeature\tvalue\timportance\trank")?;
        Ok(Self {
            input,
            names,
            cols,
            top: args.top.unwrap_or(f).min(f),
            tsv,
            sums: ColumnSums::new(f),
        })
    }

    /// Sample (table row) `r`: its `--top` columns by |importance|, and the sums.
    fn sample(&mut self, r: usize, s: &[f32]) -> Result<()> {
        let mut order: Vec<usize> = (0..s.len()).collect();
        order.sort_by(|&a, &b| s[b].abs().total_cmp(&s[a].abs()).then(a.cmp(&b)));
        for (rank, &k) in order.iter().take(self.top).enumerate() {
            let value = self.input.table.column(self.cols[k])[r]
                .as_deref()
                .unwrap_or("NA");
            writeln!(
                self.tsv,
                "{}\t{}\t{value}\t{:.6e}\t{}",
                self.input.rows.ids[r],
                self.names[k],
                s[k],
                rank + 1
            )?;
        }
        self.sums.add(s);
        Ok(())
    }

    /// Writes `--ranking`, commits, and logs the top columns.
    fn finish(self, args: &ImportanceArgs, samples: usize, started: Instant) -> Result<()> {
        let Self {
            names, tsv, sums, ..
        } = self;
        let global = sums.ranking();
        let ranking = match &args.ranking {
            Some(p) => Some(sums.write_ranking(p, names, &global, samples)?),
            None => None,
        };
        tsv.commit()?;
        if let Some(w) = ranking {
            w.commit()?;
        }
        if !args.runtime.quiet {
            let n = samples as f64;
            eprintln!(
                "luminome-importance: {samples} samples, method {} → {} ({:.1}s); top columns: {}",
                args.method.name(),
                args.output.display(),
                started.elapsed().as_secs_f64(),
                global
                    .iter()
                    .take(5)
                    .map(|&k| format!("{} {:.3e}", names[k], sums.abs[k] / n))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        Ok(())
    }
}

/// The method as a tabular model takes it; the flags of other families refused.
fn check_args(args: &ImportanceArgs) -> Result<ColumnMethod> {
    let method = match args.method {
        Method::Saliency => ColumnMethod::Saliency,
        Method::Ig => ColumnMethod::IntegratedGradients {
            steps: args.ig_steps,
        },
        Method::Attention => ColumnMethod::Attention,
        Method::Gates | Method::Pooling | Method::Ism | Method::DeepLiftShap => bail!(
            "{}: --method {} is not for tabular models; they take saliency, ig or attention (FT-Transformer)",
            args.checkpoint.display(),
            args.method.name()
        ),
    };
    if args.bedgraph.is_some() || args.npz.is_some() {
        bail!(
            "{} is a tabular model: --bedgraph and --npz are for sequence and expression models; a tabular model's scores are per column (the TSV and --ranking)",
            args.checkpoint.display()
        );
    }
    if args.only_label.is_some() || args.subset.is_some() {
        bail!(
            "{} is a tabular model: --only-label and --subset are for sequence and expression models",
            args.checkpoint.display()
        );
    }
    if args.top == Some(0) {
        bail!("--top must be at least 1");
    }
    if let Some(r) = &args.ranking {
        luminome_io::atomic::check_output_dir(r)?;
    }
    Ok(method)
}

/// The class every sample is explained for: `--target`, the positive class of a binary model,
/// or `None` (each sample's predicted class).
fn fixed_target(args: &ImportanceArgs, classes: &[String]) -> Result<Option<usize>> {
    Ok(match &args.target {
        Some(t) => Some(classes.iter().position(|c| c == t).with_context(|| {
            format!(
                "--target {t}: not a class of the model in {} (its classes: {})",
                args.checkpoint.display(),
                classes.join(", ")
            )
        })?),
        None if classes.len() == 2 => Some(1),
        None => None,
    })
}

/// Each column's importance summed over the scored samples, and its |importance|.
struct ColumnSums {
    sum: Vec<f64>,
    abs: Vec<f64>,
}

impl ColumnSums {
    fn new(f: usize) -> Self {
        Self {
            sum: vec![0.0; f],
            abs: vec![0.0; f],
        }
    }

    fn add(&mut self, scores: &[f32]) {
        for (k, &v) in scores.iter().enumerate() {
            self.sum[k] += f64::from(v);
            self.abs[k] += f64::from(v.abs());
        }
    }

    /// Columns by mean |importance|, largest first (ties: column order).
    fn ranking(&self) -> Vec<usize> {
        let mut global: Vec<usize> = (0..self.abs.len()).collect();
        global.sort_by(|&a, &b| self.abs[b].total_cmp(&self.abs[a]).then(a.cmp(&b)));
        global
    }

    /// `--ranking`: the global ranking over `n` samples, uncommitted.
    fn write_ranking(
        &self,
        path: &std::path::Path,
        names: &[&str],
        global: &[usize],
        n: usize,
    ) -> Result<AtomicWriter> {
        let mut w = AtomicWriter::create(path)?;
        writeln!(w, "feature\tmean_abs_importance\tmean_importance\tn\trank")?;
        for (rank, &k) in global.iter().enumerate() {
            writeln!(
                w,
                "{}\t{:.6e}\t{:.6e}\t{n}\t{}",
                names[k],
                self.abs[k] / n as f64,
                self.sum[k] / n as f64,
                rank + 1
            )?;
        }
        Ok(w)
    }
}
