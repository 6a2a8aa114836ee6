//! `--shard I/N` and `--gather PARTS`: the parts of a run, gathered, give the dataset, samples
//! table and region table one job writes, byte for byte; parts of another run, or a missing
//! part, are refused with nothing written.

mod common;

use common::*;

/// Small scan chunks, so the test slice's 115 peaks make several chunks to share out.
fn sharded_args() -> Vec<String> {
    let mut args = base_args();
    args.extend(["--scan-chunk-bp".to_string(), "3000".to_string()]);
    args
}

fn outputs(out: &Path) -> Vec<(String, Vec<u8>)> {
    let stem = out.file_stem().unwrap().to_string_lossy().into_owned();
    ["safetensors", "samples.tsv", "regions.tsv"]
        .iter()
        .map(|ext| {
            let p = out.with_file_name(format!("{stem}.{ext}"));
            (ext.to_string(), std::fs::read(&p).unwrap_or_default())
        })
        .collect()
}

/// Runs parts 1..=n of `args` into `dir` and returns their paths.
fn parts(args: &[String], dir: &Path, n: usize) -> Vec<String> {
    (1..=n)
        .map(|i| {
            let part = dir.join(format!("p{i}.part.safetensors"));
            let mut a = args.to_vec();
            a.extend(["--shard".to_string(), format!("{i}/{n}")]);
            let o = run(&a, &part);
            assert!(o.status.success(), "part {i}/{n}: {}", stderr(&o));
            part.to_string_lossy().into_owned()
        })
        .collect()
}

fn gather(args: &[String], parts: &[String], out: &Path) -> Output {
    let mut a = args.to_vec();
    a.push("--gather".into());
    a.extend(parts.iter().cloned());
    run(&a, out)
}

/// `bytes` with every `from` replaced by `to` (of the same length: the header's size stays).
fn replace_bytes(bytes: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = bytes.to_vec();
    let mut i = 0;
    while i + from.len() <= out.len() {
        if &out[i..i + from.len()] == from {
            out[i..i + from.len()].copy_from_slice(to);
            i += from.len();
        } else {
            i += 1;
        }
    }
    out
}

fn assert_gather_is_one_job(args: Vec<String>, n: usize) {
    let dir = tempfile::tempdir().unwrap();
    // The same file names in folders a/ and b/: the recorded command differs only there.
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let one = a.join("d.safetensors");
    let o = run(&args, &one);
    assert!(o.status.success(), "{}", stderr(&o));
    let parts = parts(&args, dir.path(), n);
    let gathered = b.join("d.safetensors");
    let o = gather(&args, &parts, &gathered);
    assert!(o.status.success(), "{}", stderr(&o));
    let (a, b) = (a.to_string_lossy(), b.to_string_lossy());
    for ((ext, x), (_, y)) in outputs(&one).iter().zip(outputs(&gathered)) {
        assert!(!x.is_empty(), "{ext} written");
        assert!(
            *x == replace_bytes(&y, b.as_bytes(), a.as_bytes()),
            "{n} parts: the gathered {ext} differs from one job's"
        );
    }
}

#[test]
fn three_parts_gather_into_one_jobs_bytes() {
    // 2 cell types over 3 parts: part 3 counts none; regions split across chunk bounds.
    assert_gather_is_one_job(sharded_args(), 3);
}

#[test]
fn gets_scale_over_every_chromosome_survives_sharding() {
    let mut args = sharded_args();
    args.extend(["--feature-scale".to_string(), "get".to_string()]);
    assert_gather_is_one_job(args, 2);
}

#[test]
fn parts_of_another_run_or_a_missing_part_are_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let args = sharded_args();
    let mut ps = parts(&args, dir.path(), 3);
    let out = dir.path().join("g.safetensors");
    let refused = |o: Output, needle: &str| {
        let err = stderr(&o);
        assert!(!o.status.success() && err.contains(needle), "{err}");
        assert!(!err.contains("panicked"), "{err}");
        assert!(
            outputs(&out).iter().all(|(_, b)| b.is_empty()),
            "nothing written"
        );
    };
    refused(gather(&args, &ps[..2], &out), "parts 3/3 are missing");
    let mut other = args.clone();
    other.extend(["--pvalue".to_string(), "1e-3".to_string()]);
    let elsewhere = dir.path().join("other");
    std::fs::create_dir_all(&elsewhere).unwrap();
    ps[2] = parts(&other, &elsewhere, 3).remove(2);
    refused(gather(&args, &ps, &out), "a part of another run");
}
