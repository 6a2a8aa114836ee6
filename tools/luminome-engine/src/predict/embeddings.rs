//! Embeddings as a file for numpy/FAISS and probing: a safetensors of named `[n, dim]` f32 sets
//! (`kind` luminome.embeddings) and its index TSV (`set row name`), both written uncommitted.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Result;
use candle_core::{Device, Tensor};
use luminome_io::atomic::{AtomicWriter, Commit};

/// The index of an embeddings file: `x.safetensors` → `x.index.tsv`.
pub fn embeddings_index(path: &Path) -> PathBuf {
    luminome_io::token_dataset::index_path_for(path)
}

/// Writes `sets` (name, rows of `dim` values, row names) with the metadata `meta`.
pub fn write_embeddings(
    path: &Path,
    sets: &[(&str, &[f32], &[String])],
    dim: usize,
    meta: serde_json::Value,
) -> Result<Vec<Box<dyn Commit>>> {
    let tensors: Vec<(String, Tensor)> = sets
        .iter()
        .map(|(name, e, names)| {
            Tensor::from_slice(e, (names.len(), dim), &Device::Cpu).map(|t| (name.to_string(), t))
        })
        .collect::<candle_core::Result<_>>()?;
    let mut md = std::collections::BTreeMap::new();
    md.insert("kind".to_string(), "luminome.embeddings".to_string());
    md.insert("format_version".to_string(), "1".to_string());
    md.insert("luminome".to_string(), meta.to_string());
    let file = luminome_io::tensorfile::write_tensors(path, &tensors, &md)?;
    let mut index = AtomicWriter::create(embeddings_index(path))?;
    writeln!(index, "set\trow\tname")?;
    for (set, _, names) in sets {
        for (i, n) in names.iter().enumerate() {
            writeln!(index, "{set}\t{i}\t{n}")?;
        }
    }
    Ok(vec![Box::new(index), Box::new(file)])
}
