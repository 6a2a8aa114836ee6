//! DeepLIFT/SHAP (`--method deepliftshap`) for CNN and transformer classifiers over single
//! nucleotides: each record explained against `--shuffles`
//! dinucleotide-shuffled copies of itself, as tangermeme's `deep_lift_shap` does by default.
//!
//! - References: the record's sequence tokens shuffled keeping its first and last token and the
//!   count of every pair of neighbours (N and any other token are symbols of their own, as
//!   tangermeme's `allow_N=True`); `[CLS]`, `[SEP]` and padding stay. Drawn from `--seed` and
//!   the record number alone, so a record gets the same references in any batch or shard.
//! - Each (record, reference) pair is one row of each half of a batch run under the engine's
//!   DeepLIFT rules (`luminome_engine::nn::deeplift`); the multipliers m reach the input
//!   embeddings (the CNN's one-hot bases, the transformer's token embeddings, before positions
//!   are added); e_b below is base b's embedding row.
//! - Per position, averaged over the references: the contribution (x − ref)·m, which sums over
//!   the record to f(x) − mean f(ref) (completeness; the largest gap is reported), and the
//!   hypothetical contribution of each base b, (e_b − ref)·m — what TF-MoDISco reads.
//! - Cost: 2 × `--shuffles` rows per record, one forward and one backward pass; records go
//!   through in passes of at most [`MAX_PASS_ROWS`] rows (whole records, at least one, at most
//!   `--batch-size`).
//!
//! f is the output every method explains: logit[target] − mean_c logit[c].

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use candle_core::{DType, Tensor, Var, D};
use luminome_cli::progress_bar;
use luminome_engine::input::tokens::real_length;
use luminome_engine::models::token::TokenClassifier;
use luminome_engine::nn::deeplift;
use luminome_io::npz::{NpyArraySpec, NpyElem};
use luminome_io::token_dataset::{TokenizerInfo, TokenizerScheme};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::args::ImportanceArgs;
use crate::selection::{choose_target, output_weights, select_records, widest_row, Target};
use crate::sink::{ArrayRows, RecordOutputs};
use crate::Input;

const ACGT: [&str; 4] = ["A", "C", "G", "T"];

/// Rows per forward and backward pass, at most (whole records, at least one): the rules keep
/// several tensors of every layer for the backward pass, and on a CPU passes of 40 rows ran
/// 1.6x faster than passes of 480 (whose intermediates, 1.7 GB, no longer fit the caches;
/// docs/benchmarks.md).
pub const MAX_PASS_ROWS: usize = 64;

/// Most references per record: each is two rows of every forward and backward pass.
pub const MAX_SHUFFLES: usize = 1000;

/// The vocabulary ids of A, C, G and T in a nucleotide dataset.
pub struct Alphabet {
    acgt: [u32; 4],
}

impl Alphabet {
    pub fn new(tok: &TokenizerInfo, dataset: &Path) -> Result<Self> {
        if tok.scheme != TokenizerScheme::Nucleotide {
            bail!(
                "{}: --method deepliftshap shuffles bases and explains one-hot bases, which needs one token per base (nucleotide scheme); this dataset uses the {} scheme",
                dataset.display(),
                tok.scheme
            );
        }
        let mut acgt = [0u32; 4];
        for (slot, base) in acgt.iter_mut().zip(ACGT) {
            *slot = tok
                .vocab
                .iter()
                .position(|v| v == base)
                .with_context(|| format!("{}: no token {base}", dataset.display()))?
                as u32;
        }
        Ok(Self { acgt })
    }

    fn base(&self, id: u32) -> Option<usize> {
        self.acgt.iter().position(|&a| a == id)
    }
}

/// A dinucleotide shuffle of `seq`: the same first and last symbol and the same count of every
/// pair of neighbours. Each symbol's successors are shuffled except its last, then walked from
/// the first symbol (the Euler-path method of kundaje/deeplift's `dinuc_shuffle`, which
/// tangermeme's `dinucleotide_shuffle` follows).
pub fn dinucleotide_shuffle(seq: &[u32], rng: &mut ChaCha8Rng) -> Vec<u32> {
    if seq.len() <= 2 {
        return seq.to_vec();
    }
    let mut symbols = seq.to_vec();
    symbols.sort_unstable();
    symbols.dedup();
    let codes: Vec<usize> = seq
        .iter()
        .map(|s| symbols.binary_search(s).unwrap_or(0))
        .collect();
    let mut successors: Vec<Vec<usize>> = vec![Vec::new(); symbols.len()];
    for (i, &c) in codes[..codes.len() - 1].iter().enumerate() {
        successors[c].push(i + 1);
    }
    for list in &mut successors {
        if let Some((_, head)) = list.split_last_mut() {
            head.shuffle(rng);
        }
    }
    let mut used = vec![0usize; symbols.len()];
    let mut at = 0;
    let mut out = Vec::with_capacity(seq.len());
    out.push(seq[0]);
    while out.len() < seq.len() {
        let c = codes[at];
        // Every symbol but the last has as many successors as it has later occurrences, and
        // the kept last successors lead to the final symbol, so the walk never runs dry.
        let Some(&next) = successors[c].get(used[c]) else {
            break;
        };
        used[c] += 1;
        at = next;
        out.push(seq[at]);
    }
    out
}

/// One record's attributions, per sequence position (base offset).
pub struct DeepLiftRecord {
    /// The base of each position (0..3 = A, C, G, T; `None`: N or another token).
    pub bases: Vec<Option<usize>>,
    /// Hypothetical contribution of A, C, G, T at each position.
    pub hypothetical: Vec<[f32; 4]>,
    /// (x − ref)·m at each position: sums to `output − reference_output`.
    pub contribution: Vec<f32>,
    /// The references' bases, per reference and position.
    pub references: Vec<Vec<Option<usize>>>,
    /// f of the record.
    pub output: f32,
    /// Mean f of its references.
    pub reference_output: f32,
    /// The largest |Σ contributions − (f(x) − f(ref))| over its references.
    pub convergence: f32,
}

/// One record of a pass: its row (`ids`, `mask`, padding included), the `[C]` weights of its f
/// and the generator of its references.
pub struct Explained<'a> {
    pub ids: &'a [u32],
    pub mask: &'a [u8],
    pub weights: Vec<f32>,
    pub rng: ChaCha8Rng,
}

/// DeepLIFT/SHAP of a few records in one forward and backward pass (rows: each record's input
/// `shuffles` times, then each record's references, cut to the longest record);
/// `acgt_embeddings` are the `[4, E]` input embeddings of A, C, G, T.
pub fn attribute(
    input: &Input,
    alphabet: &Alphabet,
    acgt_embeddings: &Tensor,
    records: &mut [Explained],
    shuffles: usize,
) -> Result<Vec<DeepLiftRecord>> {
    let tok = input.dataset.tokenizer();
    let len = records
        .iter()
        .map(|r| real_length(r.mask))
        .max()
        .unwrap_or(0);
    let mut inputs = Vec::with_capacity(records.len() * shuffles * len);
    let mut shuffled_rows = Vec::with_capacity(inputs.capacity());
    let mut masks = Vec::with_capacity(2 * inputs.capacity());
    let mut weights = Vec::new();
    let mut layout = Vec::with_capacity(records.len());
    for r in records.iter_mut() {
        let (ids, mask) = (&r.ids[..len], &r.mask[..len]);
        let positions: Vec<usize> = (0..len)
            .filter(|&t| mask[t] != 0 && !tok.is_boundary(ids[t]))
            .collect();
        let sequence: Vec<u32> = positions.iter().map(|&t| ids[t]).collect();
        let mut references = Vec::with_capacity(shuffles);
        for _ in 0..shuffles {
            inputs.extend_from_slice(ids);
            masks.extend(mask.iter().map(|&m| f32::from(m != 0)));
            weights.extend_from_slice(&r.weights);
            let shuffled = dinucleotide_shuffle(&sequence, &mut r.rng);
            let mut row = ids.to_vec();
            for (&t, &id) in positions.iter().zip(&shuffled) {
                row[t] = id;
            }
            shuffled_rows.extend_from_slice(&row);
            references.push(shuffled.iter().map(|&id| alphabet.base(id)).collect());
        }
        layout.push((positions, sequence, references));
    }
    let half = records.len() * shuffles;
    masks.extend_from_within(..);
    weights.extend_from_within(..);
    inputs.extend(shuffled_rows);
    let passes = Passes::run(
        input,
        (inputs, masks, weights),
        (2 * half, len),
        acgt_embeddings,
    )?;
    let mut out = Vec::with_capacity(records.len());
    for (i, (positions, sequence, references)) in layout.into_iter().enumerate() {
        out.push(passes.record(
            i * shuffles,
            shuffles,
            &positions,
            &sequence,
            alphabet,
            references,
        ));
    }
    Ok(out)
}

/// What one DeepLIFT pass gives, per explained row s (of the first half) and position t: f of
/// every row, and m·x, m·ref and m·e_b for the four bases.
struct Passes {
    outputs: Vec<f32>,
    at_input: Vec<Vec<f32>>,
    at_reference: Vec<Vec<f32>>,
    at_base: Vec<Vec<f32>>,
}

impl Passes {
    /// `ids`, `masks` `[rows × len]` and `weights` `[rows × C]` flat: inputs, then their
    /// references in the same order.
    fn run(
        input: &Input,
        (ids, masks, weights): (Vec<u32>, Vec<f32>, Vec<f32>),
        (rows, len): (usize, usize),
        acgt_embeddings: &Tensor,
    ) -> Result<Self> {
        let device = &input.device;
        let model = input.model()?;
        let classes = weights.len() / rows.max(1);
        let ids = Tensor::from_vec(ids, (rows, len), device)?;
        let mask = Tensor::from_vec(masks, (rows, len), device)?;
        let emb = model.embed(&ids)?.detach();
        let var = Var::from_tensor(&emb)?;
        let logits = {
            let _rules = deeplift::Scope::enter();
            model
                .forward_from_embeddings(var.as_tensor(), &mask, None)?
                .logits
        };
        let w = Tensor::from_vec(weights, (rows, classes), device)?;
        let f = (logits.to_dtype(DType::F32)? * w)?.sum(1)?;
        let grads = f.sum_all()?.backward()?;
        let half = rows / 2;
        let m = grads
            .get(var.as_tensor())
            .context("internal: no multipliers reached the embeddings")?
            .narrow(0, 0, half)?;
        let dot = |e: &Tensor| -> Result<Vec<Vec<f32>>> {
            Ok((&m * e)?.sum(D::Minus1)?.to_vec2::<f32>()?)
        };
        let at_input = dot(&emb.narrow(0, 0, half)?)?;
        let at_reference = dot(&emb.narrow(0, half, half)?)?;
        let width = acgt_embeddings.dim(1)?;
        let at_base = m
            .reshape((half * len, width))?
            .matmul(&acgt_embeddings.t()?)?
            .reshape((half, len * 4))?
            .to_vec2::<f32>()?;
        Ok(Self {
            outputs: f.to_vec1::<f32>()?,
            at_input,
            at_reference,
            at_base,
        })
    }

    /// The record whose explained rows are `first..first + shuffles`, at its sequence
    /// `positions`: means over its references.
    fn record(
        &self,
        first: usize,
        shuffles: usize,
        positions: &[usize],
        sequence: &[u32],
        alphabet: &Alphabet,
        references: Vec<Vec<Option<usize>>>,
    ) -> DeepLiftRecord {
        let rows = first..first + shuffles;
        let half = self.at_input.len();
        let r = shuffles as f64;
        let mut hypothetical = vec![[0f32; 4]; positions.len()];
        let mut contribution = vec![0f32; positions.len()];
        for (k, &t) in positions.iter().enumerate() {
            let mut hyp = [0f64; 4];
            let mut c = 0f64;
            for s in rows.clone() {
                let m_ref = f64::from(self.at_reference[s][t]);
                c += f64::from(self.at_input[s][t]) - m_ref;
                for (b, h) in hyp.iter_mut().enumerate() {
                    *h += f64::from(self.at_base[s][t * 4 + b]) - m_ref;
                }
            }
            contribution[k] = (c / r) as f32;
            hypothetical[k] = hyp.map(|h| (h / r) as f32);
        }
        let f = &self.outputs;
        let convergence = rows
            .clone()
            .map(|s| {
                let sum: f64 = self.at_input[s]
                    .iter()
                    .zip(&self.at_reference[s])
                    .map(|(&x, &y)| f64::from(x) - f64::from(y))
                    .sum();
                (sum - (f64::from(f[s]) - f64::from(f[half + s]))).abs()
            })
            .fold(0f64, f64::max);
        let reference_output = rows.map(|s| f64::from(f[half + s])).sum::<f64>() / r;
        DeepLiftRecord {
            bases: sequence.iter().map(|&id| alphabet.base(id)).collect(),
            hypothetical,
            contribution,
            references,
            output: f[first],
            reference_output: reference_output as f32,
            convergence: convergence as f32,
        }
    }
}

/// The TSV: per base, its hypothetical contributions and its contribution (`score`).
pub const TSV_HEADER: &str = "record\tname\tposition\tbase\tA\tC\tG\tT\tscore";

fn write_tsv(out: &mut dyn Write, record: u64, name: &str, d: &DeepLiftRecord) -> Result<()> {
    for (i, h) in d.hypothetical.iter().enumerate() {
        let base = d.bases[i].map_or('N', |b| ACGT[b].as_bytes()[0] as char);
        writeln!(
            out,
            "{record}\t{name}\t{i}\t{base}\t{}\t{}\t{}\t{}\t{}",
            h[0], h[1], h[2], h[3], d.contribution[i]
        )?;
    }
    Ok(())
}

/// The npz: `hypothetical` (N, 4, L), `contrib` (N, 4, L) = one-hot × hypothetical (0 at an N:
/// tangermeme's default output, what TF-MoDISco reads with `onehot`), `onehot`, `references`
/// (N, S, 4, L) u8, `record`, `length`, `output` and `reference_output` (N).
struct Arrays {
    width: usize,
    shuffles: usize,
}

impl Arrays {
    /// The arrays of `n` records.
    fn specs(&self, n: usize) -> Vec<NpyArraySpec> {
        let (n, l, s) = (n as u64, self.width as u64, self.shuffles as u64);
        vec![
            NpyArraySpec::new("hypothetical", NpyElem::F32, &[n, 4, l]),
            NpyArraySpec::new("contrib", NpyElem::F32, &[n, 4, l]),
            NpyArraySpec::new("onehot", NpyElem::F32, &[n, 4, l]),
            NpyArraySpec::new("references", NpyElem::U8, &[n, s, 4, l]),
            NpyArraySpec::new("record", NpyElem::I64, &[n]),
            NpyArraySpec::new("length", NpyElem::I64, &[n]),
            NpyArraySpec::new("output", NpyElem::F32, &[n]),
            NpyArraySpec::new("reference_output", NpyElem::F32, &[n]),
        ]
    }

    fn push(&self, npz: &mut dyn ArrayRows, record: u64, d: &DeepLiftRecord) -> Result<()> {
        let l = self.width;
        let (mut hyp, mut contrib, mut onehot) =
            (vec![0f32; 4 * l], vec![0f32; 4 * l], vec![0f32; 4 * l]);
        for i in 0..d.bases.len().min(l) {
            for b in 0..4 {
                hyp[b * l + i] = d.hypothetical[i][b];
            }
            if let Some(b) = d.bases[i] {
                onehot[b * l + i] = 1.0;
                contrib[b * l + i] = d.hypothetical[i][b];
            }
        }
        let mut refs = vec![0u8; self.shuffles * 4 * l];
        for (s, reference) in d.references.iter().enumerate() {
            for (i, b) in reference.iter().enumerate().take(l) {
                if let Some(b) = b {
                    refs[(s * 4 + b) * l + i] = 1;
                }
            }
        }
        npz.push_f32(0, &hyp)?;
        npz.push_f32(1, &contrib)?;
        npz.push_f32(2, &onehot)?;
        npz.push_u8(3, &refs)?;
        npz.push_i64(4, &[record as i64])?;
        npz.push_i64(5, &[d.bases.len() as i64])?;
        npz.push_f32(6, &[d.output])?;
        npz.push_f32(7, &[d.reference_output])
    }
}

/// Refuses models without DeepLIFT rules for every operation, before any output is started.
pub fn check_model(input: &Input, checkpoint: &Path) -> Result<()> {
    if !input.model()?.backbone.has_deeplift_rules() {
        bail!(
            "{}: --method deepliftshap needs a backbone whose every nonlinear operation has a DeepLIFT rule; the CNN and the transformer with standard attention have them, genetic attention (its fitness weights), DNABERT-2 (ALiBi, GEGLU) and the Nucleotide Transformer v2 (rotary, SwiGLU) not yet. Use --method ig or saliency (ism too on nucleotide or k-mer tokens)",
            checkpoint.display()
        );
    }
    Ok(())
}

/// `--method deepliftshap` on a sequence classifier: every selected record against its
/// shuffles, written as the TSV, npz and bedGraph.
pub fn run(args: &ImportanceArgs, input: &Input, started: Instant) -> Result<()> {
    check_model(input, &args.checkpoint)?;
    let tok = input.dataset.tokenizer().clone();
    let alphabet = Alphabet::new(&tok, &args.dataset)?;
    let target = choose_target(args, input)?;
    let records = select_records(args, input)?;
    let classes = input.model()?.label_values().len();
    // Records per pass: each brings 2 × --shuffles rows.
    let per_pass = (MAX_PASS_ROWS / (2 * args.shuffles)).clamp(1, args.batch_size);
    let acgt = Tensor::new(&alphabet.acgt, &input.device)?.unsqueeze(0)?;
    let acgt_embeddings = input.model()?.embed(&acgt)?.squeeze(0)?.detach();
    let arrays = Arrays {
        width: widest_row(input, &records)?,
        shuffles: args.shuffles,
    };
    let specs = arrays.specs(records.len());
    let started_run =
        RecordOutputs::start(args, TSV_HEADER, &specs, &records, per_pass, &input.index)?;
    let Some((mut out, mine)) = started_run else {
        return Ok(());
    };
    let bar = progress_bar(mine.len() as u64, args.runtime.quiet);
    let mut convergence = 0f32;
    for chunk in mine.chunks(per_pass) {
        let batch = input.batch(chunk)?;
        let predicted = match target {
            Target::Fixed(_) => None,
            Target::Predicted => Some(input.logits(chunk)?),
        };
        let l = batch.max_length;
        let mut explained: Vec<Explained> = chunk
            .iter()
            .enumerate()
            .map(|(i, &r)| {
                let weights = output_weights(&target, predicted.as_ref(), i, classes);
                let mut rng = ChaCha8Rng::seed_from_u64(args.seed);
                rng.set_stream(input.index[r].record);
                Explained {
                    ids: &batch.input_ids[i * l..(i + 1) * l],
                    mask: &batch.attention_mask[i * l..(i + 1) * l],
                    weights,
                    rng,
                }
            })
            .collect();
        let results = attribute(
            input,
            &alphabet,
            &acgt_embeddings,
            &mut explained,
            args.shuffles,
        )?;
        for (&r, d) in chunk.iter().zip(&results) {
            let index = &input.index[r];
            convergence = convergence.max(d.convergence);
            write_tsv(out.tsv(), index.record, &index.name, d)?;
            if out.has_track() {
                let scores: Vec<Option<f32>> = d.contribution.iter().map(|&c| Some(c)).collect();
                out.track(index, &scores);
            }
            if let Some(n) = out.arrays() {
                arrays.push(n, index.record, d)?;
            }
            out.end_record(r)?;
        }
        bar.inc(chunk.len() as u64);
    }
    bar.finish_and_clear();
    out.commit(args, records.len())?;
    if !args.runtime.quiet {
        eprintln!(
            "luminome-importance: {} records, method deepliftshap ({} shuffles each; contributions sum to f(x) − f(reference) within {convergence:.1e}) → {} ({:.1}s)",
            mine.len(),
            args.shuffles,
            args.output.display(),
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(seq: &[u32]) -> Vec<(u32, u32)> {
        let mut p: Vec<(u32, u32)> = seq.windows(2).map(|w| (w[0], w[1])).collect();
        p.sort_unstable();
        p
    }

    #[test]
    fn a_shuffle_keeps_the_ends_and_every_dinucleotide() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        // A, C, G, T, N as 5..9, with a run of Ns.
        let seq: Vec<u32> = b"ACGTTAGGCANNNTACGATTGCAAC"
            .iter()
            .map(|&c| match c {
                b'A' => 5,
                b'C' => 6,
                b'G' => 7,
                b'T' => 8,
                _ => 9,
            })
            .collect();
        let mut differs = 0;
        for _ in 0..50 {
            let s = dinucleotide_shuffle(&seq, &mut rng);
            assert_eq!(s.len(), seq.len());
            assert_eq!((s[0], s[s.len() - 1]), (seq[0], seq[seq.len() - 1]));
            assert_eq!(pairs(&s), pairs(&seq));
            differs += usize::from(s != seq);
        }
        assert!(differs > 40, "only {differs} of 50 shuffles moved anything");
        // Too short to move: unchanged.
        assert_eq!(dinucleotide_shuffle(&[5, 6], &mut rng), vec![5, 6]);
        // The same seed and stream, the same shuffles.
        let draw = |stream| {
            let mut rng = ChaCha8Rng::seed_from_u64(1);
            rng.set_stream(stream);
            dinucleotide_shuffle(&seq, &mut rng)
        };
        assert_eq!(draw(3), draw(3));
        assert_ne!(draw(3), draw(4));
    }
}
