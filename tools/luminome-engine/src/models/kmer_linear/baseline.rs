//! The k-mer floor as the baseline of every token-classification run (`luminome-train classify`
//! and `bag-of-tokens`): fitted after training on the same training and dev sets, saved as a
//! checkpoint (`kmer_floor.safetensors`, usable as an ensemble member) and reported beside the
//! model (`kmer_floor.tsv`).

use std::collections::BTreeMap;
use std::io::Write;

use anyhow::{Context, Result};
use luminome_metrics::ClassificationMetrics;

use super::select::KmerSearch;
use super::setup::KmerFloor;
use crate::models::token::{Baseline, BaselineRun};

impl Baseline for KmerSearch {
    /// Fits the floor on the training set (chosen on dev) and writes `kmer_floor.tsv` (metric,
    /// set, model, kmer_floor) beside the model's own dev and test metrics; says so on stderr
    /// when the model does worse than the floor. Skipped for tokens that do not stand for fixed
    /// bases (BPE).
    fn report(&self, run: &BaselineRun) -> Result<()> {
        let (train, dev) = (run.train, run.dev);
        let quiet = run.quiet;
        if !train.tokenizer().scheme.has_base_spans() {
            if !quiet {
                eprintln!(
                    "k-mer floor: skipped ({} tokens do not stand for fixed bases)",
                    train.tokenizer().scheme
                );
            }
            return Ok(());
        }
        let floor = KmerFloor::new(train, dev, run.label_values, self, |_| {})
            .context("fitting the k-mer floor (--no-kmer-floor skips it)")?;
        // Saved as a checkpoint luminome-predict takes, alone or as an ensemble member: the
        // documented seeds-plus-floor ensemble fits it once (the other seeds: --no-kmer-floor).
        let mut sources = vec![train.path().display().to_string()];
        sources.push(dev.path().display().to_string());
        super::setup::write_checkpoint(
            &floor.fit,
            &run.paths.dir.join("kmer_floor.safetensors"),
            train,
            sources,
            "luminome-train classify (k-mer floor)",
            &luminome_cli::command_line(),
        )?;
        let floor_dev = floor.score(dev)?;
        let floor_test = run.test.map(|t| floor.score(t)).transpose()?;
        let dest = run.paths.dir.join("kmer_floor.tsv");
        let mut w = luminome_io::atomic::AtomicWriter::create(&dest)?;
        writeln!(w, "metric\tset\tmodel\tkmer_floor")?;
        let mut lines = |set: &str, m: &ClassificationMetrics, f: &ClassificationMetrics| {
            let fm: BTreeMap<String, String> = f.rows().into_iter().collect();
            for (k, v) in m.rows() {
                if let Some(fv) = fm.get(&k) {
                    writeln!(w, "{k}\t{set}\t{v}\t{fv}")?;
                }
            }
            std::io::Result::Ok(())
        };
        lines("dev", run.model_dev, &floor_dev)?;
        if let (Some(m), Some(f)) = (run.model_test, &floor_test) {
            lines("test", m, f)?;
        }
        let cfg = &floor.fit.config;
        writeln!(w, "floor_k\tall\t\t{}-{}", cfg.k_min, cfg.k_max)?;
        writeln!(w, "floor_l2\tall\t\t{:e}", cfg.l2)?;
        w.commit()?;
        // Where the floor wins on dev, the line names the checkpoint to predict with: a user who
        // follows the run's "next:" command would otherwise use the weaker model.
        let verdict = if run.model_dev.mcc < floor_dev.mcc {
            format!(
                "the model does WORSE than the k-mer floor on dev; predict with the floor instead: luminome-predict --checkpoint {}",
                run.paths.dir.join("kmer_floor.safetensors").display()
            )
        } else {
            "the model beats the k-mer floor on dev".to_string()
        };
        if !quiet || run.model_dev.mcc < floor_dev.mcc {
            eprintln!(
                "k-mer floor (k {}-{}, l2 {:e}): dev mcc {:.4} vs this model's {:.4}{}: {verdict}",
                cfg.k_min,
                cfg.k_max,
                cfg.l2,
                floor_dev.mcc,
                run.model_dev.mcc,
                match (&floor_test, run.model_test) {
                    (Some(f), Some(m)) => format!("; test mcc {:.4} vs {:.4}", f.mcc, m.mcc),
                    _ => String::new(),
                }
            );
        }
        Ok(())
    }
}
