//! Sharding a run for clusters, shared by the tools that scatter and gather: `--shard I/N`
//! names a part, a part records the size and CRC-32 of the files it read so a gather can refuse
//! parts of another run, and a gather records the command an unsharded run would have.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use anyhow::{bail, Context, Result};
use luminome_io::tensorfile::TensorFile;

/// Part I of N, 1-based.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardSpec {
    pub index: usize,
    pub count: usize,
}

impl FromStr for ShardSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let parsed = s.split_once('/').and_then(|(i, n)| {
            let (index, count) = (i.trim().parse().ok()?, n.trim().parse().ok()?);
            (1..=count)
                .contains(&index)
                .then_some(Self { index, count })
        });
        parsed.ok_or_else(|| format!("{s:?} is not I/N with 1 <= I <= N (e.g. 2/8)"))
    }
}

impl std::fmt::Display for ShardSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl ShardSpec {
    /// Its records among `n`: batches `⌊(I−1)·B/N⌋ .. ⌊I·B/N⌋` of the `B` batches of `batch`
    /// records (a part may be empty when N exceeds the batches).
    pub fn records(&self, n: usize, batch: usize) -> Range<usize> {
        let batches = n.div_ceil(batch) as u128;
        let (index, count) = (self.index as u128, self.count as u128);
        let first = ((index - 1) * batches / count) as usize;
        let end = (index * batches / count) as usize;
        first.saturating_mul(batch).min(n)..end.saturating_mul(batch).min(n)
    }
}

/// A file's size and CRC-32 (symlinks followed: the Hugging Face cache links its files); a
/// folder's regular files by name, each so; an `hf:` name, its cached snapshot folder.
pub fn fingerprint(path: &Path) -> Result<String> {
    let resolved = match path.to_str().filter(|s| s.starts_with("hf:")) {
        Some(name) => match crate::hub::open_checkpoint(name) {
            Ok(c) => c.config_path().parent().map(Path::to_path_buf),
            Err(_) => None,
        },
        None => Some(path.to_path_buf()),
    };
    let Some(path) = resolved else {
        return Ok(path.display().to_string());
    };
    if !path.is_dir() {
        return file_fingerprint(&path);
    }
    let mut names: Vec<PathBuf> = std::fs::read_dir(&path)
        .with_context(|| format!("cannot read {}", path.display()))?
        .filter_map(|e| Some(e.ok()?.path()))
        .filter(|p| p.is_file())
        .collect();
    names.sort();
    let parts: Result<Vec<String>> = names
        .iter()
        .map(|p| {
            let name = p.file_name().unwrap_or_default().to_string_lossy();
            Ok(format!("{name}:{}", file_fingerprint(p)?))
        })
        .collect();
    Ok(parts?.join(" "))
}

fn file_fingerprint(path: &Path) -> Result<String> {
    let mut file =
        std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut crc = crc32fast::Hasher::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut size = 0u64;
    loop {
        let got = std::io::Read::read(&mut file, &mut buf)
            .with_context(|| format!("cannot read {}", path.display()))?;
        if got == 0 {
            break;
        }
        crc.update(&buf[..got]);
        size += got as u64;
    }
    Ok(format!("{size}/{:08x}", crc.finalize()))
}

/// What a gather asks of its parts before reading them.
pub struct PartCheck<'a> {
    /// The metadata key that marks a part of this tool (its value is "1").
    pub kind: &'a str,
    /// The tool, for "not a part of TOOL --shard".
    pub tool: &'a str,
    /// Metadata every part must have as the gather's own arguments give it.
    pub identity: &'a BTreeMap<String, String>,
    /// What a mismatch of `identity` means, e.g. "dataset, model, options, --batch-size or
    /// version".
    pub identity_names: &'a str,
    /// Metadata the parts must agree on among themselves (not with the gather, which computes
    /// nothing and may run elsewhere): the device they ran on, the units they all saw.
    pub same_among: &'a [&'a str],
}

/// A part file, opened and checked by [`open_parts`].
pub struct PartFile {
    pub path: PathBuf,
    pub spec: ShardSpec,
    pub file: TensorFile,
}

/// Opens the parts and checks them — each a part of this tool, of this run (`identity`), in
/// agreement with the others (`same_among`), each of 1..N exactly once (missing ones named) —
/// and returns them in part order. A part given twice or twice the same part is refused.
pub fn open_parts(paths: &[PathBuf], check: &PartCheck<'_>) -> Result<Vec<PartFile>> {
    let mut parts: BTreeMap<usize, PartFile> = BTreeMap::new();
    let mut first: Option<(PathBuf, BTreeMap<String, String>, usize)> = None;
    for path in paths {
        let file = TensorFile::open(path)?;
        let meta = file.metadata();
        if meta.get(check.kind).map(String::as_str) != Some("1") {
            bail!("{}: not a part of {} --shard", path.display(), check.tool);
        }
        for (key, want) in check.identity {
            let have = meta.get(key).map(String::as_str).unwrap_or("");
            if have != want {
                bail!(
                    "{}: its {key} is {have:?} where this run has {want:?}: a part of another run ({})",
                    path.display(),
                    check.identity_names
                );
            }
        }
        let spec: ShardSpec = meta
            .get("shard")
            .map_or("", |s| s)
            .parse()
            .map_err(|e| anyhow::anyhow!("{}: shard {e}", path.display()))?;
        let shared: BTreeMap<String, String> = check
            .same_among
            .iter()
            .map(|k| (k.to_string(), meta.get(*k).cloned().unwrap_or_default()))
            .collect();
        let (other, theirs, count) =
            first.get_or_insert_with(|| (path.clone(), shared.clone(), spec.count));
        if *count != spec.count {
            bail!(
                "{}: part {spec}, where {} said {count} parts",
                path.display(),
                other.display()
            );
        }
        if let Some(key) = check.same_among.iter().find(|k| shared[**k] != theirs[**k]) {
            bail!(
                "{} has {key} {:?} and {} {:?}: parts of one run share it",
                path.display(),
                shared[*key],
                other.display(),
                theirs[*key]
            );
        }
        if let Some(other) = parts.get(&spec.index) {
            bail!(
                "{} and {} are both part {spec}",
                other.path.display(),
                path.display()
            );
        }
        let path = path.clone();
        parts.insert(spec.index, PartFile { path, spec, file });
    }
    let count = first
        .map(|f| f.2)
        .context("--gather needs the part files")?;
    let missing: Vec<String> = (1..=count)
        .filter(|i| !parts.contains_key(i))
        .map(|i| format!("{i}/{count}"))
        .collect();
    if !missing.is_empty() {
        bail!(
            "--gather: parts {} are missing (rerun those shards)",
            missing.join(", ")
        );
    }
    Ok(parts.into_values().collect())
}

/// Whether argument `i` of the process belongs to `--gather` (the flag or one of its values),
/// so the gathered VCF records the command an unsharded run would have.
pub fn is_gather_arg(args: &[String], i: usize) -> bool {
    let Some(flag) = args[..=i.min(args.len() - 1)]
        .iter()
        .rposition(|a| a == "--gather" || a.starts_with("--gather="))
    else {
        return false;
    };
    if args[flag].starts_with("--gather=") {
        return i == flag;
    }
    // The flag, then its values up to the next option.
    i == flag
        || args[flag + 1..=i]
            .iter()
            .all(|a| !a.starts_with('-') || a == "-")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_are_whole_batches_covering_every_record_once() {
        for n in [0, 1, 5, 64, 65, 1000] {
            for count in 1..=7 {
                let mut next = 0;
                for index in 1..=count {
                    let r = ShardSpec { index, count }.records(n, 16);
                    assert_eq!(r.start, next, "n {n} shard {index}/{count}");
                    assert!(r.start.is_multiple_of(16) || r.start == n);
                    next = r.end;
                }
                assert_eq!(next, n);
            }
        }
        assert!("0/3".parse::<ShardSpec>().is_err() && "4/3".parse::<ShardSpec>().is_err());
        assert_eq!(
            "2/3".parse::<ShardSpec>().unwrap(),
            ShardSpec { index: 2, count: 3 }
        );
    }

    #[test]
    fn the_gather_flag_and_its_values_are_left_out_of_the_command() {
        let args: Vec<String> = "p --checkpoint m --gather a b -o x.tsv --gather=c"
            .split(' ')
            .map(String::from)
            .collect();
        let kept: Vec<&str> = (0..args.len())
            .filter(|&i| !is_gather_arg(&args, i))
            .map(|i| args[i].as_str())
            .collect();
        assert_eq!(kept, ["p", "--checkpoint", "m", "-o", "x.tsv"]);
    }
}
