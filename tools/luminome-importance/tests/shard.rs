//! `--shard I/N` and `--gather`: explaining a classifier's records split over cluster jobs
//! gives the TSV, npz and bedGraph one job gives, byte for byte.

use std::path::{Path, PathBuf};
use std::process::Command;

use luminome_io::token_dataset::{
    IndexRow, Interval, TokenDatasetWriter, TokenDatasetWriterOptions, TokenRow,
};

fn checkpoint() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../luminome-predict/tests/fixtures/torch_reference/tiny_gated.safetensors")
}

/// 40 labelled 10-base records on one chromosome, each overlapping the next by 5 bases (the
/// track averages them), padded to 12 tokens.
fn dataset(dest: &Path) {
    let mut w = TokenDatasetWriter::new(TokenDatasetWriterOptions {
        dest: dest.to_path_buf(),
        tokenizer: luminome_engine::testing::nucleotide_tokenizer(),
        max_length: Some(12),
        has_labels: true,
        has_soft_mask: false,
        shard_records: None,
        rc: "none".into(),
        sources: vec![],
        tool: "luminome-importance tests".into(),
        tool_version: "0".into(),
        command_line: String::new(),
    })
    .unwrap();
    let genome: Vec<u8> = (0..220u64)
        .map(|i| b"ACGT"[((i * 7 + i * i / 3) % 4) as usize])
        .collect();
    for i in 0..40u64 {
        let start = i * 5;
        let seq = &genome[start as usize..start as usize + 10];
        let mut ids = luminome_engine::testing::encode(seq);
        ids.resize(12, 0);
        w.push(TokenRow {
            ids: &ids,
            soft_mask: None,
            label: Some((i % 2) as i64),
            index: IndexRow {
                record: i,
                shard: 0,
                name: format!("r{i}"),
                interval: Some(Interval {
                    chrom: "chr1".into(),
                    start,
                    end: start + 10,
                }),
                seq_length: 10,
                window_offset: 0,
                window_length: 10,
                strand: '+',
            },
        })
        .unwrap();
    }
    w.finish().unwrap();
}

fn importance(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_luminome-importance"))
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{args:?}\n{stderr}");
    stderr
}

/// One job's TSV, npz and bedGraph against `n` parts gathered, for `method`.
fn one_job_and_gathered(dir: &Path, method: &[&str], n: usize) {
    let ds = dir.join("ds.safetensors");
    if !ds.exists() {
        dataset(&ds);
    }
    let (ck, ds) = (checkpoint(), ds.to_str().unwrap().to_string());
    let common: Vec<&str> = [
        "--checkpoint",
        ck.to_str().unwrap(),
        "--dataset",
        &ds,
        "--batch-size",
        "4",
        "--threads",
        "1",
    ]
    .into_iter()
    .chain(method.iter().copied())
    .collect();
    let outputs = |stem: &str| -> Vec<String> {
        ["tsv", "npz", "bedgraph"]
            .iter()
            .map(|e| {
                dir.join(format!("{stem}.{e}"))
                    .to_str()
                    .unwrap()
                    .to_string()
            })
            .collect()
    };
    let with_outputs = |stem: &str, extra: &[&str]| {
        let o = outputs(stem);
        let mut a = common.clone();
        a.extend(["-o", &o[0], "--npz", &o[1], "--bedgraph", &o[2]]);
        a.extend(extra);
        importance(&a);
        o
    };
    let one = with_outputs("one", &[]);
    let parts: Vec<String> = (1..=n)
        .map(|i| {
            let part = dir.join(format!("p{i}.part.safetensors"));
            let part = part.to_str().unwrap().to_string();
            let mut a = common.clone();
            let spec = format!("{i}/{n}");
            a.extend(["--npz", "unused.npz", "--bedgraph", "unused.bedgraph"]);
            a.extend(["--shard", &spec, "-o", &part]);
            importance(&a);
            part
        })
        .collect();
    let mut gather = vec!["--gather"];
    gather.extend(parts.iter().rev().map(String::as_str));
    let gathered = with_outputs("gathered", &gather);
    for (a, b) in one.iter().zip(&gathered) {
        let (x, y) = (std::fs::read(a).unwrap(), std::fs::read(b).unwrap());
        assert!(
            !x.is_empty() && x == y,
            "{method:?}: {b} differs from one job's {a}"
        );
    }
}

#[test]
fn integrated_gradients_ism_and_deeplift_gather_to_the_one_job_outputs() {
    let dir = tempfile::tempdir().unwrap();
    one_job_and_gathered(dir.path(), &["--method", "ig", "--ig-steps", "4"], 3);
    one_job_and_gathered(dir.path(), &["--method", "ism", "--only-label", "1"], 2);
    one_job_and_gathered(
        dir.path(),
        &[
            "--method",
            "deepliftshap",
            "--shuffles",
            "3",
            "--records",
            "13",
        ],
        4,
    );
}

#[test]
fn a_gather_refuses_parts_of_another_run_or_missing_parts_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let ds = dir.path().join("ds.safetensors");
    dataset(&ds);
    let (ck, ds) = (checkpoint(), ds.to_str().unwrap().to_string());
    let part = |spec: &str, steps: &str, name: &str| {
        let p = dir.path().join(name).to_str().unwrap().to_string();
        importance(&[
            "--checkpoint",
            ck.to_str().unwrap(),
            "--dataset",
            &ds,
            "--method",
            "ig",
            "--ig-steps",
            steps,
            "--shard",
            spec,
            "-o",
            &p,
        ]);
        p
    };
    let (p1, p2_other) = (
        part("1/2", "4", "a.part.safetensors"),
        part("2/2", "8", "b.part.safetensors"),
    );
    let out_dir = dir.path().join("out");
    std::fs::create_dir_all(&out_dir).unwrap();
    let out = out_dir.join("x.tsv");
    let gather = |parts: &[&str], expect: &str| {
        let mut a = vec![
            "--checkpoint",
            ck.to_str().unwrap(),
            "--dataset",
            &ds,
            "--method",
            "ig",
            "--ig-steps",
            "4",
            "-o",
            out.to_str().unwrap(),
            "--gather",
        ];
        a.extend(parts);
        let o = Command::new(env!("CARGO_BIN_EXE_luminome-importance"))
            .args(&a)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains(expect), "{stderr}");
        assert_eq!(
            std::fs::read_dir(&out_dir).unwrap().count(),
            0,
            "files left behind"
        );
    };
    gather(&[&p1], "parts 2/2 are missing");
    gather(&[&p1, &p2_other], "a part of another run");
}
