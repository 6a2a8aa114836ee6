//! Atomic output: write under a temporary name in the destination folder, rename on success.
//!
//! A run that fails or is killed leaves nothing at the final path; workflow engines rely on this.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

/// A file being written; it appears at `dest` only when [`AtomicFile::commit`] succeeds.
/// Dropping it without committing removes the temporary file (and an interrupted run removes
/// it too: `crate::temps`).
pub struct AtomicFile {
    tmp: Option<tempfile::NamedTempFile>,
    dest: PathBuf,
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if let Some(t) = &self.tmp {
            crate::temps::unregister(t.path());
        }
    }
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

/// A file's identity: its canonical path, and (dev, inode) when it exists (hard links).
fn identity(p: &Path) -> (Option<PathBuf>, Option<(u64, u64)>) {
    use std::os::unix::fs::MetadataExt;
    let canonical = p.canonicalize().ok().or_else(|| {
        // Not there yet: its folder's canonical path and its name.
        let parent = match p.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        Some(parent.canonicalize().ok()?.join(p.file_name()?))
    });
    let inode = std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()));
    (canonical, inode)
}

/// Refuses a run whose outputs (flag, path) name one of its inputs (flag, path) or each other:
/// writing would replace the input (or one output would replace the other). Compares canonical
/// paths (symlinks, `./`, `..`) and, for files that exist, device and inode (hard links).
pub fn check_outputs_distinct(outputs: &[(&str, &Path)], inputs: &[(&str, &Path)]) -> Result<()> {
    let ids: Vec<_> = outputs.iter().map(|(_, p)| identity(p)).collect();
    for (i, (flag, out)) in outputs.iter().enumerate() {
        let same = |other: &(Option<PathBuf>, Option<(u64, u64)>)| {
            (ids[i].0.is_some() && ids[i].0 == other.0)
                || (ids[i].1.is_some() && ids[i].1 == other.1)
        };
        for (in_flag, input) in inputs {
            if same(&identity(input)) {
                bail!(
                    "{flag} {} is the input {in_flag} {}: writing it would destroy the input; choose another output path",
                    out.display(),
                    input.display()
                );
            }
        }
        for (j, (other_flag, other)) in outputs.iter().enumerate().take(i) {
            if same(&ids[j]) {
                bail!(
                    "{flag} {} and {other_flag} {} are the same file; give each output its own path",
                    out.display(),
                    other.display()
                );
            }
        }
    }
    Ok(())
}

impl AtomicFile {
    pub fn create(dest: impl AsRef<Path>) -> Result<Self> {
        let dest = dest.as_ref().to_path_buf();
        let parent = check_output_dir(&dest)?;
        let file_name = dest
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "output".into());
        crate::temps::sweep_stale(&parent);
        let prefix = crate::temps::prefix(&file_name);
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix).suffix(crate::temps::SUFFIX);
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
        crate::temps::register(tmp.path());
        Ok(Self {
            tmp: Some(tmp),
            dest,
        })
    }

    pub fn dest(&self) -> &Path {
        &self.dest
    }

    pub fn file(&mut self) -> &mut File {
        self.tmp
            .as_mut()
            .expect("an uncommitted file")
            .as_file_mut()
    }

    /// Renames the temporary file onto the destination. There is no fsync: the contract is that
    /// a killed or failed run leaves nothing at the final path, not durability across an OS
    /// crash, and an fsync of a genome-sized output costs more than the tokenizing itself.
    pub fn commit(mut self) -> Result<()> {
        let dest = self.dest.clone();
        let tmp = self.tmp.take().expect("an uncommitted file");
        crate::temps::unregister(tmp.path());
        tmp.persist(&dest)
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
        self.file().write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.file().flush()
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
    fn outputs_that_are_inputs_by_link_or_path_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in.tsv");
        std::fs::write(&input, "x").unwrap();
        let hard = dir.path().join("hard.tsv");
        std::fs::hard_link(&input, &hard).unwrap();
        let soft = dir.path().join("soft.tsv");
        std::os::unix::fs::symlink(&input, &soft).unwrap();
        let dotted = dir.path().join(".").join("in.tsv");
        for out in [&input, &hard, &soft, &dotted] {
            let e = check_outputs_distinct(&[("-o", out)], &[("--in", &input)]).unwrap_err();
            assert!(e.to_string().contains("would destroy the input"), "{e}");
        }
        let new = dir.path().join("new.tsv");
        check_outputs_distinct(&[("-o", &new)], &[("--in", &input)]).unwrap();
        let e = check_outputs_distinct(&[("-o", &new), ("--m", &new)], &[]).unwrap_err();
        assert!(e.to_string().contains("are the same file"), "{e}");
    }

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
