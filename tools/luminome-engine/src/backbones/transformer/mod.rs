//! The suite's transformer encoder (pre-LN; learned or rotary positions), the backbone of the
//! masked-LM and sequence-classifier families.

pub mod args;
pub mod attention;
pub mod config;
pub mod encoder;

pub use args::{EncoderArgs, EncoderDefaults};
pub use config::{AttentionKind, EncoderConfig, PositionEncoding};
pub use encoder::{Encoder, EncoderStack};

impl super::Backbone for Encoder {
    fn hidden_size(&self) -> usize {
        self.config().d_model
    }

    fn embed(&self, ids: &candle_core::Tensor) -> candle_core::Result<candle_core::Tensor> {
        Encoder::embed(self, ids)
    }

    /// Standard attention has DeepLIFT rules (midpoint at its products, the softmax rule);
    /// genetic attention's fitness does not yet.
    fn has_deeplift_rules(&self) -> bool {
        self.config().attention == AttentionKind::Standard
    }

    fn forward_from_embeddings(
        &self,
        emb: &candle_core::Tensor,
        mask: &candle_core::Tensor,
        rng: Option<&crate::nn::DropoutRng>,
    ) -> candle_core::Result<candle_core::Tensor> {
        Encoder::forward_from_embeddings(self, emb, mask, rng)
    }
}
