//! A run's inputs: the format of each, whether they carry labels, reading one into units, and
//! `--split`'s first pass over them.

use anyhow::{bail, Result};

use crate::bases::ChangeCounts;
use crate::pipeline::{InputFormat, TokenizeJob};
use crate::source::{self, Cut, Message, SourceOptions};

pub(crate) fn detect_format(path: &std::path::Path) -> InputFormat {
    let name = luminome_io::compress::format_name(path);
    if [".csv", ".tsv", ".txt", ".tab"]
        .iter()
        .any(|e| name.ends_with(e))
    {
        InputFormat::Table
    } else if [".bed", ".narrowpeak", ".broadpeak"]
        .iter()
        .any(|e| name.ends_with(e))
    {
        InputFormat::Bed
    } else {
        InputFormat::Fastx
    }
}
/// The format of each input (`--format auto`: from its name).
pub(crate) fn input_formats(job: &TokenizeJob) -> Result<Vec<InputFormat>> {
    let mut formats = Vec::with_capacity(job.inputs.len());
    for input in &job.inputs {
        let format = match job.format {
            InputFormat::Auto => detect_format(&input.path),
            f => f,
        };
        match format {
            InputFormat::Pairs => bail!("internal: pair tables are tokenized by crate::pairs::run"),
            InputFormat::Bed if job.source.reference.is_none() => {
                bail!("BED input {} needs --reference FASTA", input.path.display())
            }
            _ => formats.push(format),
        }
    }
    Ok(formats)
}

/// Whether the dataset has labels: every input must agree (a table through its label column,
/// a FASTA/BED file through its --label).
pub(crate) fn inputs_have_labels(job: &TokenizeJob, formats: &[InputFormat]) -> Result<bool> {
    // A --label the table would silently ignore (its labels are a column) is refused.
    if let Some(k) = (0..formats.len())
        .find(|&k| formats[k] == InputFormat::Table && job.inputs[k].label.is_some())
    {
        bail!(
            "{}: a table takes its labels from its --label-column (or none with --no-labels); --label labels FASTA/FASTQ/BED inputs, so give it only when no input is a table, or tokenize the table on its own",
            job.inputs[k].path.display()
        );
    }
    let labelled = |k: usize| match formats[k] {
        InputFormat::Table => job.source.table.label_column.is_some(),
        _ => job.inputs[k].label.is_some(),
    };
    let first = labelled(0);
    if let Some(k) = (1..formats.len()).find(|&k| labelled(k) != first) {
        let (with, without) = if first { (0, k) } else { (k, 0) };
        bail!(
            "{} has labels and {} has none: give every FASTA/BED input a --label (one per input, in order), or none",
            job.inputs[with].path.display(),
            job.inputs[without].path.display()
        );
    }
    Ok(first)
}

pub(crate) fn read_input(
    path: &std::path::Path,
    format: InputFormat,
    opts: &SourceOptions,
    changes: &mut ChangeCounts,
    sink: &mut source::Sink<'_>,
) -> Result<u64> {
    match format {
        InputFormat::Table => source::read_table(path, opts, changes, sink),
        InputFormat::Bed => source::read_bed(path, opts, changes, sink),
        _ => source::read_fastx(path, opts, changes, sink),
    }
}

/// `--split`'s first pass: every record's label, in input order, cutting no bases.
pub(crate) fn record_labels(
    job: &TokenizeJob,
    formats: &[InputFormat],
) -> Result<Vec<Option<i64>>> {
    let mut labels = Vec::new();
    for (input, &format) in job.inputs.iter().zip(formats) {
        crate::split::check_rereadable(&input.path)?;
        let opts = SourceOptions {
            cut: Cut::Truncate(0),
            constant_label: input.label,
            ..job.source.clone()
        };
        let mut sink = |m: Message| {
            if let Message::Units(units) = m {
                labels.extend(units.iter().map(|u| u.label));
            }
            Ok(())
        };
        read_input(
            &input.path,
            format,
            &opts,
            &mut ChangeCounts::default(),
            &mut sink,
        )?;
    }
    Ok(labels)
}
