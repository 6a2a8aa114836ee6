//! The Luminome model engine, on candle.
//!
//! # API for tools that run trained models (predict, importance)
//!
//! ```no_run
//! # fn main() -> anyhow::Result<()> {
//! use luminome_engine::models::classifier::ClassifierConfig;
//! use luminome_engine::{batch_tensors, parse_device, Checkpoint};
//! use luminome_io::token_dataset::TokenDataset;
//! let device = parse_device("cpu")?;
//! let ckpt = Checkpoint::load("model/best.safetensors".as_ref(), &device)?; // any family
//! let ds = TokenDataset::open("test.safetensors".as_ref())?;
//! ckpt.meta.check_tokenizer(&ckpt.path, ds.path(), ds.tokenizer())?; // other tokenization → error
//! let clf = ckpt.get::<ClassifierConfig>()?; // error naming both families if it is another
//! let t = batch_tensors(&ds.batch(&[0, 1, 2])?, &device)?; // ids [B,L] u32, mask [B,L] f32
//! let out = clf.forward(&t.ids, &t.mask, None)?; // None = eval mode (no dropout)
//! let logits = out.logits; // [B, C]; class i ↔ clf.config.label_values[i]
//! let gates = out.gates; // gated adapter only: g_i^final ⊙ m_i, [B, L, D]
//! // Gradients w.r.t. the input embeddings (gradient × input, integrated gradients):
//! let emb = candle_core::Var::from_tensor(&clf.embed(&t.ids)?)?; // [B, L, D]
//! let out = clf.forward_from_embeddings(emb.as_tensor(), &t.mask, None)?;
//! let grads = out.logits.narrow(1, 1, 1)?.sum_all()?.backward()?;
//! let d_emb = grads.get(emb.as_tensor()); // [B, L, D]
//! # let _ = (logits, gates, d_emb); Ok(()) }
//! ```
//!
//! `Checkpoint::load` reads `<name>.safetensors` (weights; its metadata is the full
//! [`CheckpointMeta`]: model config, what the model reads, step, dev metrics) and rebuilds the
//! model through the one dispatch in [`models`].
//!
//! # Layout
//! - [`models`]: the families, a folder each (`mlm/`, `classifier/` with `adapters/`), and the
//!   registry that maps a config to a built model.
//! - [`backbones`]: the [`backbones::Backbone`] trait heads sit on; the transformer encoder.
//! - [`nn`]: building blocks (linear, layer norm and softmax with a backward pass, masking,
//!   dropout, initialisation, gradient checking).
//! - [`train`]: the loop, its state, AdamW, the schedule, the [`train::TrainTask`] a family
//!   implements and the run of a `luminome-train` subcommand.
//! - [`checkpoint`]: checkpoint files; [`input`]: what models read and the checks datasets
//!   pass; [`predict`]: the [`predict::Predictor`] a family implements for `luminome-predict`;
//!   [`device`]: `--device` parsing; [`testing`]: helpers for tests.

pub mod backbones;
pub mod checkpoint;
pub mod device;
pub mod input;
pub mod models;
pub mod nn;
pub mod predict;
pub mod testing;
pub mod train;

pub use checkpoint::{Checkpoint, CheckpointMeta};
pub use device::parse_device;
pub use input::{batch_tensors, BatchTensors, InputSpec};
pub use models::{BuiltModel, FamilyConfig, Model, ModelConfig};
