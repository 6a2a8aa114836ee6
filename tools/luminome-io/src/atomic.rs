//! Atomic output: write under a temporary name in the destination folder, rename on success.
//!
//! A run that fails or is killed leaves nothing at the final path; workflow engines rely on this.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

/// A file being written; it appears at `dest` only when [`AtomicFile::commit`] succeeds.
/// Dropping it without committing removes the temporary file.
pub struct AtomicFile {
    tmp: tempfile::NamedTempFile,
    dest: PathBuf,
}

/// Checks that the folder `dest` will be written into exists, with a message that names it.
pub fn check_output_dir(dest: &Path) -> Result<PathBuf> {
    let parent = match dest.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !parent.is_dir() {
        bail!(
            "output folder {} does not exist (for output {}); create it first",
            parent.display(),
            dest.display()
        );
    }
    if dest.is_dir() {
        bail!(
            "output path {} is a folder, expected a file name",
            dest.display()
        );
    }
    Ok(parent)
}

impl AtomicFile {
    pub fn create(dest: impl AsRef<Path>) -> Result<Self> {
        let dest = dest.as_ref().to_path_buf();
        let parent = check_output_dir(&dest)?;
        let file_name = dest
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "output".into());
        let prefix = format!(".{file_name}.");
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix).suffix(".tmp");
        // Outputs are ordinary files others on a cluster can read (0644 less the umask), not the
        // 0600 tempfile uses for secrets.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            builder.permissions(std::fs::Permissions::from_mode(0o644));
        }
        let tmp = builder
            .tempfile_in(&parent)
            .with_context(|| format!("cannot create a temporary file in {}", parent.display()))?;
        Ok(Self { tmp, dest })
    }

    pub fn dest(&self) -> &Path {
        &self.dest
    }

    pub fn file(&mut self) -> &mut File {
        self.tmp.as_file_mut()
    }

    /// Renames the temporary file onto the destination. There is no fsync: the contract is that
    /// a killed or failed run leaves nothing at the final path, not durability across an OS
    /// crash, and an fsync of a genome-sized output costs more than the tokenizing itself.
    pub fn commit(self) -> Result<()> {
        let dest = self.dest.clone();
        self.tmp
            .persist(&dest)
            .map_err(|e| e.error)
            .with_context(|| format!("cannot move the finished output to {}", dest.display()))?;
        Ok(())
    }
}

/// A buffered text/bytes writer over an [`AtomicFile`].
pub struct AtomicWriter {
    inner: BufWriter<AtomicFile>,
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.tmp.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.tmp.flush()
    }
}

impl AtomicWriter {
    pub fn create(dest: impl AsRef<Path>) -> Result<Self> {
        Ok(Self {
            inner: BufWriter::with_capacity(1 << 20, AtomicFile::create(dest)?),
        })
    }

    pub fn commit(self) -> Result<()> {
        let file = self
            .inner
            .into_inner()
            .map_err(|e| anyhow::anyhow!("cannot flush output: {}", e.error()))?;
        file.commit()
    }
}

impl Write for AtomicWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.inner.write(buf)
    }
    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.inner.write_all(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// An output written under a temporary name and moved into place by `commit`, whatever its
/// writer: lets a tool collect the outputs of a run and commit them together at the end.
pub trait Commit {
    fn commit_boxed(self: Box<Self>) -> Result<()>;
}

impl Commit for AtomicFile {
    fn commit_boxed(self: Box<Self>) -> Result<()> {
        (*self).commit()
    }
}

impl Commit for AtomicWriter {
    fn commit_boxed(self: Box<Self>) -> Result<()> {
        (*self).commit()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uncommitted_output_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("out.tsv");
        {
            let mut w = AtomicWriter::create(&dest).unwrap();
            w.write_all(b"a\tb\n").unwrap();
        }
        assert!(!dest.exists());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn committed_output_appears() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("out.tsv");
        let mut w = AtomicWriter::create(&dest).unwrap();
        w.write_all(b"a\tb\n").unwrap();
        w.commit().unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), b"a\tb\n");
    }

    #[cfg(unix)]
    #[test]
    fn outputs_are_readable_by_others() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("out.tsv");
        let mut w = AtomicWriter::create(&dest).unwrap();
        w.write_all(b"x\n").unwrap();
        w.commit().unwrap();
        let mode = std::fs::metadata(&dest).unwrap().permissions().mode();
        assert_eq!(mode & 0o044, 0o044 & !umask(), "mode {mode:o}");
    }

    #[cfg(unix)]
    fn umask() -> u32 {
        // The process umask, read without changing it, from /proc.
        std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("Umask:"))
                    .map(str::to_owned)
            })
            .and_then(|l| u32::from_str_radix(l.split_whitespace().nth(1)?, 8).ok())
            .unwrap_or(0o022)
    }

    #[test]
    fn missing_output_folder_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("nope").join("out.tsv");
        let err = AtomicWriter::create(&dest).err().unwrap().to_string();
        assert!(err.contains("does not exist"), "{err}");
    }
}
