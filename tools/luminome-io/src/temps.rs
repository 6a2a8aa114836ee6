//! Temporary files of a run: named so that they can be recognised, removed when the run is
//! interrupted (SIGINT/SIGTERM), and swept by a later run when a SIGKILL left them behind.
//!
//! Every temporary file a tool writes in an output folder is named
//! `.<what>.<pid>.<random>.luminome.tmp` (`<what>`: the output's file name, or `luminome-spill`
//! for the spill files of dataset writers) and registered here while it exists. On SIGINT or
//! SIGTERM the binaries (`luminome_cli::run_main`) call [`remove_all`], which deletes every
//! registered temporary file and every output folder the run created that is still empty. A
//! process killed outright (SIGKILL, OOM) cannot clean up: the next run writing into the same
//! folder removes the temporary files whose process no longer exists ([`sweep_stale`], on Linux,
//! where `/proc` tells) and says so on stderr.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The suffix of every temporary file.
pub const SUFFIX: &str = ".luminome.tmp";

static LIVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
/// Held while a group of outputs that belong together is renamed into place (a checkpoint and
/// its training state); the signal handler takes it before cleaning up, so an interruption lands
/// before or after the whole group, never inside it.
static COMMITTING: Mutex<()> = Mutex::new(());
/// Outputs renamed to their final names by this run.
static COMMITTED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Runs `f` (renames of outputs that must appear together) so that SIGINT/SIGTERM cannot
/// interrupt it: the handler waits for it to finish.
pub fn commit_section<T>(f: impl FnOnce() -> T) -> T {
    let _guard = COMMITTING.lock().unwrap_or_else(|e| e.into_inner());
    f()
}

/// Waits until no [`commit_section`] runs and keeps others from starting (the signal handler,
/// before it cleans up and exits).
pub fn block_commits() -> std::sync::MutexGuard<'static, ()> {
    COMMITTING.lock().unwrap_or_else(|e| e.into_inner())
}

/// Records that an output reached its final name.
pub fn note_committed() {
    let n = COMMITTED.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
    if abort_after_commits() == Some(n) {
        // A process killed outright, as SIGKILL or an OOM kill would: no cleanup runs.
        std::process::abort();
    }
}

/// Fault injection for the crash tests (docs/reliability.md): with
/// `LUMINOME_FAULT_ABORT_AFTER_COMMITS=N` in the environment the process aborts right after its
/// N-th output reaches its final name, so a test can stop a run at every point of a commit.
fn abort_after_commits() -> Option<usize> {
    static AT: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
    *AT.get_or_init(|| {
        std::env::var("LUMINOME_FAULT_ABORT_AFTER_COMMITS")
            .ok()
            .and_then(|v| v.parse().ok())
    })
}

/// Renames a committed output to another final name (a file committed under a pending name, then
/// moved into place), counted as a commit.
pub fn rename_committed(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::rename(from, to)?;
    note_committed();
    Ok(())
}

/// How many outputs this run has committed.
pub fn committed() -> usize {
    COMMITTED.load(std::sync::atomic::Ordering::SeqCst)
}
static CREATED_DIRS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
static SWEPT: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// The `tempfile` prefix of a temporary file for `what` (an output's file name).
pub fn prefix(what: &str) -> String {
    format!(".{what}.{}.", std::process::id())
}

pub fn register(path: &Path) {
    if let Ok(mut v) = LIVE.lock() {
        v.push(path.to_path_buf());
    }
}

/// Unregisters its path when dropped (the file itself is removed by its owner).
pub struct Registered(PathBuf);

impl Registered {
    pub fn new(path: &Path) -> Self {
        register(path);
        Self(path.to_path_buf())
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        unregister(&self.0);
    }
}

pub fn unregister(path: &Path) {
    if let Ok(mut v) = LIVE.lock() {
        v.retain(|p| p != path);
    }
}

/// An output folder this run created: removed on interruption while it is still empty.
pub fn register_created_dir(dir: &Path) {
    if let Ok(mut v) = CREATED_DIRS.lock() {
        v.push(dir.to_path_buf());
    }
}

/// Removes every registered temporary file and every created folder left empty; returns how
/// many files were removed. Called on SIGINT/SIGTERM (and safe to call at any time).
pub fn remove_all() -> usize {
    let files: Vec<PathBuf> = LIVE.lock().map(|v| v.clone()).unwrap_or_default();
    let removed = files
        .iter()
        .filter(|p| std::fs::remove_file(p).is_ok())
        .count();
    let dirs: Vec<PathBuf> = CREATED_DIRS.lock().map(|v| v.clone()).unwrap_or_default();
    for d in dirs.iter().rev() {
        // Only when empty: remove_dir refuses a folder with anything in it.
        let _ = std::fs::remove_dir(d);
    }
    removed
}

/// The process id a temporary file name carries, if it is one of ours.
fn owner(name: &str) -> Option<u32> {
    let stem = name.strip_prefix('.')?.strip_suffix(SUFFIX)?;
    let mut parts = stem.rsplit('.');
    let _random = parts.next()?;
    parts.next()?.parse().ok()
}

/// Removes, once per folder and run, the temporary files in `dir` left by Luminome processes
/// that no longer run (Linux: no `/proc/<pid>`); returns their names. Elsewhere nothing is
/// removed.
pub fn sweep_stale(dir: &Path) -> Vec<String> {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    {
        let Ok(mut seen) = SWEPT.lock() else {
            return Vec::new();
        };
        if seen.contains(&dir) {
            return Vec::new();
        }
        seen.push(dir.clone());
    }
    if !Path::new("/proc/self").exists() {
        return Vec::new();
    }
    let me = std::process::id();
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = owner(&name) else { continue };
        if pid != me
            && !Path::new(&format!("/proc/{pid}")).exists()
            && std::fs::remove_file(e.path()).is_ok()
        {
            removed.push(name);
        }
    }
    if !removed.is_empty() {
        eprintln!(
            "note: removed {} temporary file(s) that an interrupted run left in {}: {}",
            removed.len(),
            dir.display(),
            removed.join(", ")
        );
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_the_process_and_stale_ones_are_swept() {
        assert_eq!(owner(".out.tsv.1234.AbC123.luminome.tmp"), Some(1234));
        assert_eq!(owner(".luminome-spill.77.xYz.luminome.tmp"), Some(77));
        assert_eq!(owner("out.tsv"), None);
        assert_eq!(owner(".out.tsv.x.y.tmp"), None);
        let dir = tempfile::tempdir().unwrap();
        // A pid that cannot be running (above the kernel's maximum) and our own.
        let dead = dir.path().join(".a.tsv.4194305.q1.luminome.tmp");
        let alive = dir
            .path()
            .join(format!(".b.tsv.{}.q2.luminome.tmp", std::process::id()));
        let other = dir.path().join("keep.tsv");
        for p in [&dead, &alive, &other] {
            std::fs::write(p, "x").unwrap();
        }
        let removed = sweep_stale(dir.path());
        if Path::new("/proc/self").exists() {
            assert_eq!(removed, vec![".a.tsv.4194305.q1.luminome.tmp".to_string()]);
            assert!(!dead.exists());
        }
        assert!(alive.exists() && other.exists());
        // Once per folder and run.
        std::fs::write(&dead, "x").unwrap();
        assert!(sweep_stale(dir.path()).is_empty());
    }

    #[test]
    fn remove_all_deletes_registered_files_and_empty_created_folders() {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("run");
        std::fs::create_dir(&run).unwrap();
        register_created_dir(&run);
        let t = dir.path().join(".x.1.r.luminome.tmp");
        std::fs::write(&t, "x").unwrap();
        register(&t);
        assert!(remove_all() >= 1);
        assert!(!t.exists() && !run.exists());
        unregister(&t);
    }
}

#[cfg(test)]
mod commit_tests {
    use super::*;

    #[test]
    fn a_signal_waits_for_a_commit_section_to_finish() {
        let (started_tx, started_rx) = std::sync::mpsc::channel();
        let worker = std::thread::spawn(move || {
            commit_section(|| {
                started_tx.send(()).unwrap();
                std::thread::sleep(std::time::Duration::from_millis(150));
                std::time::Instant::now()
            })
        });
        started_rx.recv().unwrap();
        // What the signal handler does first: it cannot get in before the section ends.
        let guard = block_commits();
        let got_in = std::time::Instant::now();
        let section_ended = worker.join().unwrap();
        assert!(got_in >= section_ended);
        drop(guard);
        let before = committed();
        note_committed();
        assert!(committed() > before);
    }
}
