//! Opening possibly-compressed inputs: plain, gzip, BGZF, zstd and bzip2, detected from the
//! first bytes rather than the file name.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use crate::error::InputError;

/// Compression detected from a file's magic bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
    /// Blocked gzip (a gzip member per 64 KiB block with the `BC` extra field), as written by bgzip.
    Bgzf,
    Zstd,
    Bzip2,
}

/// Recognises a compression format from the start of a file.
pub fn detect(magic: &[u8]) -> Compression {
    match magic {
        [0x1f, 0x8b, 8, flg, _, _, _, _, _, _, _, _, b'B', b'C', ..] if flg & 4 != 0 => {
            Compression::Bgzf
        }
        [0x1f, 0x8b, ..] => Compression::Gzip,
        [0x28, 0xb5, 0x2f, 0xfd, ..] => Compression::Zstd,
        [b'B', b'Z', b'h', ..] => Compression::Bzip2,
        _ => Compression::None,
    }
}

/// A lower-cased file name without its compression suffix (`.gz`, `.bgz`, `.zst`, `.zstd`,
/// `.bz2`), so that the format a name implies (`genes.gtf.bz2` → GTF) does not depend on how
/// the file is compressed: every format [`open`] reads, and no other.
pub fn format_name(path: &Path) -> String {
    let mut name = path.to_string_lossy().to_ascii_lowercase();
    for suffix in [".gz", ".bgz", ".zst", ".zstd", ".bz2"] {
        if let Some(stem) = name.strip_suffix(suffix) {
            name.truncate(stem.len());
            break;
        }
    }
    name
}

/// Whether `path` names standard input (`-`).
pub fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Opens `path` (`-`: standard input) for buffered reading, decompressing as needed. The input
/// is opened and read once — the compression is sniffed from its first bytes, which are then
/// read again from memory — so pipes, `/dev/stdin` and process substitution work. With
/// `threads > 1`, BGZF blocks are decompressed in parallel.
pub fn open(
    path: &Path,
    threads: usize,
) -> Result<(Box<dyn BufRead + Send>, Compression), InputError> {
    let mut source: Box<dyn Read + Send> = if is_stdin(path) {
        Box::new(std::io::stdin())
    } else {
        Box::new(File::open(path).map_err(|e| InputError::file(path, format!("cannot open: {e}")))?)
    };
    let mut magic = [0u8; 18];
    let mut n = 0;
    while n < magic.len() {
        match source.read(&mut magic[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(InputError::file(path, format!("cannot read: {e}"))),
        }
    }
    let compression = detect(&magic[..n]);
    let file = std::io::Cursor::new(magic[..n].to_vec()).chain(source);
    const BUF: usize = 1 << 20;
    let reader: Box<dyn BufRead + Send> = match compression {
        Compression::None => Box::new(BufReader::with_capacity(BUF, file)),
        Compression::Gzip => Box::new(BufReader::with_capacity(
            BUF,
            flate2::read::MultiGzDecoder::new(BufReader::with_capacity(BUF, file)),
        )),
        Compression::Bgzf if threads > 1 => {
            let workers = std::num::NonZeroUsize::new(threads).expect("threads > 1");
            Box::new(BufReader::with_capacity(
                BUF,
                noodles_bgzf::io::MultithreadedReader::with_worker_count(workers, file),
            ))
        }
        Compression::Bgzf => Box::new(BufReader::with_capacity(
            BUF,
            flate2::read::MultiGzDecoder::new(BufReader::with_capacity(BUF, file)),
        )),
        Compression::Zstd => Box::new(BufReader::with_capacity(
            BUF,
            zstd::stream::read::Decoder::new(file)
                .map_err(|e| InputError::file(path, format!("cannot start zstd decoding: {e}")))?,
        )),
        Compression::Bzip2 => Box::new(BufReader::with_capacity(
            BUF,
            bzip2::read::MultiBzDecoder::new(BufReader::with_capacity(BUF, file)),
        )),
    };
    Ok((reader, compression))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_fifo_is_read_once_whatever_its_compression() {
        // Opened twice to sniff, a pipe lost its first bytes (a CSV its header) or hung.
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        for (name, bytes) in [
            ("plain", b">a\nACGT\n".to_vec()),
            ("gz", {
                let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                e.write_all(b">a\nACGT\n").unwrap();
                e.finish().unwrap()
            }),
        ] {
            let fifo = dir.path().join(name);
            assert!(std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success());
            let writer = {
                let fifo = fifo.clone();
                std::thread::spawn(move || std::fs::write(fifo, bytes).unwrap())
            };
            let (mut r, _) = open(&fifo, 1).unwrap();
            let mut text = String::new();
            r.read_to_string(&mut text).unwrap();
            writer.join().unwrap();
            assert_eq!(text, ">a\nACGT\n", "{name}");
        }
    }

    #[test]
    fn detects_formats() {
        assert_eq!(detect(b">chr1\nACGT"), Compression::None);
        assert_eq!(
            detect(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff]),
            Compression::Gzip
        );
        let bgzf = [
            0x1f, 0x8b, 8, 4, 0, 0, 0, 0, 0, 0xff, 6, 0, b'B', b'C', 2, 0, 0x1b, 0,
        ];
        assert_eq!(detect(&bgzf), Compression::Bgzf);
        assert_eq!(detect(&[0x28, 0xb5, 0x2f, 0xfd, 0]), Compression::Zstd);
        assert_eq!(detect(b"BZh91AY"), Compression::Bzip2);
        assert_eq!(detect(b""), Compression::None);
    }
}
