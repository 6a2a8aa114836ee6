//! End-to-end tests of `luminome-tokenize` on the bundled test-data: outputs decode back to the
//! input, and each kind of bad input is refused with its file and line/record and no output.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use luminome_io::token_dataset::{read_index, TokenDataset};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_luminome-tokenize"))
}

fn test_data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../test-data")
        .join(rel)
}

fn run_ok(args: &[&str]) -> String {
    let out = bin().args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "failed: {args:?}\n{stderr}");
    stderr
}

/// Runs and expects a refusal: non-zero exit, every `expect` text in the message, and nothing
/// at all left in the output folder.
fn assert_refused(args: &[&str], out_dir: &Path, expect: &[&str]) -> String {
    let out = bin().args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "should have failed: {args:?}");
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    for e in expect {
        assert!(stderr.contains(e), "message lacks {e:?}: {stderr}");
    }
    assert!(!stderr.contains("panicked"), "{stderr}");
    if out_dir.exists() {
        let left: Vec<_> = std::fs::read_dir(out_dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert!(left.is_empty(), "files left behind: {left:?}");
    }
    stderr
}

/// Decodes a row's ids back to bases with the dataset's own vocabulary (specials and padding
/// dropped).
fn decode(ds: &TokenDataset, row: usize) -> String {
    let b = ds.batch(&[row]).unwrap();
    let vocab = &ds.tokenizer().vocab;
    b.input_ids
        .iter()
        .filter(|&&id| !vocab[id as usize].starts_with('['))
        .map(|&id| vocab[id as usize].as_str())
        .collect()
}

fn read_fasta(path: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut out: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        if let Some(h) = line.strip_prefix('>') {
            out.push((
                h.split_whitespace().next().unwrap().to_string(),
                String::new(),
            ));
        } else {
            out.last_mut().unwrap().1.push_str(line.trim());
        }
    }
    out
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::File::create(&p).unwrap().write_all(bytes).unwrap();
    p
}

#[test]
fn gue_csv_round_trips_with_labels() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("prom.safetensors");
    let csv = test_data("gue_prom_core_all/train.csv");
    run_ok(&[
        csv.to_str().unwrap(),
        "--max-length",
        "72",
        "-o",
        out.to_str().unwrap(),
    ]);
    let ds = TokenDataset::open(&out).unwrap();
    assert_eq!(ds.len(), 2000);
    assert_eq!(ds.max_length(), 72);
    let rows: Vec<(String, i64)> = std::fs::read_to_string(&csv)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| {
            let (s, y) = l.split_once(',').unwrap();
            (s.to_string(), y.trim().parse().unwrap())
        })
        .collect();
    let labels = ds
        .batch(&(0..2000).collect::<Vec<_>>())
        .unwrap()
        .labels
        .unwrap();
    for (i, (seq, y)) in rows.iter().enumerate() {
        assert_eq!(decode(&ds, i), *seq, "row {i}");
        assert_eq!(labels[i], *y);
    }
    // [CLS] first, [SEP] after the 70 bases, then padding with mask 0.
    let b = ds.batch(&[0]).unwrap();
    assert_eq!(b.input_ids[0], 1);
    assert_eq!(b.input_ids[71], 2);
    assert!(b.attention_mask.iter().all(|&m| m == 1));
    assert_eq!(ds.meta().label_values, vec![0, 1]);
}

#[test]
fn chromosome_streams_in_windows_that_decode_back_with_soft_mask() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("slice.safetensors");
    let fa = test_data("chr22_slice/chr22_slice.fa");
    run_ok(&[
        fa.to_str().unwrap(),
        "--overflow",
        "window",
        "--window",
        "1000",
        "--stride",
        "700",
        "--soft-mask",
        "-o",
        out.to_str().unwrap(),
    ]);
    let seq = &read_fasta(&fa)[0].1;
    let ds = TokenDataset::open(&out).unwrap();
    let index = read_index(&dir.path().join("slice.index.tsv")).unwrap();
    assert_eq!(index.len(), ds.len());
    // Windows start every 700 bases until one reaches the end.
    assert_eq!(ds.len(), (seq.len() - 1000).div_ceil(700) + 1);
    for (i, row) in index.iter().enumerate() {
        let (a, b) = (
            row.window_offset as usize,
            (row.window_offset + row.window_length) as usize,
        );
        assert_eq!(row.seq_length as usize, seq.len());
        assert_eq!(row.coords, format!("chr22_slice:{a}-{b}(+)"));
        assert_eq!(decode(&ds, i), seq[a..b].to_ascii_uppercase(), "window {i}");
        let batch = ds.batch(&[i]).unwrap();
        let soft = batch.soft_mask.unwrap();
        for (j, c) in seq[a..b].chars().enumerate() {
            assert_eq!(
                soft[1 + j] == 1,
                c.is_ascii_lowercase(),
                "window {i} base {j}"
            );
        }
    }
    assert_eq!(
        index.last().unwrap().window_offset as usize + index.last().unwrap().window_length as usize,
        seq.len()
    );
}

#[test]
fn compressed_inputs_give_the_same_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let plain = test_data("ecoli/ecoli_50kb.fa");
    let gz = test_data("ecoli/ecoli_50kb.fa.gz");
    let raw = std::fs::read(&plain).unwrap();
    let zst = write(
        dir.path(),
        "e.fa.zst",
        &zstd::encode_all(&raw[..], 3).unwrap(),
    );
    let bgz = dir.path().join("e.fa.bgz");
    {
        let mut w = noodles_bgzf::io::Writer::new(std::fs::File::create(&bgz).unwrap());
        w.write_all(&raw).unwrap();
        w.finish().unwrap();
    }
    let mut ids = Vec::new();
    for (i, input) in [plain.clone(), gz, zst, bgz.clone(), bgz]
        .iter()
        .enumerate()
    {
        let out = dir.path().join(format!("o{i}.safetensors"));
        let threads = if i == 4 { "2" } else { "1" };
        run_ok(&[
            input.to_str().unwrap(),
            "--max-length",
            "1002",
            "--overflow",
            "window",
            "--threads",
            threads,
            "-o",
            out.to_str().unwrap(),
        ]);
        let ds = TokenDataset::open(&out).unwrap();
        ids.push(
            ds.batch(&(0..ds.len()).collect::<Vec<_>>())
                .unwrap()
                .input_ids,
        );
    }
    assert_eq!(ids[0].len(), 50 * 1002);
    for (i, v) in ids.iter().enumerate() {
        assert_eq!(v, &ids[0], "input {i} differs");
    }
}

#[test]
fn same_input_gives_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("a.safetensors");
    let fq = test_data("ecoli/reads.fastq.gz");
    let args = [
        fq.to_str().unwrap(),
        "--scheme",
        "kmer",
        "-k",
        "3",
        "--rc",
        "both",
        "-o",
        out.to_str().unwrap(),
    ];
    run_ok(&args);
    let first = (
        std::fs::read(&out).unwrap(),
        std::fs::read(dir.path().join("a.index.tsv")).unwrap(),
    );
    run_ok(&args);
    assert_eq!(first.0, std::fs::read(&out).unwrap());
    assert_eq!(
        first.1,
        std::fs::read(dir.path().join("a.index.tsv")).unwrap()
    );
}

#[test]
fn kmers_and_reverse_complements_decode_back() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("k.safetensors");
    let fq = test_data("ecoli/reads.fastq.gz");
    run_ok(&[
        fq.to_str().unwrap(),
        "--scheme",
        "kmer",
        "-k",
        "4",
        "--kmer-mode",
        "non-overlapping",
        "--rc",
        "both",
        "-o",
        out.to_str().unwrap(),
    ]);
    let ds = TokenDataset::open(&out).unwrap();
    assert_eq!(ds.len(), 400);
    let genome = &read_fasta(&test_data("ecoli/ecoli_50kb.fa"))[0].1;
    let index = ds.read_index().unwrap();
    for i in [0usize, 2, 398] {
        let pos = 200 * (i / 2);
        let fwd = &genome[pos..pos + 150];
        assert_eq!(decode(&ds, i), fwd.to_ascii_uppercase(), "forward row {i}");
        let rc: String = fwd
            .chars()
            .rev()
            .map(|c| match c.to_ascii_uppercase() {
                'A' => 'T',
                'C' => 'G',
                'G' => 'C',
                'T' => 'A',
                _ => 'N',
            })
            .collect();
        assert_eq!(decode(&ds, i + 1), rc, "reverse row {}", i + 1);
        assert_eq!(index[i].strand, '+');
        assert_eq!(index[i + 1].strand, '-');
    }
    // 150 bases in 4-mers: 37 k-mers + 2 single-base tail tokens + [CLS] + [SEP].
    assert_eq!(ds.max_length(), 41);
}

#[test]
fn bed_intervals_are_strand_aware_with_coordinates() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("tss.safetensors");
    let bed = test_data("chr22_slice/intervals.bed");
    let fa = test_data("chr22_slice/chr22_slice.fa");
    run_ok(&[
        bed.to_str().unwrap(),
        "--reference",
        fa.to_str().unwrap(),
        "--width",
        "200",
        "-o",
        out.to_str().unwrap(),
    ]);
    let seq = &read_fasta(&fa)[0].1;
    let ds = TokenDataset::open(&out).unwrap();
    let index = ds.read_index().unwrap();
    let lines: Vec<Vec<String>> = std::fs::read_to_string(&bed)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect();
    assert_eq!(ds.len(), lines.len());
    let mut minus = 0;
    for (i, f) in lines.iter().enumerate() {
        let (s, e): (usize, usize) = (f[1].parse().unwrap(), f[2].parse().unwrap());
        let start = (s + e) / 2 - 100;
        let fwd = seq[start..start + 200].to_ascii_uppercase();
        let expect = if f[5] == "-" {
            minus += 1;
            fwd.chars()
                .rev()
                .map(|c| match c {
                    'A' => 'T',
                    'C' => 'G',
                    'G' => 'C',
                    'T' => 'A',
                    _ => 'N',
                })
                .collect()
        } else {
            fwd
        };
        assert_eq!(decode(&ds, i), expect, "interval {i}");
        assert_eq!(
            index[i].coords,
            format!("chr22_slice:{start}-{}({})", start + 200, f[5])
        );
    }
    assert!(minus > 0, "test data should include minus-strand intervals");
}

#[test]
fn hf_tokenizer_matches_the_python_library_ids() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("hf.safetensors");
    let tok = test_data("tokenizers/dna_bpe_256.json");
    run_ok(&[
        test_data("gue_prom_core_all/dev.csv").to_str().unwrap(),
        "--scheme",
        "hf",
        "--tokenizer",
        tok.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    let ds = TokenDataset::open(&out).unwrap();
    assert_eq!(ds.tokenizer().scheme, "hf");
    assert!(ds.tokenizer().hf_tokenizer_json.is_some());
    // BPE tokens concatenate back to the sequence.
    let first = std::fs::read_to_string(test_data("gue_prom_core_all/dev.csv")).unwrap();
    let seq = first
        .lines()
        .nth(1)
        .unwrap()
        .split(',')
        .next()
        .unwrap()
        .to_string();
    assert_eq!(decode(&ds, 0), seq);
    let b = ds.batch(&[0]).unwrap();
    assert_eq!(b.input_ids[0], 2, "[CLS] is id 2 in this tokenizer");
}

#[test]
fn shards_open_as_one_dataset() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s.safetensors");
    run_ok(&[
        test_data("gue_prom_core_all/test.csv").to_str().unwrap(),
        "--shard-records",
        "200",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(!out.exists());
    for i in 0..3 {
        assert!(dir.path().join(format!("s.{i:05}.safetensors")).exists());
    }
    let ds = TokenDataset::open(&out).unwrap();
    assert_eq!(ds.len(), 500);
    let index = ds.read_index().unwrap();
    assert_eq!(index[450].shard, 2);
    assert_eq!(ds.batch(&[450]).unwrap().labels.unwrap().len(), 1);
}

#[test]
fn outputs_open_in_python() {
    let check = Command::new("python3")
        .args(["-c", "import numpy, safetensors"])
        .output();
    if !matches!(check, Ok(ref o) if o.status.success()) {
        if std::env::var_os("LUMINOME_REQUIRE_PYTHON").is_some() {
            panic!("numpy and safetensors must be importable (LUMINOME_REQUIRE_PYTHON is set)");
        }
        eprintln!("skipped: python3 with numpy + safetensors not available");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("p.safetensors");
    run_ok(&[
        test_data("gue_prom_core_all/test.csv").to_str().unwrap(),
        "--max-length",
        "72",
        "-o",
        out.to_str().unwrap(),
    ]);
    let script = r#"
import sys, json, csv
from safetensors.numpy import load_file
from safetensors import safe_open
d = load_file(sys.argv[1])
meta = json.loads(safe_open(sys.argv[1], "np").metadata()["luminome"])
vocab = meta["tokenizer"]["vocab"]
assert d["input_ids"].dtype.name == "uint8" and d["input_ids"].shape == (500, 72), d["input_ids"].shape
assert d["labels"].dtype.name == "int64"
rows = list(csv.DictReader(open(sys.argv[2])))
for i, r in enumerate(rows):
    s = "".join(vocab[t] for t in d["input_ids"][i] if not vocab[t].startswith("["))
    assert s == r["sequence"], i
    assert int(r["label"]) == int(d["labels"][i])
index = list(csv.DictReader(open(sys.argv[3]), delimiter="\t"))
assert len(index) == 500 and index[0]["name"] == "row1"
print("ok")
"#;
    let o = Command::new("python3")
        .args([
            "-c",
            script,
            out.to_str().unwrap(),
            test_data("gue_prom_core_all/test.csv").to_str().unwrap(),
            dir.path().join("p.index.tsv").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

// ---- bad input: each refused with file + line/record, non-zero exit, nothing written ----

fn out_in(dir: &Path) -> (PathBuf, String) {
    let out_dir = dir.join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let out = out_dir.join("x.safetensors");
    let s = out.to_str().unwrap().to_string();
    (out_dir, s)
}

#[test]
fn refuses_empty_files() {
    let dir = tempfile::tempdir().unwrap();
    let (out_dir, out) = out_in(dir.path());
    let fa = write(dir.path(), "empty.fa", b"");
    assert_refused(
        &[fa.to_str().unwrap(), "-o", &out],
        &out_dir,
        &["empty.fa", "no FASTA/FASTQ records"],
    );
    let csv = write(dir.path(), "empty.csv", b"");
    assert_refused(
        &[csv.to_str().unwrap(), "-o", &out],
        &out_dir,
        &["empty.csv", "empty"],
    );
    let header_only = write(dir.path(), "header.csv", b"sequence,label\n");
    assert_refused(
        &[header_only.to_str().unwrap(), "-o", &out],
        &out_dir,
        &["header.csv", "no data rows"],
    );
}

#[test]
fn refuses_fasta_without_records() {
    let dir = tempfile::tempdir().unwrap();
    let (out_dir, out) = out_in(dir.path());
    let fa = write(dir.path(), "blank.fa", b"\n\n\n");
    assert_refused(
        &[fa.to_str().unwrap(), "-o", &out],
        &out_dir,
        &["blank.fa", "no FASTA/FASTQ records"],
    );
    let fa = write(dir.path(), "text.fa", b"\nACGTACGT\n");
    assert_refused(
        &[fa.to_str().unwrap(), "-o", &out],
        &out_dir,
        &["text.fa: line 2", "expected a FASTA"],
    );
}

#[test]
fn refuses_a_record_without_sequence() {
    let dir = tempfile::tempdir().unwrap();
    let (out_dir, out) = out_in(dir.path());
    let fa = write(dir.path(), "r.fa", b">one\nACGT\n>two\n>three\nGG\n");
    assert_refused(
        &[fa.to_str().unwrap(), "-o", &out],
        &out_dir,
        &["r.fa: record 2 (two)", "no sequence"],
    );
}

#[test]
fn refuses_truncated_gzip() {
    let dir = tempfile::tempdir().unwrap();
    let (out_dir, out) = out_in(dir.path());
    let gz = std::fs::read(test_data("ecoli/ecoli_50kb.fa.gz")).unwrap();
    let cut = write(dir.path(), "cut.fa.gz", &gz[..gz.len() / 2]);
    assert_refused(
        &[cut.to_str().unwrap(), "-o", &out],
        &out_dir,
        &["cut.fa.gz", "record 1", "truncated"],
    );
}

#[test]
fn accepts_crlf_and_lowercase() {
    let dir = tempfile::tempdir().unwrap();
    let fa = write(
        dir.path(),
        "w.fa",
        b">r1 desc\r\nACgt\r\nnN\r\n>r2\r\nTTTT\r\n",
    );
    let out = dir.path().join("w.safetensors");
    run_ok(&[
        fa.to_str().unwrap(),
        "--soft-mask",
        "-o",
        out.to_str().unwrap(),
    ]);
    let ds = TokenDataset::open(&out).unwrap();
    assert_eq!(decode(&ds, 0), "ACGTNN");
    assert_eq!(
        ds.batch(&[0]).unwrap().soft_mask.unwrap(),
        vec![0, 0, 0, 1, 1, 1, 0, 0]
    );
    assert_eq!(decode(&ds, 1), "TTTT");
}

#[test]
fn iupac_codes_map_to_n_or_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let fa = write(dir.path(), "iupac.fa", b">r1\nACGTRYK\n");
    let out = dir.path().join("i.safetensors");
    let log = run_ok(&[fa.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert!(log.contains("changed to N: K=1 R=1 Y=1"), "{log}");
    assert_eq!(decode(&TokenDataset::open(&out).unwrap(), 0), "ACGTNNN");
    let (out_dir, out) = out_in(dir.path());
    assert_refused(
        &[fa.to_str().unwrap(), "--non-acgt", "error", "-o", &out],
        &out_dir,
        &["iupac.fa: record 1 (r1)", "position 5", "'R'"],
    );
}

#[test]
fn refuses_a_table_without_the_named_column() {
    let dir = tempfile::tempdir().unwrap();
    let (out_dir, out) = out_in(dir.path());
    let csv = test_data("gue_prom_core_all/dev.csv");
    assert_refused(
        &[
            csv.to_str().unwrap(),
            "--sequence-column",
            "seq",
            "-o",
            &out,
        ],
        &out_dir,
        &["dev.csv: line 1", "no column named \"seq\""],
    );
}

#[test]
fn refuses_a_label_that_is_not_an_integer() {
    let dir = tempfile::tempdir().unwrap();
    let (out_dir, out) = out_in(dir.path());
    let csv = write(dir.path(), "l.csv", b"sequence,label\nACGT,1\nACGG,yes\n");
    assert_refused(
        &[csv.to_str().unwrap(), "-o", &out],
        &out_dir,
        &["l.csv: line 3", "\"yes\" is not an integer"],
    );
}

#[test]
fn refuses_bed_intervals_outside_the_reference() {
    let dir = tempfile::tempdir().unwrap();
    let (out_dir, out) = out_in(dir.path());
    let fa = test_data("chr22_slice/chr22_slice.fa");
    let past = test_data("chr22_slice/bad_past_end.bed");
    assert_refused(
        &[
            past.to_str().unwrap(),
            "--reference",
            fa.to_str().unwrap(),
            "-o",
            &out,
        ],
        &out_dir,
        &["bad_past_end.bed: line 1", "past the end of chr22_slice"],
    );
    let unknown = test_data("chr22_slice/bad_unknown_chrom.bed");
    assert_refused(
        &[
            unknown.to_str().unwrap(),
            "--reference",
            fa.to_str().unwrap(),
            "-o",
            &out,
        ],
        &out_dir,
        &[
            "bad_unknown_chrom.bed: line 1",
            "\"chrUn_nonexistent\" is not in the reference",
        ],
    );
}

#[test]
fn refuses_a_missing_output_folder() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no/such/dir/x.safetensors");
    let csv = test_data("gue_prom_core_all/dev.csv");
    let out = bin()
        .args([csv.to_str().unwrap(), "-o", missing.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let msg = String::from_utf8_lossy(&out.stderr);
    assert!(
        msg.contains("output folder") && msg.contains("does not exist"),
        "{msg}"
    );
    assert!(!dir.path().join("no").exists());
}

#[test]
fn refuses_records_too_long_with_overflow_error() {
    let dir = tempfile::tempdir().unwrap();
    let (out_dir, out) = out_in(dir.path());
    let csv = test_data("gue_prom_core_all/dev.csv");
    assert_refused(
        &[
            csv.to_str().unwrap(),
            "--max-length",
            "50",
            "--overflow",
            "error",
            "-o",
            &out,
        ],
        &out_dir,
        &["dev.csv: line 2", "longer than the maximum of 48"],
    );
}

#[test]
fn help_has_an_example_and_version_is_one_line() {
    let help = bin().arg("--help").output().unwrap();
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(
        text.contains("Examples:") && text.contains("luminome-tokenize test-data/"),
        "{text}"
    );
    let v = bin().arg("--version").output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&v.stdout).trim(),
        format!("luminome-tokenize {}", env!("CARGO_PKG_VERSION"))
    );
}
