//! safetensors files: a streaming writer with bounded memory and a memory-mapped reader.
//!
//! The writer appends rows to one spill file per tensor (in the destination folder) and, at
//! the end, writes the safetensors header followed by each tensor's bytes. So a dataset of any
//! size is written with memory bounded by one row, and the result is a single ordinary
//! safetensors file that `safetensors.numpy.load_file` opens. Rows may also be ragged and padded
//! to the longest row at the end, when the row length is not known up front.

//!
//! - [`writer`]: [`StreamingTensorWriter`] (rows through spill files) and [`write_tensors`]
//!   (whole in-memory tensors, e.g. model weights), both with an ordered header.
//! - [`reader`]: [`TensorFile`], a memory-mapped file with borrowed [`TensorRef`] views.

use safetensors::tensor::Dtype;

pub mod reader;
pub mod writer;

pub use reader::{TensorFile, TensorRef};
pub use writer::{write_tensors, ColumnSpec, RowShape, StreamingTensorWriter};

/// Element types used by Luminome outputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElemType {
    U8,
    U16,
    /// Signed bytes: small labels with a negative ignore value (-100).
    I8,
    U32,
    I32,
    I64,
    F32,
}

impl ElemType {
    pub fn size(self) -> usize {
        match self {
            ElemType::U8 => 1,
            ElemType::I8 => 1,
            ElemType::U16 => 2,
            ElemType::U32 | ElemType::I32 | ElemType::F32 => 4,
            ElemType::I64 => 8,
        }
    }

    pub(crate) fn dtype(self) -> Dtype {
        match self {
            ElemType::U8 => Dtype::U8,
            ElemType::I8 => Dtype::I8,
            ElemType::U16 => Dtype::U16,
            ElemType::U32 => Dtype::U32,
            ElemType::I32 => Dtype::I32,
            ElemType::I64 => Dtype::I64,
            ElemType::F32 => Dtype::F32,
        }
    }

    pub(crate) fn from_dtype(d: Dtype) -> Option<Self> {
        Some(match d {
            Dtype::U8 => ElemType::U8,
            Dtype::I8 => ElemType::I8,
            Dtype::U16 => ElemType::U16,
            Dtype::U32 => ElemType::U32,
            Dtype::I32 => ElemType::I32,
            Dtype::I64 => ElemType::I64,
            Dtype::F32 => ElemType::F32,
            _ => return None,
        })
    }

    /// The smallest unsigned type that holds ids `0..vocab_size`.
    pub fn smallest_unsigned_for(vocab_size: usize) -> Self {
        if vocab_size <= 1 << 8 {
            ElemType::U8
        } else if vocab_size <= 1 << 16 {
            ElemType::U16
        } else {
            ElemType::U32
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn round_trip_fixed_and_ragged() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("t.safetensors");
        let mut w = StreamingTensorWriter::new(
            &dest,
            vec![
                ColumnSpec::ragged("ids", ElemType::U16, 7),
                ColumnSpec::fixed("x", ElemType::F32, &[2]),
            ],
        )
        .unwrap();
        w.push_u32(0, &[1, 2, 3]).unwrap();
        w.push_f32(1, &[0.5, 1.5]).unwrap();
        w.push_u32(0, &[4]).unwrap();
        w.push_f32(1, &[2.0, -1.0]).unwrap();
        let mut meta = BTreeMap::new();
        meta.insert("kind".to_string(), "test".to_string());
        w.finish(meta).unwrap().commit().unwrap();
        // Only the finished file remains: spill files are gone.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);

        let f = TensorFile::open(&dest).unwrap();
        assert_eq!(f.metadata()["kind"], "test");
        let ids = f.require("ids").unwrap();
        assert_eq!(ids.shape, &[2, 3]);
        let mut row = Vec::new();
        ids.extend_u32(1, &mut row);
        assert_eq!(row, vec![4, 7, 7]);
        let mut x = Vec::new();
        f.require("x").unwrap().extend_f32(1, &mut x);
        assert_eq!(x, vec![2.0, -1.0]);
        // The standard reader accepts the file too.
        let bytes = std::fs::read(&dest).unwrap();
        let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
        assert_eq!(st.tensor("x").unwrap().shape(), &[2, 2]);
    }

    #[test]
    fn unfinished_writer_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("t.safetensors");
        {
            let mut w =
                StreamingTensorWriter::new(&dest, vec![ColumnSpec::fixed("a", ElemType::U8, &[1])])
                    .unwrap();
            w.push_u32(0, &[1]).unwrap();
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
