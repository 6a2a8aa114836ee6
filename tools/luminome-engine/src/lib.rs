//! The Luminome model engine, on candle.
//!
//! # API for tools that run trained models (predict, importance)
//!
//! ```no_run
//! # fn main() -> anyhow::Result<()> {
//! use luminome_engine::{batch_tensors, parse_device, Checkpoint};
//! use luminome_io::token_dataset::TokenDataset;
//! let device = parse_device("cpu")?;
//! let ckpt = Checkpoint::load("model/best.safetensors".as_ref(), &device)?;
//! let ds = TokenDataset::open("test.safetensors".as_ref())?;
//! ckpt.meta.check_tokenizer(&ckpt.path, ds.path(), ds.tokenizer())?; // vocab mismatch → error
//! let clf = ckpt.classifier()?; // error if the checkpoint is an MLM model
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
//! [`CheckpointMeta`]: model config, tokenizer, step, dev metrics). `ckpt.meta.model` is a
//! [`ModelConfig`] (`Mlm` or `Classifier`).
//!
//! # Layout
//! - [`config`]: model configs (serde), [`device`]: `--device` parsing.
//! - [`ops`]: softmax / layer norm with a backward pass (fused on the CPU), masks, seeded dropout.
//! - [`encoder`]: pre-LN transformer encoder (learned or rotary positions).
//! - [`adapters`]: LinearCLS, LinearMeanPool, LinearMaxPool, DynamicGated.
//! - [`classifier`], [`mlm`]: the two model families of this issue.
//! - [`optim`] (AdamW), [`schedule`] (warmup + cosine), [`checkpoint`] (weights + config +
//!   tokenizer, atomic writes), [`trainer`] (the loop), [`tasks`] (MLM and classification as
//!   training tasks).

pub mod adapters;
pub mod batch;
pub mod checkpoint;
pub mod classifier;
pub mod config;
pub mod device;
pub mod encoder;
pub mod gradcheck;
pub mod init;
pub mod linear;
pub mod mlm;
pub mod model;
pub mod ops;
pub mod optim;
pub mod schedule;
pub mod tasks;
pub mod testing;
pub mod trainer;

pub use batch::{batch_tensors, class_indices, BatchTensors};
pub use checkpoint::{Checkpoint, CheckpointMeta};
pub use classifier::Classifier;
pub use config::{
    AdapterKind, ClassifierConfig, EncoderConfig, MlmConfig, ModelConfig, PositionEncoding,
};
pub use device::parse_device;
pub use mlm::MlmModel;
pub use model::{BuiltModel, Model};
