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

/// Whether an output path means standard output (`-`).
pub fn is_stdout(dest: &Path) -> bool {
    dest.as_os_str() == "-"
}

/// Checks that the folder `dest` will be written into exists, with a message that names it.
/// `-` (standard output) needs no folder.
pub fn check_output_dir(dest: &Path) -> Result<PathBuf> {
    if is_stdout(dest) {
        return Ok(PathBuf::from("."));
    }
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

/// What an output file holds, for [`check_extension`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputKind {
    Safetensors,
    Tsv,
    Npz,
    Vcf,
    BedGraph,
    BigWig,
}

impl OutputKind {
    /// The extensions a file of this kind may carry.
    fn extensions(self) -> &'static [&'static str] {
        match self {
            Self::Safetensors => &["safetensors"],
            // `.gz`: written gzip-compressed (AtomicWriter).
            Self::Tsv => &["tsv", "txt", "tab", "tsv.gz", "txt.gz", "tab.gz"],
            Self::Npz => &["npz"],
            Self::Vcf => &["vcf", "vcf.gz", "vcf.bgz"],
            Self::BedGraph => &[
                "bedgraph",
                "bdg",
                "bg",
                "bw",
                "bigwig",
                "bedgraph.gz",
                "bdg.gz",
                "bg.gz",
            ],
            Self::BigWig => &["bw", "bigwig"],
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Safetensors => "a safetensors file",
            Self::Tsv => "a TSV table",
            Self::Npz => "an npz archive",
            Self::Vcf => "a VCF",
            Self::BedGraph => "a track (bedGraph, or bigWig)",
            Self::BigWig => "a bigWig",
        }
    }
}

/// Extensions of formats this suite reads or writes: an output named with one of them that is
/// not its own kind's is refused (`-o out.npz` for a safetensors dataset). Other names pass.
const KNOWN_EXTENSIONS: &[&str] = &[
    "safetensors",
    "tsv",
    "txt",
    "tab",
    "csv",
    "npz",
    "npy",
    "vcf",
    "vcf.gz",
    "vcf.bgz",
    "bcf",
    "bedgraph",
    "bdg",
    "bg",
    "bw",
    "bigwig",
    "bed",
    "narrowpeak",
    "fa",
    "fasta",
    "fna",
    "fq",
    "fastq",
    "gz",
    "bam",
    "json",
    "gtf",
    "gff",
    "gff3",
    "meme",
];

/// Refuses an output path (given with `flag`) whose extension names another format than
/// `kind` writes. `-` (standard output) passes.
pub fn check_extension(flag: &str, path: &Path, kind: OutputKind) -> Result<()> {
    if is_stdout(path) {
        return Ok(());
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let ext_of = |e: &str| name.len() > e.len() + 1 && name.ends_with(&format!(".{e}"));
    if kind.extensions().iter().any(|e| ext_of(e)) {
        return Ok(());
    }
    if let Some(other) = KNOWN_EXTENSIONS
        .iter()
        .filter(|e| ext_of(e))
        .max_by_key(|e| e.len())
    {
        bail!(
            "{flag} {}: this output is {} (.{}), not a .{other} file; name it accordingly",
            path.display(),
            kind.name(),
            kind.extensions()[0]
        );
    }
    Ok(())
}

/// A file's identity: its canonical path, and (dev, inode) when it exists (hard links).
/// A path's canonical form and its (device, inode), each when it can be known.
type Identity = (Option<PathBuf>, Option<(u64, u64)>);

fn identity(p: &Path) -> Identity {
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
/// Whether two paths name one file (the same canonical path, or the same device and inode: a
/// hard link).
pub fn same_file(a: &Path, b: &Path) -> bool {
    same_identity(&identity(a), &identity(b))
}

/// Two [`identity`]s name one file: a known canonical path or a known inode in common.
fn same_identity(a: &Identity, b: &Identity) -> bool {
    (a.0.is_some() && a.0 == b.0) || (a.1.is_some() && a.1 == b.1)
}

pub fn check_outputs_distinct(outputs: &[(&str, &Path)], inputs: &[(&str, &Path)]) -> Result<()> {
    let to_stdout: Vec<&str> = outputs
        .iter()
        .filter(|(_, p)| is_stdout(p))
        .map(|(f, _)| *f)
        .collect();
    if to_stdout.len() > 1 {
        bail!(
            "{} all write to standard output (-); give all but one a file name",
            to_stdout.join(" and ")
        );
    }
    let ids: Vec<_> = outputs.iter().map(|(_, p)| identity(p)).collect();
    for (i, (flag, out)) in outputs.iter().enumerate() {
        if is_stdout(out) {
            continue;
        }
        let same = |other: &Identity| same_identity(&ids[i], other);
        for (in_flag, input) in inputs {
            if crate::compress::is_stdin(input) {
                continue;
            }
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
        if is_stdout(&dest) {
            bail!(
                "- (standard output) takes text tables only; this output is a binary file: name it"
            );
        }
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

    /// Where the bytes are until [`AtomicFile::commit`]: for reading a finished output back
    /// (indexing it) before it is moved into place.
    pub fn temp_path(&self) -> &Path {
        self.tmp.as_ref().expect("an uncommitted file").path()
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
        crate::temps::note_committed();
        Ok(())
    }
}

/// A buffered text/bytes writer over an [`AtomicFile`], or over standard output when created
/// for `-` (text outputs a user pipes on: there the output is written as it comes). A destination
/// named `*.gz` is written gzip-compressed (`-o scores.tsv.gz`).
pub struct AtomicWriter {
    inner: WriterInner,
}

enum WriterInner {
    File(BufWriter<AtomicFile>),
    /// A destination named `*.gz`: gzip (no name or time in its header, so the bytes depend on
    /// the content alone).
    Gzip(Box<flate2::write::GzEncoder<BufWriter<AtomicFile>>>),
    Stdout(BufWriter<std::io::Stdout>),
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
        let gzip = dest
            .as_ref()
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("gz"));
        let inner = if is_stdout(dest.as_ref()) {
            WriterInner::Stdout(BufWriter::with_capacity(1 << 16, std::io::stdout()))
        } else {
            let file = BufWriter::with_capacity(1 << 20, AtomicFile::create(dest)?);
            if gzip {
                WriterInner::Gzip(Box::new(flate2::write::GzEncoder::new(
                    file,
                    flate2::Compression::default(),
                )))
            } else {
                WriterInner::File(file)
            }
        };
        Ok(Self { inner })
    }

    pub fn commit(self) -> Result<()> {
        let buffered = match self.inner {
            WriterInner::File(w) => w,
            WriterInner::Gzip(gz) => gz.finish().context("cannot finish the gzip output")?,
            WriterInner::Stdout(mut w) => {
                return w.flush().context("cannot write to standard output")
            }
        };
        let file = buffered
            .into_inner()
            .map_err(|e| anyhow::anyhow!("cannot flush output: {}", e.error()))?;
        file.commit()
    }

    fn writer(&mut self) -> &mut dyn Write {
        match &mut self.inner {
            WriterInner::File(w) => w,
            WriterInner::Gzip(w) => w.as_mut(),
            WriterInner::Stdout(w) => w,
        }
    }
}

impl Write for AtomicWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.writer().write(buf)
    }
    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.writer().write_all(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.writer().flush()
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
    #[test]
    fn a_gz_name_gets_gzip_with_the_same_bytes_every_time() {
        use std::io::{Read, Write};
        let dir = tempfile::tempdir().unwrap();
        let text = "record\tscore\n0\t1.5\n".repeat(100);
        let write = |name: &str| {
            let dest = dir.path().join(name);
            let mut w = super::AtomicWriter::create(&dest).unwrap();
            w.write_all(text.as_bytes()).unwrap();
            w.commit().unwrap();
            std::fs::read(dest).unwrap()
        };
        let (gz, again, plain) = (write("a.tsv.gz"), write("b.tsv.GZ"), write("c.tsv"));
        assert_eq!(&gz[..2], &[0x1f, 0x8b]);
        let mut back = String::new();
        flate2::read::GzDecoder::new(&gz[..])
            .read_to_string(&mut back)
            .unwrap();
        assert_eq!(
            (back.as_str(), plain.as_slice()),
            (text.as_str(), text.as_bytes())
        );
        assert_eq!(gz, again, "no name or time in the gzip header");
        assert!(!dir.path().read_dir().unwrap().any(|e| e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .contains(crate::temps::SUFFIX)));
    }
    use super::*;

    #[test]
    fn extensions_of_other_formats_are_refused() {
        let p = |s: &str| PathBuf::from(s);
        assert!(check_extension("-o", &p("x.safetensors"), OutputKind::Safetensors).is_ok());
        assert!(check_extension("-o", &p("x"), OutputKind::Safetensors).is_ok());
        assert!(check_extension("-o", &p("run.v2.out"), OutputKind::Tsv).is_ok());
        assert!(check_extension("-o", &p("-"), OutputKind::Tsv).is_ok());
        assert!(check_extension("--vcf", &p("s.vcf.gz"), OutputKind::Vcf).is_ok());
        let e = check_extension("-o", &p("d/out.npz"), OutputKind::Safetensors).unwrap_err();
        assert!(
            e.to_string().contains(
                "-o d/out.npz: this output is a safetensors file (.safetensors), not a .npz file"
            ),
            "{e}"
        );
        assert!(check_extension("--npz", &p("a.safetensors"), OutputKind::Npz).is_err());
        assert!(check_extension("-o", &p("p.fa.gz"), OutputKind::Tsv).is_err());
        // Gzip-compressed text outputs, as AtomicWriter writes them.
        assert!(check_extension("-o", &p("scores.tsv.gz"), OutputKind::Tsv).is_ok());
        assert!(check_extension("--bedgraph", &p("t.bedgraph.gz"), OutputKind::BedGraph).is_ok());
        assert!(check_extension("-o", &p("t.bedgraph.gz"), OutputKind::Tsv).is_err());
    }

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
