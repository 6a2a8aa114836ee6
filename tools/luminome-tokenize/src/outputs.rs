//! The datasets a run writes: one, or one per `--split` share with each record's share.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use luminome_io::token_dataset::{TokenDatasetWriter, TokenDatasetWriterOptions};

use crate::inputs::{inputs_have_labels, record_labels};
use crate::pipeline::{InputFormat, TokenizeJob};
use crate::source::Unit;
use crate::split::split_output;

/// The datasets a run writes: one, or one per split with each record's split.
pub(crate) struct Outputs {
    pub(crate) writers: Vec<TokenDatasetWriter>,
    pub(crate) paths: Vec<PathBuf>,
    names: Vec<String>,
    assignment: Option<Vec<u8>>,
}

impl Outputs {
    pub(crate) fn open(
        job: &TokenizeJob,
        formats: &[InputFormat],
        row_length: Option<usize>,
    ) -> Result<Self> {
        let has_labels = inputs_have_labels(job, formats)?;
        let mut sources: Vec<String> = job
            .inputs
            .iter()
            .map(|i| i.path.display().to_string())
            .collect();
        if let (true, Some(r)) = (formats.contains(&InputFormat::Bed), &job.source.reference) {
            sources.push(r.display().to_string());
        }
        let (names, assignment) = match &job.split {
            Some(plan) => {
                let names = plan.names().iter().map(|n| n.to_string()).collect();
                (names, Some(plan.assign(&record_labels(job, formats)?)))
            }
            None => (vec![String::new()], None),
        };
        let paths: Vec<PathBuf> = match &job.split {
            Some(_) => names.iter().map(|n| split_output(&job.output, n)).collect(),
            None => vec![job.output.clone()],
        };
        let writers = paths
            .iter()
            .map(|dest| {
                TokenDatasetWriter::new(TokenDatasetWriterOptions {
                    dest: dest.clone(),
                    tokenizer: job
                        .scheme
                        .info(job.add_cls, job.add_sep, job.hf_json.clone()),
                    max_length: row_length,
                    has_labels,
                    has_soft_mask: job.soft_mask,
                    shard_records: job.shard_records,
                    rc: job.rc.name().into(),
                    sources: sources.clone(),
                    tool: "luminome-tokenize".into(),
                    tool_version: env!("CARGO_PKG_VERSION").into(),
                    command_line: job.command_line.clone(),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Outputs {
            writers,
            paths,
            names,
            assignment,
        })
    }

    /// The writer of a unit's record.
    pub(crate) fn writer_for(&mut self, unit: &Unit) -> Result<&mut TokenDatasetWriter> {
        let k = match &self.assignment {
            Some(a) => *a.get(unit.record as usize).with_context(|| {
                format!(
                    "{}: the input changed while it was read (more records than on the first pass)",
                    unit.origin
                )
            })? as usize,
            None => 0,
        };
        Ok(&mut self.writers[k])
    }

    pub(crate) fn rows(&self) -> u64 {
        self.writers.iter().map(|w| w.len()).sum()
    }

    /// Commits every dataset, once none of them is empty.
    pub(crate) fn finish(self, records: u64) -> Result<Vec<(String, u64)>> {
        if self.assignment.is_some() {
            if let Some(k) = self.writers.iter().position(|w| w.is_empty()) {
                bail!(
                    "--split: the {} split got no rows ({records} records in all); give it a larger fraction, or more records",
                    self.names[k]
                );
            }
        }
        let rows: Vec<(String, u64)> = self
            .names
            .iter()
            .cloned()
            .zip(self.writers.iter().map(|w| w.len()))
            .collect();
        for w in self.writers {
            w.finish()?;
        }
        Ok(if self.assignment.is_some() {
            rows
        } else {
            Vec::new()
        })
    }
}
