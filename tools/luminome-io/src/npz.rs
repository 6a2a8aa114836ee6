//! NumPy `.npz` output (what `numpy.load` opens): several named arrays filled row by row.
//!
//! Each array is declared up front with its element type and full shape; rows are appended to
//! any array in any interleaving (e.g. one record of `contrib` and of `onehot` at a time), each
//! spooled to an anonymous temporary file in the destination folder, so memory stays bounded by
//! one row. [`NpzWriter::commit`] checks every array got exactly its declared element count,
//! then stores them uncompressed as `<name>.npy` members (npy header by `npyz`, zip container
//! by `zip`, ZIP64 where needed) and renames the archive onto its final path (see
//! [`crate::atomic`]). Element data are little-endian, C order.

use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::Path;

use anyhow::{bail, Context, Result};
use npyz::WriterBuilder;

use crate::atomic::AtomicFile;

/// Element types an array can hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NpyElem {
    F32,
    I64,
    U8,
    /// Text of at most this many characters (numpy's `<U`, UTF-32, zero-padded).
    Unicode(u32),
}

impl NpyElem {
    fn descr(self) -> String {
        match self {
            NpyElem::F32 => "<f4".into(),
            NpyElem::I64 => "<i8".into(),
            NpyElem::U8 => "|u1".into(),
            NpyElem::Unicode(n) => format!("<U{n}"),
        }
    }

    fn size(self) -> u64 {
        match self {
            NpyElem::F32 => 4,
            NpyElem::I64 => 8,
            NpyElem::U8 => 1,
            NpyElem::Unicode(n) => 4 * u64::from(n),
        }
    }
}

/// One array of the archive: its name (the member is `<name>.npy`), element type and shape.
#[derive(Debug, Clone)]
pub struct NpyArraySpec {
    pub name: String,
    pub elem: NpyElem,
    pub shape: Vec<u64>,
}

impl NpyArraySpec {
    pub fn new(name: &str, elem: NpyElem, shape: &[u64]) -> Self {
        Self {
            name: name.to_string(),
            elem,
            shape: shape.to_vec(),
        }
    }

    fn num_elements(&self) -> u64 {
        self.shape.iter().product()
    }
}

struct Spool {
    spec: NpyArraySpec,
    data: BufWriter<File>,
    written: u64,
}

/// Writes an `.npz` archive; nothing appears at the destination until [`Self::commit`].
pub struct NpzWriter {
    file: AtomicFile,
    arrays: Vec<Spool>,
}

impl NpzWriter {
    pub fn create(dest: impl AsRef<Path>, arrays: &[NpyArraySpec]) -> Result<Self> {
        let file = AtomicFile::create(dest.as_ref())?;
        let folder = file.dest().parent().filter(|p| !p.as_os_str().is_empty());
        let folder = folder.unwrap_or(Path::new("."));
        let mut spools = Vec::new();
        for spec in arrays {
            if spools.iter().any(|s: &Spool| s.spec.name == spec.name) {
                bail!("internal: npz array {} declared twice", spec.name);
            }
            let tmp = tempfile::tempfile_in(folder).with_context(|| {
                format!("cannot create a temporary file in {}", folder.display())
            })?;
            spools.push(Spool {
                spec: spec.clone(),
                data: BufWriter::with_capacity(1 << 20, tmp),
                written: 0,
            });
        }
        Ok(Self {
            file,
            arrays: spools,
        })
    }

    fn spool(&mut self, array: usize, elem: NpyElem, n: usize) -> Result<&mut Spool> {
        let s = self
            .arrays
            .get_mut(array)
            .context("internal: no such npz array")?;
        if s.spec.elem != elem {
            bail!(
                "internal: npz array {} holds {:?}, not {elem:?}",
                s.spec.name,
                s.spec.elem
            );
        }
        s.written += n as u64;
        if s.written > s.spec.num_elements() {
            bail!(
                "internal: more elements than the shape of npz array {} holds",
                s.spec.name
            );
        }
        Ok(s)
    }

    /// Appends elements to array `array` (its index in the declaration).
    pub fn push_f32(&mut self, array: usize, values: &[f32]) -> Result<()> {
        let s = self.spool(array, NpyElem::F32, values.len())?;
        for v in values {
            s.data.write_all(&v.to_le_bytes())?;
        }
        Ok(())
    }

    pub fn push_i64(&mut self, array: usize, values: &[i64]) -> Result<()> {
        let s = self.spool(array, NpyElem::I64, values.len())?;
        for v in values {
            s.data.write_all(&v.to_le_bytes())?;
        }
        Ok(())
    }

    pub fn push_u8(&mut self, array: usize, values: &[u8]) -> Result<()> {
        let s = self.spool(array, NpyElem::U8, values.len())?;
        s.data.write_all(values)?;
        Ok(())
    }

    /// Appends strings to a [`NpyElem::Unicode`] array; one longer than its width is an error.
    pub fn push_str(&mut self, array: usize, values: &[&str]) -> Result<()> {
        let elem = self
            .arrays
            .get(array)
            .context("internal: no such npz array")?
            .spec
            .elem;
        let NpyElem::Unicode(width) = elem else {
            bail!("internal: npz array {array} does not hold text");
        };
        if let Some(v) = values.iter().find(|v| v.chars().count() > width as usize) {
            bail!("internal: '{v}' is longer than the {width} characters of npz array {array}");
        }
        let s = self.spool(array, elem, values.len())?;
        for v in values {
            let mut chars = v.chars();
            for _ in 0..width {
                let c = chars.next().map_or(0, u32::from);
                s.data.write_all(&c.to_le_bytes())?;
            }
        }
        Ok(())
    }

    /// Assembles the archive and moves it to its final path.
    pub fn commit(self) -> Result<()> {
        self.finish()?.commit()
    }

    /// Assembles the archive in its temporary file, not yet at its final path (committed with
    /// other outputs, after all of them were written).
    pub fn finish(mut self) -> Result<AtomicFile> {
        let dest = self.file.dest().to_path_buf();
        let handle = self
            .file
            .file()
            .try_clone()
            .with_context(|| format!("cannot write {}", dest.display()))?;
        let mut zip = zip::ZipWriter::new(BufWriter::with_capacity(1 << 20, handle));
        for spool in self.arrays {
            let spec = &spool.spec;
            if spool.written != spec.num_elements() {
                bail!(
                    "internal: npz array {} got {} of its {} elements",
                    spec.name,
                    spool.written,
                    spec.num_elements()
                );
            }
            let bytes = spool.written * spec.elem.size();
            let options = zip::write::SimpleFileOptions::default()
                .compression_method(zip::CompressionMethod::Stored)
                .large_file(bytes >= u32::MAX as u64 / 2);
            zip.start_file(format!("{}.npy", spec.name), options)
                .with_context(|| format!("cannot write {}", dest.display()))?;
            let dtype =
                npyz::DType::new_scalar(spec.elem.descr().parse().expect("valid type string"));
            npyz::WriteOptions::new_header_only()
                .dtype(dtype)
                .shape(&spec.shape)
                .writer(&mut zip)
                .write_header_only()?;
            let mut data = spool
                .data
                .into_inner()
                .map_err(|e| anyhow::anyhow!("cannot spool npz data: {}", e.error()))?;
            data.seek(SeekFrom::Start(0))?;
            std::io::copy(&mut data, &mut zip)
                .with_context(|| format!("cannot write {}", dest.display()))?;
        }
        let mut out = zip
            .finish()
            .with_context(|| format!("cannot write {}", dest.display()))?;
        out.flush()?;
        drop(out);
        Ok(self.file)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn arrays_become_npy_members_with_their_shapes() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("x.npz");
        let specs = [
            NpyArraySpec::new("contrib", NpyElem::F32, &[2, 3]),
            NpyArraySpec::new("record", NpyElem::I64, &[2]),
        ];
        let mut w = NpzWriter::create(&dest, &specs).unwrap();
        // Interleaved, one row at a time.
        w.push_f32(0, &[1.0, 2.0, 3.0]).unwrap();
        w.push_i64(1, &[7]).unwrap();
        w.push_f32(0, &[4.0, 5.0, 6.0]).unwrap();
        w.push_i64(1, &[9]).unwrap();
        assert!(!dest.exists(), "nothing at the final path before commit");
        w.commit().unwrap();
        let mut archive = zip::ZipArchive::new(File::open(&dest).unwrap()).unwrap();
        let mut names: Vec<String> = (0..archive.len())
            .map(|i| archive.by_index(i).unwrap().name().unwrap().to_string())
            .collect();
        names.sort();
        assert_eq!(names, ["contrib.npy", "record.npy"]);
        let mut bytes = Vec::new();
        archive
            .by_name("contrib.npy")
            .unwrap()
            .read_to_end(&mut bytes)
            .unwrap();
        let npy = npyz::NpyFile::new(&bytes[..]).unwrap();
        assert_eq!(npy.shape(), &[2, 3]);
        assert_eq!(
            npy.into_vec::<f32>().unwrap(),
            [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
        );
        // Only the archive remains in the folder: the spools were anonymous.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn numpy_load_reads_the_archive() {
        // One `skipped:` line (not a traceback) when numpy is missing.
        if !crate::python_probe::python_can_import("numpy", "numpy.load of an npz") {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("x.npz");
        let specs = [
            NpyArraySpec::new("contrib", NpyElem::F32, &[2, 4, 3]),
            NpyArraySpec::new("onehot", NpyElem::U8, &[2, 4, 3]),
            NpyArraySpec::new("record", NpyElem::I64, &[2]),
            NpyArraySpec::new("chrom", NpyElem::Unicode(5), &[2]),
        ];
        let mut w = NpzWriter::create(&dest, &specs).unwrap();
        assert!(w.push_str(3, &["chrIII"]).is_err(), "wider than the array");
        w.push_str(3, &["chrI", "chrII"]).unwrap();
        let contrib: Vec<f32> = (0..24).map(|i| i as f32 * 0.5).collect();
        w.push_f32(0, &contrib).unwrap();
        w.push_u8(1, &[1; 24]).unwrap();
        w.push_i64(2, &[3, -1]).unwrap();
        w.commit().unwrap();
        let script = "import numpy as np, sys\n\
            d = np.load(sys.argv[1])\n\
            assert sorted(d.files) == ['chrom', 'contrib', 'onehot', 'record'], d.files\n\
            assert d['chrom'].tolist() == ['chrI', 'chrII'] and d['chrom'].dtype == '<U5'\n\
            c = d['contrib']\n\
            assert c.shape == (2, 4, 3) and c.dtype == np.float32, (c.shape, c.dtype)\n\
            assert c[1, 3, 2] == 11.5 and c[0, 1, 0] == 1.5\n\
            assert d['onehot'].dtype == np.uint8 and d['onehot'].sum() == 24\n\
            assert d['record'].tolist() == [3, -1]\n";
        let out = std::process::Command::new("python3")
            .args(["-c", script, dest.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    #[test]
    fn a_short_array_is_refused_and_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("x.npz");
        let mut w = NpzWriter::create(&dest, &[NpyArraySpec::new("a", NpyElem::U8, &[4])]).unwrap();
        w.push_u8(0, &[1, 2]).unwrap();
        assert!(w.commit().is_err());
        assert!(!dest.exists());
        let mut w = NpzWriter::create(&dest, &[NpyArraySpec::new("a", NpyElem::U8, &[1])]).unwrap();
        assert!(w.push_u8(0, &[1, 2]).is_err());
        assert!(w.push_f32(0, &[1.0]).is_err());
    }
}
