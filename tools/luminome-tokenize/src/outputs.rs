//! The datasets a run writes: one, or one per `--split` share with each record's share.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use luminome_io::token_dataset::{TokenDatasetWriter, TokenDatasetWriterOptions};

use crate::inputs::{inputs_have_labels, record_labels};
use crate::pipeline::{InputFormat, TokenizeJob};
use crate::shard::{PartWriter, RowSink};
use crate::source::Unit;
use crate::split::split_output;
use luminome_io::token_dataset::TokenRow;

/// The datasets a run writes: one, or one per split with each record's split; or, with
/// `--shard`, its part.
pub(crate) struct Outputs {
    pub(crate) writers: Vec<TokenDatasetWriter>,
    part: Option<PartWriter>,
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
        if let Some(part) = &job.part {
            let writer = PartWriter::new(
                &job.output,
                part.spec,
                part.identity.clone(),
                job,
                has_labels,
                row_length,
            )?;
            return Ok(Outputs {
                writers: Vec::new(),
                part: Some(writer),
                paths: vec![job.output.clone()],
                names: vec![String::new()],
                assignment: None,
            });
        }
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
            part: None,
            paths,
            names,
            assignment,
        })
    }

    /// Writes a unit's row: to its part, or to the dataset of its record.
    pub(crate) fn push(&mut self, unit: &Unit, row: TokenRow<'_>) -> Result<()> {
        match &mut self.part {
            Some(part) => part.push(row, unit.serial),
            None => self.writer_for(unit)?.push(row),
        }
    }

    /// Ends a streamed record: every writer holding its rows' index lines gets its length.
    pub(crate) fn end_record(&mut self, seq_length: u64) -> Result<()> {
        if let Some(part) = &mut self.part {
            part.end_record(seq_length)?;
        }
        for w in &mut self.writers {
            w.end_record(seq_length)?;
        }
        Ok(())
    }

    /// The writer of a unit's record.
    fn writer_for(&mut self, unit: &Unit) -> Result<&mut TokenDatasetWriter> {
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
        self.part.as_ref().map_or(0, PartWriter::rows)
            + self.writers.iter().map(|w| w.len()).sum::<u64>()
    }

    /// Commits every dataset, once none of them is empty; or the part (which may be empty:
    /// the run had fewer blocks of units than parts).
    pub(crate) fn finish(self, records: u64, units: u64) -> Result<Vec<(String, u64)>> {
        if let Some(part) = self.part {
            part.finish(units, records)?;
            return Ok(Vec::new());
        }
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

/// The gather writes the parts' rows as a one-job run writes its units' rows (no `--split`).
impl RowSink for Outputs {
    fn push(&mut self, row: TokenRow<'_>) -> Result<()> {
        self.writers[0].push(row)
    }
}
