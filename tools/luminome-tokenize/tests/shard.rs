//! `--shard I/N` and `--gather`: tokenizing split over cluster jobs gives the dataset one job
//! gives, byte for byte — its files, their index and their metadata.

mod common;
use common::*;

/// Files by name, with their bytes.
type Files = Vec<(String, Vec<u8>)>;

/// Every file in `dir` whose name starts with `stem`, by name, with its bytes.
fn files(dir: &Path, stem: &str) -> Files {
    let mut out: Files = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name().to_string_lossy().starts_with(stem))
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            (name, std::fs::read(e.path()).unwrap())
        })
        .collect();
    out.sort();
    out
}

/// Runs `args` as one job, then as `n` parts gathered to the same `-o` (the dataset records
/// its path and command); returns both runs' files.
fn one_and_sharded(dir: &Path, args: &[&str], n: usize) -> (Files, Files) {
    let (out_dir, parts_dir) = (dir.join("out"), dir.join("parts"));
    std::fs::create_dir_all(&out_dir).unwrap();
    std::fs::create_dir_all(&parts_dir).unwrap();
    let out = out_dir.join("ds.safetensors");
    let out = out.to_str().unwrap();
    let with = |extra: &[&str]| -> String {
        let mut a: Vec<&str> = args.to_vec();
        a.extend(extra);
        run_ok(&a)
    };
    with(&["-o", out]);
    let one = files(&out_dir, "ds");
    std::fs::remove_dir_all(&out_dir).unwrap();
    std::fs::create_dir_all(&out_dir).unwrap();
    let parts: Vec<String> = (1..=n)
        .map(|i| {
            let part = parts_dir.join(format!("{i}.part.safetensors"));
            let part = part.to_str().unwrap().to_string();
            with(&["--shard", &format!("{i}/{n}"), "-o", &part]);
            part
        })
        .collect();
    // Parts given in any order.
    let mut gather = vec!["-o", out, "--gather"];
    gather.extend(parts.iter().rev().map(String::as_str));
    let log = with(&gather);
    assert!(log.contains(&format!("gathered from {n} parts")), "{log}");
    (one, files(&out_dir, "ds"))
}

fn assert_same(one: &Files, sharded: &Files) {
    let names = |v: &Files| v.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    assert_eq!(names(one), names(sharded));
    for ((name, a), (_, b)) in one.iter().zip(sharded) {
        assert!(
            a == b,
            "{name} differs between one job and the gathered parts"
        );
    }
}

#[test]
fn genome_windows_of_several_inputs_gather_to_the_one_job_dataset_and_its_shards() {
    let dir = tempfile::tempdir().unwrap();
    let ecoli = test_data("ecoli/ecoli_50kb.fa.gz");
    let worm = test_data("celegans/celegans_small.fa");
    // ~6,000 windows of the two files: seven blocks of units, dealt over three parts; rows
    // with too many N dropped, both strands, soft mask, numbered output shards.
    let args = [
        ecoli.to_str().unwrap(),
        worm.to_str().unwrap(),
        "--scheme",
        "kmer",
        "-k",
        "3",
        "--window",
        "24",
        "--stride",
        "16",
        "--overflow",
        "window",
        "--rc",
        "both",
        "--max-n",
        "0.1",
        "--soft-mask",
        "--label",
        "1,0",
        "--shard-records",
        "2500",
        "--threads",
        "3",
    ];
    let (one, sharded) = one_and_sharded(dir.path(), &args, 3);
    assert!(
        one.len() >= 4,
        "several output shards and the index: {one:?}",
        one = one.iter().map(|f| &f.0).collect::<Vec<_>>()
    );
    assert_same(&one, &sharded);
}

#[test]
fn table_rows_padded_to_the_longest_gather_to_the_one_job_dataset() {
    let dir = tempfile::tempdir().unwrap();
    let train = test_data("gue_prom_core_all/train.csv");
    let dev = test_data("gue_prom_core_all/dev.csv");
    // No --max-length: rows are padded to the longest, which only the gather knows.
    let args = [train.to_str().unwrap(), dev.to_str().unwrap()];
    let (one, sharded) = one_and_sharded(dir.path(), &args, 2);
    assert_same(&one, &sharded);
}

#[test]
fn more_parts_than_blocks_leaves_empty_parts_that_still_gather() {
    let dir = tempfile::tempdir().unwrap();
    let bed = test_data("chr22_slice/intervals.bed");
    let fa = test_data("chr22_slice/chr22_slice.fa");
    let args = [
        bed.to_str().unwrap(),
        "--reference",
        fa.to_str().unwrap(),
        "--width",
        "200",
        "--rc",
        "both",
    ];
    let (one, sharded) = one_and_sharded(dir.path(), &args, 4);
    assert_same(&one, &sharded);
}

#[test]
fn a_gather_refuses_missing_foreign_or_repeated_parts_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let fa = test_data("ecoli/ecoli_50kb.fa");
    let fa = fa.to_str().unwrap();
    let part = |spec: &str, window: &str, name: &str| {
        let p = dir.path().join(name);
        run_ok(&[
            fa,
            "--window",
            window,
            "--overflow",
            "window",
            "--shard",
            spec,
            "-o",
            p.to_str().unwrap(),
        ]);
        p.to_str().unwrap().to_string()
    };
    let p1 = part("1/3", "32", "a1.part.safetensors");
    let p2 = part("2/3", "32", "a2.part.safetensors");
    let other = part("3/3", "64", "b3.part.safetensors");
    let out_dir = dir.path().join("out");
    std::fs::create_dir_all(&out_dir).unwrap();
    let out = out_dir.join("ds.safetensors");
    let out = out.to_str().unwrap();
    let gather = |parts: &[&str], expect: &[&str]| {
        let mut a = vec![
            fa,
            "--window",
            "32",
            "--overflow",
            "window",
            "-o",
            out,
            "--gather",
        ];
        a.extend(parts);
        assert_refused(&a, &out_dir, expect);
    };
    gather(&[&p1, &p2], &["parts 3/3 are missing"]);
    gather(
        &[&p1, &p2, &other],
        &["b3.part.safetensors", "a part of another run"],
    );
    gather(&[&p1, &p1, &p2], &["are both part 1/3"]);
    // A part must be a part.
    let table = test_data("gue_prom_core_all/dev.csv");
    assert_refused(
        &[
            fa,
            "--window",
            "32",
            "--overflow",
            "window",
            "-o",
            out,
            "--gather",
            table.to_str().unwrap(),
        ],
        &out_dir,
        &["dev.csv"],
    );
    // --split shuffles whole records of the whole input: not sharded.
    assert_refused(
        &[
            fa, "--label", "1", "--split", "0.8,0.2", "--shard", "1/2", "-o", out,
        ],
        &out_dir,
        &["--split"],
    );
}

#[test]
fn a_huggingface_tokenizer_on_the_pool_gives_the_one_thread_rows() {
    // From --threads 2 a HuggingFace tokenizer runs on the pool; rows keep input order.
    let dir = tempfile::tempdir().unwrap();
    let fa = test_data("ecoli/ecoli_50kb.fa.gz");
    let tok = test_data("tokenizers/dna_bpe_256.json");
    let run = |threads: &str| {
        let out = dir.path().join(format!("t{threads}.safetensors"));
        run_ok(&[
            fa.to_str().unwrap(),
            "--scheme",
            "hf",
            "--tokenizer",
            tok.to_str().unwrap(),
            "--window",
            "32",
            "--overflow",
            "window",
            "--max-length",
            "34",
            "--threads",
            threads,
            "-o",
            out.to_str().unwrap(),
        ]);
        let ds = TokenDataset::open(&out).unwrap();
        let batch = ds.batch(&(0..ds.len()).collect::<Vec<_>>()).unwrap();
        (ds.len(), batch.input_ids)
    };
    let one = run("1");
    assert!(one.0 > 1024, "more than one batch of windows: {}", one.0);
    assert_eq!(one, run("2"));
}
