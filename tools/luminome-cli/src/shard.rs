//! Sharding a run for clusters, shared by the tools that scatter and gather: `--shard I/N`
//! names a part, a part records the size and CRC-32 of the files it read so a gather can refuse
//! parts of another run, and a gather records the command an unsharded run would have.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use anyhow::{Context, Result};

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
                    assert!(r.start % 16 == 0 || r.start == n);
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
