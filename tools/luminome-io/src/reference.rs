//! Reference FASTA with random access by interval.
//!
//! With a `.fai` beside it (and a `.gzi` for BGZF), sequence is read through noodles' indexed
//! reader. An uncompressed FASTA without an index is indexed in memory first. A gzip-compressed
//! FASTA without an index cannot be seeked, so it is loaded into memory (fine for a chromosome,
//! not for a genome: index it with `samtools faidx` then).

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use noodles::core::{Position, Region};
use noodles::fasta;

use crate::compress::Compression;
use crate::error::InputError;

enum Source {
    Indexed(fasta::io::IndexedReader<fasta::io::BufReader<File>>),
    Memory(HashMap<String, Vec<u8>>),
}

pub struct Reference {
    path: PathBuf,
    source: Source,
    /// Sequence names in file order, with lengths.
    sequences: Vec<(String, u64)>,
    lengths: HashMap<String, u64>,
}

impl Reference {
    pub fn open(path: &Path) -> Result<Self, InputError> {
        let mut fai = path.as_os_str().to_owned();
        fai.push(".fai");
        let fai = PathBuf::from(fai);
        let (_, compression) = crate::compress::open(path, 1)?;
        let indexable = fai.exists() || compression == Compression::None;
        if indexable {
            let builder = fasta::io::indexed_reader::Builder::default();
            let builder = if fai.exists() {
                builder
            } else {
                let index = fasta::fs::index(path).map_err(|e| {
                    InputError::file(path, format!("cannot index the reference FASTA: {e}"))
                })?;
                builder.set_index(index)
            };
            let reader = builder.build_from_path(path).map_err(|e| {
                InputError::file(
                    path,
                    format!(
                        "cannot open the indexed reference (is {} current?): {e}",
                        fai.display()
                    ),
                )
            })?;
            let sequences: Vec<(String, u64)> = reader
                .index()
                .as_ref()
                .iter()
                .map(|r| (String::from_utf8_lossy(r.name()).into_owned(), r.length()))
                .collect();
            return Ok(Self::new(path, Source::Indexed(reader), sequences));
        }
        let mut reader = crate::fastx::open(path, 1)?;
        let mut map = HashMap::new();
        let mut sequences = Vec::new();
        while let Some(h) = reader.next_header()? {
            let mut seq = Vec::new();
            reader.read_sequence(&mut seq)?;
            sequences.push((h.name.clone(), seq.len() as u64));
            map.insert(h.name, seq);
        }
        if sequences.is_empty() {
            return Err(InputError::file(path, "reference FASTA has no records"));
        }
        Ok(Self::new(path, Source::Memory(map), sequences))
    }

    fn new(path: &Path, source: Source, sequences: Vec<(String, u64)>) -> Self {
        let lengths = sequences.iter().cloned().collect();
        Self {
            path: path.to_path_buf(),
            source,
            sequences,
            lengths,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn sequences(&self) -> &[(String, u64)] {
        &self.sequences
    }

    pub fn length(&self, chrom: &str) -> Option<u64> {
        self.lengths.get(chrom).copied()
    }

    /// Bases `[start, end)` of `chrom`, as stored (soft-masking kept). The caller checks bounds
    /// against [`Reference::length`] to give a message naming its own input line.
    pub fn fetch(&mut self, chrom: &str, start: u64, end: u64) -> Result<Vec<u8>, InputError> {
        let len = self.length(chrom).ok_or_else(|| {
            InputError::file(
                &self.path,
                format!("no sequence named {chrom:?} in the reference"),
            )
        })?;
        if start >= end || end > len {
            return Err(InputError::file(
                &self.path,
                format!("interval {chrom}:{start}-{end} is outside {chrom} (length {len})"),
            ));
        }
        match &mut self.source {
            Source::Memory(map) => Ok(map[chrom][start as usize..end as usize].to_vec()),
            Source::Indexed(reader) => {
                let from = Position::try_from(start as usize + 1).expect("start + 1 > 0");
                let to = Position::try_from(end as usize).expect("end > start >= 0");
                let region = Region::new(chrom, from..=to);
                let record = reader.query(&region).map_err(|e| {
                    InputError::file(
                        &self.path,
                        format!("cannot read {chrom}:{start}-{end}: {e}"),
                    )
                })?;
                Ok(record.sequence().as_ref().to_vec())
            }
        }
    }
}
