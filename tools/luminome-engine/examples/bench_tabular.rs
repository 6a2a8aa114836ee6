//! Training-step and inference timing of the tabular classifier's default model, the
//! FT-Transformer of `luminome-train tabular` (docs/tabular.md): d 64, 3 pre-LN blocks, 4 heads,
//! FFN 128, dropout 0.1, on a table shaped like the breast-cancer benchmark (30 numeric columns,
//! no categorical one, 2 classes), batch 64. The same step as
//! `bench/tabular/torch_tabular.py --bench`: forward (dropout on), cross-entropy, backward,
//! gradient clipping at 1, AdamW (lr 1e-3, weight decay 1e-4 on rank ≥ 2 parameters).
//!
//!     RAYON_NUM_THREADS=1 cargo run --release -p luminome-engine --example bench_tabular -- [steps] [columns] [batch]

use std::collections::HashMap;
use std::time::Instant;

use candle_core::{DType, Device};
use luminome_engine::models::tabular::schema::{ColumnKind, TableColumn};
use luminome_engine::models::tabular::task::predict_probs;
use luminome_engine::models::tabular::{
    EncodedRows, TabularArch, TabularConfig, TabularSchema, TabularTask,
};
use luminome_engine::models::{BuiltModel, ModelConfig};
use luminome_engine::train::optim::clip_grad_norm;
use luminome_engine::train::{AdamW, AdamWConfig, TrainTask};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() -> anyhow::Result<()> {
    // As luminome-train and luminome-predict run: mimalloc keeping freed memory, candle's
    // element-wise ops on the calling thread, the work started from a rayon pool thread.
    luminome_cli::keep_freed_memory();
    luminome_cli::candle_elementwise_on_caller();
    luminome_cli::on_pool(run)
}

fn run() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let arg = |i: usize, d: usize| -> anyhow::Result<usize> {
        Ok(args.get(i).map(|s| s.parse()).transpose()?.unwrap_or(d))
    };
    let (steps, n_cols, b) = (arg(1, 20)?, arg(2, 30)?, arg(3, 64)?);
    // The schema of a table of numbers already standardised (mean 0, sd 1), as
    // `TabularSchema::fit` would store it; the arch is `TabularArgs::arch`'s default.
    let schema = TabularSchema {
        label_column: "label".into(),
        id_column: None,
        classes: vec!["benign".into(), "malignant".into()],
        columns: (0..n_cols)
            .map(|j| TableColumn {
                name: format!("x{j}"),
                kind: ColumnKind::Numeric { mean: 0.0, sd: 1.0 },
            })
            .collect(),
    };
    let cfg = TabularConfig {
        schema,
        arch: TabularArch::FtTransformer {
            d_model: 64,
            num_layers: 3,
            num_heads: 4,
            ffn_dim: 128,
            dropout: 0.1,
            attention: Default::default(),
        },
        threshold: None,
    };
    let dev = Device::Cpu;
    let built = BuiltModel::new(&ModelConfig::from(cfg), &dev, 1)?;
    let model = built.get::<TabularConfig>()?.clone();
    // Rows as `TabularSchema::encode` leaves them; the values and labels of torch_tabular.py.
    let rows = EncodedRows {
        n: b,
        n_numeric: n_cols,
        n_categorical: 0,
        ids: (0..b).map(|i| format!("row{}", i + 1)).collect(),
        numeric: (0..b * n_cols)
            .map(|k| ((k / n_cols * 131 + k % n_cols * 17) % 101) as f32 / 25.0 - 2.0)
            .collect(),
        missing: vec![0.0; b * n_cols],
        categories: Vec::new(),
        classes: Some((0..b).map(|i| (i % 3 == 0) as u32).collect()),
        unknown: Default::default(),
    };
    // The training task of `luminome-train tabular` (its loss: log-softmax, gather, mean).
    let task = TabularTask {
        model,
        train: rows,
        dev: None,
        class_weights: None,
        device: dev.clone(),
        eval_batch_size: b,
    };
    let mut names = built.parameter_names();
    names.sort();
    let vars: Vec<(String, candle_core::Var)> = {
        let data = built.varmap.data().lock().unwrap();
        names.iter().map(|n| (n.clone(), data[n].clone())).collect()
    };
    let adamw = AdamWConfig {
        weight_decay: 1e-4,
        ..Default::default()
    };
    let mut opt = AdamW::new(vars.clone(), adamw)?;
    let records: Vec<usize> = (0..b).collect();
    let mut times = Vec::new();
    for step in 0..steps + 3 {
        let t0 = Instant::now();
        // What the trainer does per step (train/trainer.rs): the loss read back (its NaN
        // check), backward, gradients by name, clipping at 1, the AdamW update.
        let loss = task.train_loss(&records, step as u64)?;
        let _ = loss.to_dtype(DType::F64)?.to_scalar::<f64>()?;
        let grads = loss.backward()?;
        let mut map = HashMap::new();
        for (n, v) in &vars {
            if let Some(g) = grads.get(v.as_tensor()) {
                map.insert(n.clone(), g.clone());
            }
        }
        clip_grad_norm(&mut map, 1.0)?;
        opt.step(&map, 1e-3)?;
        if step >= 3 {
            times.push(t0.elapsed().as_secs_f64());
        }
    }
    // Inference as luminome-predict scores a table: encoded rows → tensors → logits → softmax.
    let mut inf = Vec::new();
    for step in 0..steps + 3 {
        let t0 = Instant::now();
        let probs = predict_probs(&task.model, &task.train, b, &dev)?;
        assert_eq!(probs.len(), 2 * b);
        if step >= 3 {
            inf.push(t0.elapsed().as_secs_f64());
        }
    }
    let (train, infer) = (median(times), median(inf));
    println!("luminome ft-transformer columns {n_cols} batch {b}");
    println!("train_step_ms median {:.2}", train * 1e3);
    println!(
        "infer_batch_ms median {:.2} ({:.0} rows/s)",
        infer * 1e3,
        b as f64 / infer
    );
    Ok(())
}
