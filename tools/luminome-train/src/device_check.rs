//! Another device (or the CPU's primitive fallbacks) against the CPU's fused kernels, for every
//! op the engine writes itself and every step-trained model family: the forward values and the
//! gradients must agree within tolerance. `examples/cuda_check.rs` runs it on a GPU host;
//! `tests/fallbacks.rs` runs it in CI with the fallbacks forced on the CPU, the code CUDA and
//! Metal run.
//!
//! Ops: on the CPU the engine's fused kernels run (softmax with and without the padding bias,
//! layer norm with and without its scale and shift, bias add, GELU, softplus, the CNN's shift
//! window, the selective scan) and, for the gated unit and rotary positions, candle's
//! primitives; on the other side each op's CUDA kernel or documented primitive fallback runs
//! (docs/engine.md, "The fused ops and their CUDA paths"). Families: each one's training
//! setup is built twice from the same command line (`luminome-train <family> …`, dropout 0) on
//! tiny datasets written here, the same seed giving the same weights on both devices (the
//! published backbones, DNABERT-2 and the Nucleotide Transformer v2: a tiny checkpoint in their
//! layout, loaded by both); the loss of the first micro-batch and every parameter's gradient are
//! compared. Exit status 1 when
//! anything differs by more than the tolerance.

use std::collections::HashMap;
use std::path::Path;

use crate::{Cli, Command};
use anyhow::{bail, Context, Result};
use candle_core::{DType, Device, Tensor};
use clap::Parser;
use luminome_engine::backbones::BackboneKind;

/// Largest |a − b| / max(1, |a|, |b|) over two tensors of one shape.
fn rel_diff(a: &Tensor, b: &Tensor) -> Result<f64> {
    let a = a
        .to_device(&Device::Cpu)?
        .to_dtype(DType::F64)?
        .flatten_all()?
        .to_vec1::<f64>()?;
    let b = b
        .to_device(&Device::Cpu)?
        .to_dtype(DType::F64)?
        .flatten_all()?
        .to_vec1::<f64>()?;
    if a.len() != b.len() {
        bail!("{} values against {}", a.len(), b.len());
    }
    Ok(a.iter()
        .zip(&b)
        .map(|(x, y)| (x - y).abs() / 1f64.max(x.abs()).max(y.abs()))
        .fold(0.0, f64::max))
}

fn randn(shape: &[usize], seed: u64) -> Result<Tensor> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let n: usize = shape.iter().product();
    let v: Vec<f32> = (0..n).map(|_| rng.random::<f32>() * 4.0 - 2.0).collect();
    Ok(Tensor::from_vec(v, shape, &Device::Cpu)?)
}

/// What the fused CPU kernels are compared with.
#[derive(Debug, Clone)]
pub enum Target {
    /// Another device (CUDA, Metal): the ops' fallbacks run there.
    Device(Device),
    /// The CPU with every op's primitive fallback forced.
    CpuFallbacks,
}

impl Target {
    fn device(&self) -> Device {
        match self {
            Self::Device(d) => d.clone(),
            Self::CpuFallbacks => Device::Cpu,
        }
    }

    /// Runs `f` on this target (with the fallbacks forced for `CpuFallbacks`).
    fn run<T>(&self, f: impl FnOnce(&Device) -> Result<T>) -> Result<T> {
        let force = matches!(self, Self::CpuFallbacks);
        luminome_engine::nn::force_primitive_ops(force);
        let out = f(&self.device());
        luminome_engine::nn::force_primitive_ops(false);
        out
    }
}

/// One comparison: what, and the largest relative differences of the forward values and of the
/// gradients.
pub type CheckRow = (String, f64, f64);

/// Forward and input gradient of `f` (weighted by fixed random numbers) on both sides.
fn check_op(
    name: &str,
    inputs: &[Tensor],
    target: &Target,
    f: &dyn Fn(&[Tensor]) -> candle_core::Result<Tensor>,
    report: &mut Vec<CheckRow>,
) -> Result<()> {
    let run = |dev: &Device| -> Result<(Tensor, Vec<Tensor>)> {
        let vars: Vec<candle_core::Var> = inputs
            .iter()
            .map(|t| candle_core::Var::from_tensor(&t.to_device(dev)?))
            .collect::<candle_core::Result<_>>()?;
        let ts: Vec<Tensor> = vars.iter().map(|v| v.as_tensor().clone()).collect();
        let y = f(&ts)?;
        let w = randn(y.dims(), 99)?.to_device(dev)?;
        let grads = (&y * &w)?.sum_all()?.backward()?;
        let g = vars
            .iter()
            .map(|v| {
                grads
                    .get(v.as_tensor())
                    .cloned()
                    .unwrap_or_else(|| v.as_tensor().zeros_like().expect("zeros"))
            })
            .collect();
        Ok((y, g))
    };
    let (y_cpu, g_cpu) = run(&Device::Cpu)?;
    let (y_gpu, g_gpu) = target.run(|d| run(d))?;
    let fwd = rel_diff(&y_cpu, &y_gpu)?;
    let mut bwd = 0f64;
    for (a, b) in g_cpu.iter().zip(&g_gpu) {
        bwd = bwd.max(rel_diff(a, b)?);
    }
    report.push((format!("op {name}"), fwd, bwd));
    Ok(())
}

fn ops(cuda: &Target, report: &mut Vec<CheckRow>) -> Result<()> {
    use luminome_engine::nn;
    check_op(
        "softmax_last_dim",
        &[randn(&[4, 3, 33], 1)?],
        cuda,
        &|t| nn::softmax_last_dim(&t[0]),
        report,
    )?;
    check_op(
        "softmax_last_dim_biased",
        &[randn(&[3, 2, 6, 6], 15)?],
        cuda,
        &|t| {
            let m = Tensor::new(
                &[
                    [1f32, 1., 1., 1., 1., 1.],
                    [1., 1., 1., 1., 0., 0.],
                    [1., 0., 0., 0., 0., 0.],
                ],
                t[0].device(),
            )?;
            nn::softmax_last_dim_biased(&t[0], &nn::attention_bias(&m, t[0].dtype())?)
        },
        report,
    )?;
    check_op(
        "normalize_last_dim",
        &[randn(&[4, 7, 48], 2)?],
        cuda,
        &|t| nn::normalize_last_dim(&t[0], 1e-5),
        report,
    )?;
    let layer_norm = |t: &[Tensor], detached: bool| {
        let t: Vec<Tensor> = t
            .iter()
            .map(|t| if detached { t.detach() } else { t.clone() })
            .collect();
        let norm = nn::LayerNorm {
            weight: t[1].clone(),
            bias: t[2].clone(),
            eps: 1e-5,
        };
        norm.forward(&t[0])
    };
    let affine = [
        randn(&[3, 5, 40], 16)?,
        randn(&[40], 17)?,
        randn(&[40], 18)?,
    ];
    check_op(
        "layer_norm (training)",
        &affine,
        cuda,
        &|t| layer_norm(t, false),
        report,
    )?;
    check_op(
        "layer_norm (inference)",
        &affine,
        cuda,
        &|t| layer_norm(t, true),
        report,
    )?;
    for (name, act) in [
        ("gated_unit (SiLU)", nn::GateActivation::Silu),
        ("gated_unit (GELU)", nn::GateActivation::GeluErf),
    ] {
        let g = (randn(&[3, 7, 24], 19)? * 2.0)?;
        check_op(name, &[g], cuda, &|t| nn::gated_unit(&t[0], act), report)?;
    }
    check_op(
        "rotate_half",
        &[
            randn(&[2, 3, 9, 8], 20)?,
            randn(&[9, 4], 21)?,
            randn(&[9, 4], 22)?,
        ],
        cuda,
        // The tables enter as constants, as in the models (no gradient of their own).
        &|t| nn::rotate_half(&t[0], &t[1].detach(), &t[2].detach()),
        report,
    )?;
    check_op(
        "add_bias",
        &[randn(&[5, 9, 24], 3)?, randn(&[24], 4)?],
        cuda,
        &|t| nn::add_bias(&t[0], &t[1]),
        report,
    )?;
    check_op(
        "gelu",
        &[(randn(&[6, 50], 14)? * 2.0)?],
        cuda,
        &|t| nn::gelu(&t[0]),
        report,
    )?;
    check_op(
        "softplus",
        &[randn(&[6, 40], 5)?],
        cuda,
        &|t| nn::softplus(&t[0]),
        report,
    )?;
    check_op(
        "masked_mean",
        &[randn(&[3, 10, 8], 6)?],
        cuda,
        &|t| {
            let m = Tensor::new(
                &[
                    [1f32; 10],
                    [1., 1., 1., 1., 1., 1., 0., 0., 0., 0.],
                    [1., 0., 0., 0., 0., 0., 0., 0., 0., 0.],
                ],
                t[0].device(),
            )?;
            nn::masked_mean(&t[0], &m, 1e-9)
        },
        report,
    )?;
    check_op(
        "shift_window",
        &[randn(&[2, 30, 6], 7)?],
        cuda,
        &|t| luminome_engine::backbones::cnn::conv::shift_window(&t[0], 3, 4),
        report,
    )?;
    let (b, l, e, n) = (2, 12, 5, 4);
    check_op(
        "selective_scan",
        &[
            randn(&[b, l, e], 8)?,
            (randn(&[b, l, e], 9)?.abs()? * 0.2)?,
            (randn(&[e, n], 10)?.abs()? * -1.0)?,
            randn(&[b, l, n], 11)?,
            randn(&[b, l, n], 12)?,
            randn(&[e], 13)?,
        ],
        cuda,
        &|t| {
            luminome_engine::nn::scan::selective_scan(
                &t[0], &t[1], &t[2], &t[3], &t[4], &t[5], true,
            )
        },
        report,
    )?;
    Ok(())
}

/// Tiny datasets for every family, written into `dir`.
pub fn datasets(dir: &Path) -> Result<()> {
    use luminome_engine::testing::*;
    let (s, l) = toy_motif_task(48, 30, 1);
    write_dataset(&dir.join("tokens.safetensors"), &s, Some(&l), 32)?;
    let (s, _) = toy_motif_task(16, 30, 2);
    write_pair_dataset(&dir.join("pairs.safetensors"), &s, 0.2, 3)?;
    write_region_dataset(
        &dir.join("regions.safetensors"),
        16,
        8,
        &["K562", "GM12878"],
        4,
        Some(&|_, v| v),
    )?;
    let (pairs, _) = ecoli_retrieval_task(0, 16, 48, 20, 2, true, 5);
    write_retrieval_pairs_k(&dir.join("retrieval.safetensors"), &pairs, 3)?;
    write_table(&dir.join("table.tsv"))?;
    // The published backbones: a tiny checkpoint in each family's layout, data in its tokenizer.
    let (s, l) = toy_motif_task(16, 30, 3);
    for (name, kind) in PUBLISHED {
        let tok = write_published_checkpoint(&dir.join(name), kind)?;
        let encode = |seq: &[u8]| encode_published(&tok, seq);
        let data = dir.join(format!("{name}.safetensors"));
        write_token_dataset(&data, tok.clone(), &encode, &s, Some(&l), 32)?;
    }
    Ok(())
}

/// A small feature table: two numeric columns, one categorical, a label that depends on them.
fn write_table(path: &Path) -> Result<()> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(17);
    let mut text = String::from("sample\tx1\tx2\tgrade\tlabel\n");
    for i in 0..40 {
        let (x1, x2) = (rng.random::<f32>() * 4.0 - 2.0, rng.random::<f32>() * 10.0);
        let grade = ["low", "mid", "high"][i % 3];
        let label = if x1 + 0.2 * x2 > 1.0 { "yes" } else { "no" };
        text.push_str(&format!("s{i}\t{x1:.3}\t{x2:.3}\t{grade}\t{label}\n"));
    }
    std::fs::write(path, text).with_context(|| path.display().to_string())
}

/// The published families the check covers, by the folder name of their tiny checkpoint.
const PUBLISHED: [(&str, BackboneKind); 2] = [
    ("dnabert2", BackboneKind::Dnabert2),
    ("nt-v2", BackboneKind::NtV2),
];

/// The command line of every case, by name: a family trained by optimizer steps needs at least
/// one (`tests/fallbacks.rs` checks every registered family).
fn families(dir: &Path) -> Vec<(&'static str, Vec<String>)> {
    let p = |n: &str| dir.join(n).display().to_string();
    let small = "--d-model 16 --layers 2 --heads 2 --ffn 32 --dropout 0 --batch-size 8";
    let cases: Vec<(&str, String)> = vec![
        ("mlm", format!("mlm --train {} {small}", p("tokens.safetensors"))),
        ("classify gated", format!("classify --adapter gated --train {} {small}", p("tokens.safetensors"))),
        ("classify genetic", format!("classify --adapter mean --attention genetic --train {} {small}", p("tokens.safetensors"))),
        ("classify cnn", format!("classify --adapter mean --backbone cnn --cnn-channels 8 --cnn-layers 3 --dropout 0 --rc-average --batch-size 8 --train {}", p("tokens.safetensors"))),
        ("bag-of-tokens", format!("bag-of-tokens --train {} --batch-size 8", p("tokens.safetensors"))),
        ("bistrand", format!("bistrand --train {} --d-model 16 --layers 1 --cross-heads 2 --dropout 0 --batch-size 4", p("pairs.safetensors"))),
        ("region-pretrain", format!("region-pretrain --train {} --preset tiny --dropout 0 --batch-size 4", p("regions.safetensors"))),
        ("expression", format!("expression --train {} --preset tiny --dropout 0 --batch-size 4", p("regions.safetensors"))),
        ("dual", format!("dual --train {} --attention genetic {small}", p("retrieval.safetensors"))),
        ("tabular ft", format!("tabular --train {} --label label --id sample --d-model 16 --layers 2 --heads 2 --dropout 0 --batch-size 8", p("table.tsv"))),
        ("tabular mlp", format!("tabular --train {} --label label --id sample --model mlp --dropout 0 --batch-size 8", p("table.tsv"))),
        ("classify dnabert2", format!("classify --adapter gated --init {} --train {} --batch-size 8", p("dnabert2"), p("dnabert2.safetensors"))),
        ("classify nt-v2", format!("classify --adapter mean --init {} --train {} --batch-size 8", p("nt-v2"), p("nt-v2.safetensors"))),
    ];
    cases
        .into_iter()
        .map(|(name, args)| {
            let mut v = vec!["luminome-train".to_string()];
            v.extend(args.split_whitespace().map(String::from));
            v.extend([
                "-o".to_string(),
                p(&format!("run-{}", name.replace(' ', "-"))),
            ]);
            (name, v)
        })
        .collect()
}

/// Loss of the first micro-batch and every gradient, by parameter name.
fn loss_and_grads(command: &Command, device: &Device) -> Result<(Tensor, HashMap<String, Tensor>)> {
    let s = command
        .step_setup(device)
        .with_context(|| format!("{}: fitted in closed form, no device path", command.kind()))??;
    let n = s.task.train_len().min(8);
    let records: Vec<usize> = (0..n).collect();
    let loss = s.task.train_loss(&records, 7)?;
    let grads = loss.backward()?;
    let data = s.varmap.data().lock().expect("var map");
    let mut out = HashMap::new();
    for name in &s.trainable {
        if let Some(g) = grads.get(data[name].as_tensor()) {
            out.insert(name.clone(), g.clone());
        }
    }
    Ok((loss, out))
}

/// Every op and every family on `target` against the CPU's fused kernels.
pub fn compare(target: &Target) -> Result<Vec<CheckRow>> {
    let mut report = Vec::new();
    ops(target, &mut report)?;
    let dir = tempfile::tempdir()?;
    datasets(dir.path())?;
    for (name, argv) in families(dir.path()) {
        let cli = Cli::try_parse_from(&argv).with_context(|| format!("{name}: {argv:?}"))?;
        let (l_cpu, g_cpu) = loss_and_grads(&cli.command, &Device::Cpu)
            .with_context(|| format!("{name} on the CPU"))?;
        let (l_gpu, g_gpu) = target
            .run(|d| loss_and_grads(&cli.command, d))
            .with_context(|| format!("{name} on {target:?}"))?;
        if g_cpu.len() != g_gpu.len() {
            bail!(
                "{name}: {} gradients on the CPU, {} on {target:?}",
                g_cpu.len(),
                g_gpu.len()
            );
        }
        let fwd = rel_diff(&l_cpu, &l_gpu)?;
        let mut bwd = 0f64;
        for (k, a) in &g_cpu {
            let b = g_gpu
                .get(k)
                .with_context(|| format!("{name}: no gradient for {k} on {target:?}"))?;
            bwd = bwd.max(rel_diff(a, b)?);
        }
        report.push((
            format!(
                "family {name} [{}] ({} parameters with gradients)",
                cli.command.kind(),
                g_cpu.len()
            ),
            fwd,
            bwd,
        ));
    }
    Ok(report)
}
