//! An interrupted run: SIGTERM removes every temporary file (exit 143, nothing at the output
//! path); after a SIGKILL, which no process can clean up after, the next run into the same
//! folder removes the dead run's temporary files and says so.
#![cfg(unix)]

mod common;

use std::io::Write;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::*;

fn temps(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".luminome.tmp"))
        .collect();
    v.sort();
    v
}

/// Starts tokenizing from a FIFO, feeds it half a record and waits until the run's temporary
/// files exist: the run is then blocked mid-way, reading.
fn start_blocked(dir: &Path) -> (Child, std::fs::File) {
    let fifo = dir.join("in.fa");
    if !fifo.exists() {
        assert!(Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
    }
    let child = bin()
        .arg(&fifo)
        .arg("-o")
        .arg(dir.join("out.safetensors"))
        .args(["--threads", "1"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut w = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
    w.write_all(b">a\nACGTACGT\n>b\nACG").unwrap();
    w.flush().unwrap();
    let t0 = Instant::now();
    while temps(dir).is_empty() {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "no temporary files appeared"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    (child, w)
}

#[test]
fn sigterm_removes_the_temporary_files_and_a_later_run_sweeps_a_killed_ones() {
    let dir = tempfile::tempdir().unwrap();
    let (child, w) = start_blocked(dir.path());
    let pid = child.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    let out = child.wait_with_output().unwrap();
    drop(w);
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(143), "{e}");
    assert!(e.contains("interrupted (SIGTERM)"), "{e}");
    assert!(temps(dir.path()).is_empty(), "{:?}", temps(dir.path()));
    assert!(!dir.path().join("out.safetensors").exists());

    // SIGKILL: the temporary files stay; the next run in the folder removes them.
    let (mut child, w) = start_blocked(dir.path());
    child.kill().unwrap();
    child.wait().unwrap();
    drop(w);
    let left = temps(dir.path());
    assert!(!left.is_empty());
    let csv = test_data("gue_prom_core_all/dev.csv");
    let e = run_ok(&[
        csv.to_str().unwrap(),
        "-o",
        dir.path().join("dev.safetensors").to_str().unwrap(),
    ]);
    assert!(
        e.contains(&format!(
            "removed {} temporary file(s) that an interrupted run left",
            left.len()
        )),
        "{e}"
    );
    assert!(temps(dir.path()).is_empty());
}
