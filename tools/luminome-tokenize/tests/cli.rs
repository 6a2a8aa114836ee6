//! End-to-end tests of `luminome-tokenize` on the bundled test-data: outputs decode back to the
//! input, and each kind of bad input is refused with its file and line/record and no output.

mod common;

use common::*;

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
        let interval = row.interval.as_ref().unwrap();
        assert_eq!(
            (interval.chrom.as_str(), interval.start, interval.end),
            ("chr22_slice", a as u64, b as u64)
        );
        assert_eq!(interval.region(), format!("chr22_slice:{}-{b}", a + 1));
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
    let index_text =
        std::fs::read_to_string(luminome_io::token_dataset::index_path_for(&out)).unwrap();
    let index_lines: Vec<&str> = index_text.lines().collect();
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
        let interval = index[i].interval.as_ref().unwrap();
        assert_eq!(
            (interval.start, interval.end),
            (start as u64, start as u64 + 200)
        );
        assert_eq!(index[i].strand.to_string(), f[5]);
        // On disk: BED-style chrom/start/end and a 1-based region samtools reads.
        let line = index_lines[i + 1].split('\t').collect::<Vec<_>>();
        assert_eq!(
            line[3..7],
            [
                "chr22_slice".to_string(),
                start.to_string(),
                (start + 200).to_string(),
                format!("chr22_slice:{}-{}", start + 1, start + 200)
            ]
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
    assert_eq!(ds.tokenizer().scheme.name(), "hf");
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
    if !luminome_io::python_probe::python_can_import("numpy, safetensors", "outputs_open_in_python")
    {
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

#[test]
fn more_threads_than_the_machine_has_are_capped_with_a_warning() {
    // --threads 100000 used to hang starting the thread pool.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("dev.safetensors");
    let csv = test_data("gue_prom_core_all/dev.csv");
    let o = bin()
        .args([csv.to_str().unwrap(), "--threads", "100000", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{e}");
    assert!(
        e.contains("--threads 100000 is more than this machine's"),
        "{e}"
    );
    assert_eq!(TokenDataset::open(&out).unwrap().len(), 500);
}

#[test]
fn a_chromosome_on_one_line_gives_the_windows_of_the_wrapped_file() {
    // Windows of a single-line record used to shift the whole buffer per window (quadratic: a
    // 20 Mb line took minutes); the buffer is now dropped in halves. Same rows either way.
    let dir = tempfile::tempdir().unwrap();
    let mut x = 12345u64;
    let seq: String = (0..150_000)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            b"ACGT"[(x >> 62) as usize] as char
        })
        .collect();
    let one = dir.path().join("one.fa");
    std::fs::write(&one, format!(">c\n{seq}\n")).unwrap();
    let wrapped = dir.path().join("wrapped.fa");
    let lines: Vec<&str> = seq
        .as_bytes()
        .chunks(60)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect();
    std::fs::write(&wrapped, format!(">c\n{}\n", lines.join("\n"))).unwrap();
    for stride in ["300", "700"] {
        let mut ids = Vec::new();
        for (input, name) in [(&one, "a"), (&wrapped, "b")] {
            let out = dir.path().join(format!("{name}{stride}.safetensors"));
            run_ok(&[
                input.to_str().unwrap(),
                "--window",
                "500",
                "--stride",
                stride,
                "--overflow",
                "window",
                "-q",
                "-o",
                out.to_str().unwrap(),
            ]);
            let ds = TokenDataset::open(&out).unwrap();
            let all: Vec<usize> = (0..ds.len()).collect();
            ids.push((ds.len(), ds.batch(&all).unwrap().input_ids));
        }
        assert!(ids[0].0 > 200, "{stride}: {} rows", ids[0].0);
        assert!(
            ids[0] == ids[1],
            "stride {stride}: one-line and wrapped FASTA differ"
        );
    }
}

#[test]
fn stdin_is_read_once_and_outputs_are_checked_against_their_format() {
    use std::io::Write as _;
    use std::process::Stdio;
    let dir = tempfile::tempdir().unwrap();
    let gz = std::fs::read(test_data("ecoli/ecoli_50kb.fa.gz")).unwrap();
    // `-` and /dev/stdin: a piped gzip stream (its first bytes were lost when the input was
    // opened twice to sniff the compression).
    for input in ["-", "/dev/stdin"] {
        let out = dir.path().join("piped.safetensors");
        let mut child = bin()
            .args([input, "--window", "500", "--overflow", "window", "-q", "-o"])
            .arg(&out)
            .stdin(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(&gz).unwrap();
        assert!(child.wait().unwrap().success(), "{input}");
        assert_eq!(TokenDataset::open(&out).unwrap().len(), 100, "{input}");
    }
    // A safetensors dataset cannot go to standard output; -o out.npz names another format.
    let csv = test_data("gue_prom_core_all/dev.csv");
    for (out, want) in [("-", "standard output"), ("out.npz", "not a .npz file")] {
        let o = bin()
            .arg(&csv)
            .arg("-o")
            .arg(if out == "-" {
                std::path::PathBuf::from("-")
            } else {
                dir.path().join(out)
            })
            .output()
            .unwrap();
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{e}");
        assert!(e.contains(want), "{e}");
    }
    assert!(!dir.path().join("out.npz").exists());
}

/// A record longer than --max-length keeps only its first bases under the default
/// `--overflow truncate`: the summary says how many rows were cut and what keeps all of them.
#[test]
fn cutting_a_long_record_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let fa = dir.path().join("long.fa");
    let long = "ACGT".repeat(50);
    std::fs::write(&fa, format!(">long\n{long}\n>short\nACGTACGT\n")).unwrap();
    let out = dir.path().join("t.safetensors");
    let args = [fa.to_str().unwrap(), "--max-length", "34", "-o"];
    let log = run_ok(&[&args[..], &[out.to_str().unwrap()]].concat());
    assert!(
        log.contains("1 rows truncated to their first bases") && log.contains("--overflow window"),
        "{log}"
    );
    assert_eq!(decode(&TokenDataset::open(&out).unwrap(), 0), long[..32]);
    // Windows keep every base: nothing is reported as cut.
    let log = run_ok(&[&args[..], &[out.to_str().unwrap(), "--overflow", "window"]].concat());
    assert!(!log.contains("truncated"), "{log}");
}
