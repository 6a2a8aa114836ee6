//! What every Luminome binary repeats, in one place: the runtime flags shared by the model tools
//! (`--threads`, `--device`, `--quiet`), setting up the thread pool, progress bars on stderr, run
//! folders, and the command line and version recorded in every output's metadata.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

pub mod hub;
pub mod shard;

/// The version every tool reports and records (one for the whole workspace).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Where and how a model runs: shared by luminome-train, luminome-predict and luminome-importance.
#[derive(Debug, Clone, clap::Args)]
pub struct RuntimeArgs {
    /// Threads (default: all cores).
    #[arg(help_heading = "Runtime", long)]
    pub threads: Option<usize>,

    /// cpu, cuda, cuda:N or metal (CUDA/Metal need a build with --features cuda / metal).
    #[arg(help_heading = "Runtime", long, default_value = "cpu")]
    pub device: String,

    /// No progress or summary on stderr (errors are still reported).
    #[arg(help_heading = "Runtime", short, long)]
    pub quiet: bool,
}

impl RuntimeArgs {
    /// Sets up the thread pool (see [`set_threads`]).
    pub fn apply_threads(&self) {
        set_threads(self.threads);
    }
}

/// Sets the thread count for rayon and candle's matrix multiplications (both read
/// `RAYON_NUM_THREADS`); must run before either starts its pool.
pub fn set_threads(threads: Option<usize>) {
    if let Some(n) = threads.filter(|&n| n > 0) {
        let n = thread_count(Some(n));
        std::env::set_var("RAYON_NUM_THREADS", n.to_string());
        // The global pool may already exist (in tests); the variable still governs candle.
        let _ = rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build_global();
    }
}

/// Runs `f` on one of the global thread pool's workers while the calling thread waits; call it
/// after [`set_threads`]. The engine's parallel ops (gemm, the fused kernels) then start from a
/// pool thread, which runs its share itself, instead of handing every op from the main thread
/// to the pool and back: two thread wake-ups per op, measured 18 % of an inference pass of the
/// benchmark model at one thread and 8 % at two (docs/benchmarks.md, 2026-11-25 night). The
/// numbers computed are the same.
pub fn on_pool<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    rayon::scope(|_| f())
}

/// The worker threads to start for `--threads` (`None` or 0: every core the machine has).
/// More than the machine has only adds contention, and tens of thousands hang a pool's
/// start-up: such a count is capped to the machine's with a warning (the results are the same).
pub fn thread_count(requested: Option<usize>) -> usize {
    let available = std::thread::available_parallelism().map_or(1, |v| v.get());
    match requested.filter(|&n| n > 0) {
        None => available,
        Some(n) if n > available => {
            eprintln!(
                "warning: --threads {n} is more than this machine's {available}; using {available}"
            );
            available
        }
        Some(n) => n,
    }
}

/// A training progress bar over `steps` optimizer steps, with its ETA and the last loss as its
/// message; drawn only when stderr is a terminal and not `quiet` (logs then print above it with
/// `ProgressBar::println`; elsewhere they go to stderr line by line).
pub fn step_bar(steps: u64, done: u64, quiet: bool) -> indicatif::ProgressBar {
    if quiet || !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::with_draw_target(
        Some(steps),
        indicatif::ProgressDrawTarget::stderr(),
    );
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{elapsed_precise} [{bar:30}] step {pos}/{len}, ETA {eta} {msg}",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    bar.set_position(done);
    bar
}

/// A progress bar over `len` records on stderr, drawn only when stderr is a terminal and not
/// `quiet`.
pub fn progress_bar(len: u64, quiet: bool) -> indicatif::ProgressBar {
    if quiet {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::with_draw_target(
        Some(len),
        indicatif::ProgressDrawTarget::stderr(),
    );
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{elapsed_precise} [{bar:40}] {pos}/{len} records ({per_sec})",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    bar
}

/// Creates a run's output folder if it does not exist (its parent must).
pub fn prepare_output_dir(dir: &Path) -> Result<()> {
    if dir.is_file() {
        bail!("output {} is a file; -o names a folder", dir.display());
    }
    if !dir.exists() {
        let parent = match dir.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if !parent.is_dir() {
            bail!(
                "output folder {} does not exist (for output {}); create it first",
                parent.display(),
                dir.display()
            );
        }
        std::fs::create_dir(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        // Removed again if the run is interrupted before anything is written into it.
        luminome_io::temps::register_created_dir(dir);
    }
    Ok(())
}

/// Runs a binary's `main`: SIGINT and SIGTERM remove the run's temporary files (and output
/// folders it created that are still empty) and exit with 128 + the signal; an error is printed
/// as `<tool>: error: <message>` (over-long values cut, see [`shorten_message`]) with exit code
/// 1, after the same clean-up.
pub fn run_main(tool: &str, main: impl FnOnce() -> Result<()>) -> std::process::ExitCode {
    install_signal_cleanup(tool);
    match main() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            luminome_io::temps::remove_all();
            eprintln!("{tool}: error: {}", shorten_message(&format!("{e:#}")));
            std::process::ExitCode::FAILURE
        }
    }
}

fn install_signal_cleanup(tool: &str) {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) else {
        return;
    };
    let tool = tool.to_string();
    let _ = std::thread::Builder::new()
        .name("lum-signals".into())
        .spawn(move || {
            if let Some(sig) = signals.forever().next() {
                // Never inside a group of outputs that belong together (a checkpoint and its
                // training state): wait for it, and let no other start.
                let _no_commits = luminome_io::temps::block_commits();
                let n = luminome_io::temps::remove_all();
                let name = if sig == SIGINT { "SIGINT" } else { "SIGTERM" };
                let kept = match luminome_io::temps::committed() {
                    0 => "no output was written".to_string(),
                    k => format!("the {k} output file(s) finished before it are kept"),
                };
                eprintln!("{tool}: interrupted ({name}); removed {n} temporary file(s); {kept}");
                std::process::exit(128 + sig);
            }
        });
}

/// Keeps candle's element-wise CPU ops on the calling thread (`CANDLE_NUM_THREADS=1`, unless
/// the user set it). candle runs additions and products of ≥ 64 k elements on a thread pool of
/// its own beside rayon's; after each op its worker spins (up to 25,000 rounds) waiting for the
/// next, so on two cores it takes a core from rayon's threads that run gemm and our kernels:
/// 20 % of a two-thread training step's samples were that spin. Measured on the benchmark step
/// at two threads: 5 % shorter (backward 10–20 %), inference 4 %; at one thread nothing changes.
/// Element-wise results do not depend on the split, so the numbers are the same. Call first
/// thing in `main`, before candle's pool exists and before other threads do.
pub fn candle_elementwise_on_caller() {
    if std::env::var_os("CANDLE_NUM_THREADS").is_none() {
        std::env::set_var("CANDLE_NUM_THREADS", "1");
    }
}

/// mimalloc's `mi_option_purge_delay`: its place in the C enum `mi_option_e` (the same in
/// mimalloc v2 and v3), which libmimalloc-sys does not name.
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Makes mimalloc (the global allocator of the binaries that train and predict) keep freed
/// memory for reuse instead of returning it to the kernel once it has been free for its purge
/// delay (1 s in mimalloc v3). A model's step frees and re-allocates the same large tensors;
/// when a step takes longer than the delay, every step otherwise page-faults its activations
/// back in, zeroed by the kernel: 54 % of a d256 × 6, L512 training step's samples, and the
/// step 1.4× as long (docs/benchmarks.md). The process no longer gives memory back between
/// steps, and its peak grows a little (+9–10 % measured: freed blocks are reused as they are,
/// not returned and re-mapped). A user's `MIMALLOC_PURGE_DELAY` is respected.
pub fn keep_freed_memory() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
        return;
    }
    // SAFETY: sets one integer option; mimalloc allows options to be changed at any time.
    #[allow(unsafe_code)]
    unsafe {
        libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1)
    }
}

/// The purge delay mimalloc uses now (ms; −1 = never purge).
/// The sections of a `--help` text in order (`Inputs:`, `Outputs:`, …), each with the number of
/// flags listed under it.
pub fn help_sections(help: &str) -> Vec<(String, usize)> {
    let mut sections: Vec<(String, usize)> = Vec::new();
    for line in help.lines() {
        if let Some(name) = line.strip_suffix(':').filter(|_| !line.starts_with(' ')) {
            sections.push((name.to_string(), 0));
        } else if line.starts_with("  -") || line.starts_with("      --") {
            if let Some(last) = sections.last_mut() {
                last.1 += 1;
            }
        }
    }
    sections
}

/// For the binaries' tests: `BINARY --help` lists `first` as its first sections, the leading
/// `Options` holding nothing but --help and --version (what a run needs comes first).
pub fn assert_help_starts_with(binary: &str, first: &[&str]) {
    let o = std::process::Command::new(binary)
        .arg("--help")
        .output()
        .expect("the binary runs");
    let sections = help_sections(&String::from_utf8_lossy(&o.stdout));
    let names: Vec<&str> = sections.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names[..first.len().min(names.len())],
        *first,
        "{binary} --help"
    );
    assert_eq!(sections[0], ("Options".to_string(), 2), "{binary} --help");
}

#[cfg(test)]
fn purge_delay_ms() -> i64 {
    // SAFETY: reads one integer option.
    #[allow(unsafe_code)]
    let v = unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) };
    v as i64
}

/// Cuts every run of more than 200 characters without a space (a pasted sequence, a binary
/// field) to its first 60 and a count, so a bad 20 MB value does not flood the terminal.
pub fn shorten_message(message: &str) -> String {
    let mut out = String::with_capacity(message.len().min(4096));
    for (i, word) in message.split(' ').enumerate() {
        if i > 0 {
            out.push(' ');
        }
        let n = word.chars().count();
        if n > 200 {
            out.extend(word.chars().take(60));
            out.push_str(&format!("…[{} more characters]", n - 60));
        } else {
            out.push_str(word);
        }
    }
    out
}

/// The command line as a shell would take it back (arguments with other characters quoted).
pub fn command_line() -> String {
    match COMMAND_LINE.get() {
        Some(c) => c.clone(),
        None => quote_args(std::env::args()),
    }
}

static COMMAND_LINE: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Makes [`command_line`] record the process's arguments without those `drop(args, i)` marks
/// (`i` from 0, the program name included): luminome-predict --gather writes what the unsharded
/// command would have written. The first call wins.
pub fn record_command_without(drop: impl Fn(&[String], usize) -> bool) {
    let args: Vec<String> = std::env::args().collect();
    let kept = (0..args.len())
        .filter(|&i| !drop(&args, i))
        .map(|i| args[i].clone());
    let _ = COMMAND_LINE.set(quote_args(kept));
}

fn quote_args(args: impl Iterator<Item = String>) -> String {
    args.map(|a| {
        if a.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+".contains(c))
        {
            a
        } else {
            format!("'{}'", a.replace('\'', r"'\''"))
        }
    })
    .collect::<Vec<_>>()
    .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn freed_memory_is_kept() {
        // Option 15 is the purge delay: its default is mimalloc v3's 1,000 ms (unless the
        // environment sets it), which no neighbouring option has.
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            assert_eq!(purge_delay_ms(), 1000);
            keep_freed_memory();
            assert_eq!(purge_delay_ms(), -1);
        }
    }

    #[test]
    fn long_values_in_messages_are_cut() {
        let long = "A".repeat(5000);
        let m = shorten_message(&format!("x.csv: line 2: sequence {long:?} has a bad base"));
        assert!(m.len() < 200, "{m}");
        assert!(
            m.starts_with("x.csv: line 2: sequence \"AAAA")
                && m.contains("more characters]")
                && m.ends_with("has a bad base"),
            "{m}"
        );
        assert_eq!(shorten_message("a short one"), "a short one");
    }

    #[test]
    fn command_lines_quote_what_a_shell_would_split() {
        let args = ["luminome-train", "-o", "my run", "--classes", "0,1", "it's"];
        assert_eq!(
            quote_args(args.iter().map(|s| s.to_string())),
            r"luminome-train -o 'my run' --classes 0,1 'it'\''s'"
        );
    }

    #[test]
    fn a_run_folder_is_created_once_and_a_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("run");
        prepare_output_dir(&run).unwrap();
        prepare_output_dir(&run).unwrap();
        assert!(run.is_dir());
        let file = dir.path().join("f");
        std::fs::write(&file, "x").unwrap();
        assert!(prepare_output_dir(&file).is_err());
        let err = prepare_output_dir(&dir.path().join("no/run"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("does not exist"), "{err}");
    }
}
