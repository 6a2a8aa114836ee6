//! `luminome-mask-pairs`: two-strand masked-LM examples with the same positions masked on both
//! strands (the bi-strand model's input; `luminome_io::pair_dataset` is the format).
//!
//! - [`args`]: the command line.
//! - [`sequences`]: a sequence and its complement; paired FASTA files or records.
//! - [`variants`]: windows centred on the SNVs of a VCF/BCF or a CHROM POS ID REF ALT table, or
//!   on every base of BED intervals (`--saturate`).
//! - [`encode`]: bases to ids, complements, masking and writing one pair.
//!
//! Memory is bounded by one window (one record pair for paired inputs); nothing appears at the
//! output path unless the whole run succeeds.

pub mod args;
pub mod encode;
pub mod sequences;
pub mod variants;

use std::time::Instant;

use anyhow::{bail, Context, Result};
use luminome_io::masking::PairMasking;
use luminome_io::pair_dataset::{
    MaskMode, PairDatasetMeta, PairDatasetWriter, PairMaskingInfo, Pairing,
};
use luminome_io::token_dataset::TokenizerInfo;

use crate::args::{Args, MaskArg};
use crate::encode::{BaseVocab, PairSink};
use crate::sequences::{Counts, WindowSpec};
use crate::variants::VariantOptions;

/// What a run wrote.
#[derive(Debug, Clone)]
pub struct Summary {
    pub records_written: u64,
    pub counts: Counts,
}

fn check_args(a: &Args) -> Result<()> {
    let sites = variant_input(a).is_some();
    if a.fasta.is_none() && a.fasta_a.is_none() && a.paired.is_none() && !sites {
        bail!("nothing to read: give --fasta, --fasta-a/--fasta-b, --paired or --reference with --variants or --saturate");
    }
    if a.reference.is_some() && !sites {
        bail!("--reference is read with --variants or --saturate");
    }
    if a.window < 2 || a.window > 1 << 20 {
        bail!(
            "--window must be between 2 and 1048576 bases, got {}",
            a.window
        );
    }
    if let Some(s) = a.stride {
        if s == 0 || s > 1 << 30 {
            bail!("--stride must be between 1 and 1073741824 bases, got {s}");
        }
    }
    if !(a.mask_fraction > 0.0 && a.mask_fraction < 1.0) {
        bail!("--mask-fraction must be in (0, 1), got {}", a.mask_fraction);
    }
    if !(0.0..=1.0).contains(&a.max_n_fraction) {
        bail!(
            "--max-n-fraction must be in [0, 1], got {}",
            a.max_n_fraction
        );
    }
    if a.mask == Some(MaskArg::VariantSite) && !sites {
        bail!(
            "--mask variant-site needs variant windows (--reference with --variants or --saturate)"
        );
    }
    if !a.keep_info.is_empty() && a.variants.is_none() {
        bail!("--keep-info needs --variants");
    }
    let index = luminome_io::pair_dataset::index::pair_index_path(&a.output);
    let inputs: Vec<(&str, &std::path::Path)> = [
        ("--fasta", &a.fasta),
        ("--fasta-a", &a.fasta_a),
        ("--fasta-b", &a.fasta_b),
        ("--paired", &a.paired),
        ("--reference", &a.reference),
        ("--variants", &a.variants),
        ("--saturate", &a.saturate),
    ]
    .into_iter()
    .filter_map(|(f, p)| p.as_ref().map(|p| (f, p.as_path())))
    .collect();
    luminome_io::atomic::check_outputs_distinct(
        &[
            ("-o", a.output.as_path()),
            ("the index of -o", index.as_path()),
        ],
        &inputs,
    )
}

/// `--variants` or `--saturate`, if either.
fn variant_input(a: &Args) -> Option<variants::VariantInput<'_>> {
    match (&a.variants, &a.saturate) {
        (Some(v), _) => Some(variants::VariantInput::File(v)),
        (None, Some(b)) => Some(variants::VariantInput::Saturate(b)),
        (None, None) => None,
    }
}

/// The masking mode (variant site for variants, random otherwise, unless `--mask`) and the
/// pairing (complement strands for one FASTA, the given pairs for two or a paired file,
/// `--pairing` for variants).
fn mask_and_pairing(a: &Args) -> (MaskMode, Pairing) {
    let variants = variant_input(a).is_some();
    let mode = match a.mask.unwrap_or(if variants {
        MaskArg::VariantSite
    } else {
        MaskArg::Random
    }) {
        MaskArg::Random => MaskMode::Random,
        MaskArg::VariantSite => MaskMode::VariantSite,
    };
    let pairing = if variants {
        a.pairing
    } else if a.fasta.is_some() {
        Pairing::Complement
    } else {
        Pairing::Given
    };
    (mode, pairing)
}

/// Reads the input the flags name and pushes its window pairs to `sink`; the sources read.
fn write_pairs(
    a: &Args,
    threads: usize,
    pairing: Pairing,
    sink: &mut PairSink,
    counts: &mut Counts,
) -> Result<Vec<String>> {
    let spec = WindowSpec {
        window: a.window,
        stride: a.stride.unwrap_or(a.window),
        max_n_fraction: a.max_n_fraction,
    };
    let mut sources = Vec::new();
    if let Some(f) = &a.fasta {
        sources.push(f.display().to_string());
        sequences::complement_windows(f, threads, &spec, sink, counts)?;
    } else if let (Some(fa), Some(fb)) = (&a.fasta_a, &a.fasta_b) {
        sources.extend([fa.display().to_string(), fb.display().to_string()]);
        sequences::paired_files(fa, fb, threads, &spec, sink, counts)?;
    } else if let Some(p) = &a.paired {
        sources.push(p.display().to_string());
        sequences::paired_records(p, threads, &spec, sink, counts)?;
    } else if let (Some(r), Some(input)) = (&a.reference, variant_input(a)) {
        sources.extend([r.display().to_string(), input.source()]);
        let opts = VariantOptions {
            window: a.window,
            pairing,
            ref_mismatch: a.ref_mismatch,
            contig_ends: a.contig_ends,
            chrom_names: a.chrom_names,
        };
        variants::variant_windows(r, input, &a.keep_info, threads, &opts, sink, counts)?;
    }
    Ok(sources)
}

/// Runs the command.
pub fn run(a: &Args) -> Result<Summary> {
    let started = Instant::now();
    check_args(a)?;
    luminome_io::atomic::check_extension(
        "-o",
        &a.output,
        luminome_io::atomic::OutputKind::Safetensors,
    )?;
    let threads = luminome_cli::thread_count(a.threads);
    let (mode, pairing) = mask_and_pairing(a);
    let tokenizer = match &a.like {
        Some(like) => luminome_cli::hub::open_checkpoint(like)?
            .tokenizer()
            .with_context(|| format!("--like {like}"))?,
        None => TokenizerInfo::nucleotide(false, false),
    };
    let vocab = BaseVocab::of(&tokenizer).with_context(|| {
        format!(
            "the vocabulary of {}",
            a.like.as_deref().unwrap_or("the bi-strand models")
        )
    })?;
    let mut sink = PairSink {
        writer: PairDatasetWriter::create(a.output.clone(), a.window, &a.keep_info)?,
        tokenizer: tokenizer.clone(),
        vocab,
        masking: PairMasking {
            mode,
            fraction: a.mask_fraction,
            bert_replacement: a.bert_replacement,
            complement: pairing == Pairing::Complement,
        },
        seed: a.seed,
    };
    let mut counts = Counts::new();
    let sources = write_pairs(a, threads, pairing, &mut sink, &mut counts)?;
    let written = sink.writer.len();
    if written == 0 {
        bail!(
            "{}: no pairs to write{}",
            sources.join(", "),
            if counts.is_empty() {
                " (no sequence read)".to_string()
            } else {
                format!(
                    " (counts: {})",
                    counts
                        .iter()
                        .map(|(k, v)| format!("{k} {v}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }
        );
    }
    let meta = PairDatasetMeta {
        kind: String::new(),
        format_version: 0,
        tokenizer,
        pairing,
        masking: PairMaskingInfo {
            mode,
            fraction: a.mask_fraction,
            bert_replacement: a.bert_replacement,
            seed: a.seed,
        },
        window: a.window,
        num_records: 0,
        coordinates: "0-based half-open".into(),
        index_file: String::new(),
        counts: counts.clone(),
        info_keys: a.keep_info.clone(),
        sources,
        tool: "luminome-mask-pairs".into(),
        tool_version: luminome_cli::VERSION.into(),
        command_line: luminome_cli::command_line(),
    };
    sink.writer.finish(meta)?;
    if !a.quiet {
        eprintln!(
            "luminome-mask-pairs: {written} pairs of {} bases ({} pairing, {} masking) -> {} in {:.1}s",
            a.window,
            pairing.name(),
            match mode {
                MaskMode::Random => format!("{} random", a.mask_fraction),
                MaskMode::VariantSite => "variant-site".into(),
            },
            a.output.display(),
            started.elapsed().as_secs_f64()
        );
        for (k, v) in &counts {
            eprintln!("  {k}\t{v}");
        }
    }
    Ok(Summary {
        records_written: written,
        counts,
    })
}
