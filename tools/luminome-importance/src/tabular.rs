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
use luminome_engine::models::tabular::{TabularArch, TabularInput};
use luminome_engine::parse_device;
use luminome_io::atomic::AtomicWriter;

use crate::args::{ImportanceArgs, Method};

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
    let top = args.top.unwrap_or(f).min(f);
    let mut tsv = AtomicWriter::create(&args.output)?;
    writeln!(tsv, "sample\tfeature\tvalue\timportance\trank")?;
    let mut sums = ColumnSums::new(f);
    let bar = progress_bar(records.len() as u64, args.runtime.quiet);
    for chunk in records.chunks(args.batch_size.max(1)) {
        let t = model.tensors(&input.rows, chunk, &device)?;
        let targets: Vec<usize> = match fixed {
            Some(k) => vec![k; chunk.len()],
            None => {
                let sub = input.rows.select(chunk);
                let p = predict_probs(model, &sub, chunk.len(), &device)?;
                p.chunks(schema.classes.len())
                    .map(|p| predicted_class(p, model.config.threshold))
                    .collect()
            }
        };
        let scores = column_scores(model, &t, &targets, method)?;
        for (i, &r) in chunk.iter().enumerate() {
            let s = &scores[i * f..(i + 1) * f];
            let mut order: Vec<usize> = (0..f).collect();
            order.sort_by(|&a, &b| s[b].abs().total_cmp(&s[a].abs()).then(a.cmp(&b)));
            for (rank, &k) in order.iter().take(top).enumerate() {
                let value = input.table.column(cols[k])[r].as_deref().unwrap_or("NA");
                writeln!(
                    tsv,
                    "{}\t{}\t{value}\t{:.6e}\t{}",
                    input.rows.ids[r],
                    names[k],
                    s[k],
                    rank + 1
                )?;
            }
            sums.add(s);
        }
        bar.inc(chunk.len() as u64);
    }
    bar.finish_and_clear();
    let global = sums.ranking();
    let ranking = match &args.ranking {
        Some(p) => Some(sums.write_ranking(p, &names, &global, records.len())?),
        None => None,
    };
    tsv.commit()?;
    if let Some(w) = ranking {
        w.commit()?;
    }
    if !args.runtime.quiet {
        let n = records.len() as f64;
        eprintln!(
            "luminome-importance: {} samples, method {} → {} ({:.1}s); top columns: {}",
            records.len(),
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
