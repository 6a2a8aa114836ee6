//! Every custom op of the engine has a CUDA path, and docs/engine.md ("The fused ops and their
//! CUDA paths") says which: a row per op, checked here against the source, so a new op without
//! a row — or a row that promises what the code does not do — fails CI.
//!
//! - `kernel`: each `impl CustomOpN for Op` (or `InplaceOpN`) block has a `cuda_fwd`;
//! - `primitives`: the entry function named in the row exists in that file and gates the op to
//!   the CPU (its other branch is the candle-primitive fallback CUDA and Metal run);
//! - `backward`: the row names the forward op (itself a row) whose graph is the only caller.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const CPU_GATES: [&str; 4] = [
    "cpu_fused",
    "cpu_fast_path",
    "fused_f32",
    "fused_attention_applies",
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The text from the line starting `head` to the line closing it at the same indentation.
fn block(text: &str, head: usize) -> &str {
    let line_start = text[..head].rfind('\n').map_or(0, |i| i + 1);
    let line = &text[line_start..];
    let indent = &line[..line.len() - line.trim_start().len()];
    let close = format!("\n{indent}}}");
    let end = text[head..]
        .find(&close)
        .map_or(text.len(), |i| head + i + close.len());
    &text[head..end]
}

/// Each custom-op struct → (the file it is implemented in, whether every impl has `cuda_fwd`).
fn custom_ops() -> BTreeMap<String, (String, bool)> {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut ops: BTreeMap<String, (String, bool)> = BTreeMap::new();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let rel = path
            .strip_prefix(src())
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let ops_at = text
            .match_indices("impl candle_core::CustomOp")
            .chain(text.match_indices("impl candle_core::InplaceOp"));
        for (at, _) in ops_at {
            let line = &text[at..text[at..].find('\n').map_or(text.len(), |i| at + i)];
            let name = line
                .split(" for ")
                .nth(1)
                .and_then(|r| r.split_whitespace().next())
                .unwrap_or_else(|| panic!("{rel}: cannot read {line:?}"))
                .to_string();
            let has_cuda = block(&text, at).contains("fn cuda_fwd");
            let entry = ops.entry(name).or_insert((rel.clone(), true));
            entry.1 &= has_cuda;
        }
    }
    ops
}

/// One row of the table.
struct Row {
    file: String,
    kind: String,
    entry: String,
    test: String,
}

/// Whether `name` is a `#[test]` function in a file of the folder of `file` (or below it).
fn is_test_in_folder(name: &str, file: &str) -> bool {
    let folder = Path::new(file).parent().unwrap_or(Path::new(""));
    let mut files = Vec::new();
    rust_files(&src().join(folder), &mut files);
    files.iter().any(|p| {
        let text = std::fs::read_to_string(p).unwrap();
        text.match_indices(&format!("fn {name}()")).any(|(at, _)| {
            text[..at]
                .trim_end()
                .lines()
                .last()
                .is_some_and(|l| l.trim() == "#[test]")
        })
    })
}

/// The rows of the table, by op.
fn documented() -> BTreeMap<String, Row> {
    let doc = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/engine.md");
    let text = std::fs::read_to_string(doc).unwrap();
    let table = text
        .split("### The fused ops and their CUDA paths")
        .nth(1)
        .expect("docs/engine.md: no section \"The fused ops and their CUDA paths\"");
    let mut rows = BTreeMap::new();
    for line in table.lines().skip_while(|l| !l.starts_with('|')) {
        if !line.starts_with('|') {
            break;
        }
        let cells: Vec<String> = line
            .trim_matches('|')
            .split('|')
            .map(|c| c.trim().trim_matches('`').to_string())
            .collect();
        if cells[0] == "op" || cells[0].starts_with("---") {
            continue;
        }
        let [op, file, kind, entry, test] =
            <[String; 5]>::try_from(cells).unwrap_or_else(|c| panic!("a row of five cells: {c:?}"));
        let row = Row {
            file,
            kind,
            entry,
            test,
        };
        assert!(rows.insert(op.clone(), row).is_none(), "{op}: two rows");
    }
    rows
}

#[test]
fn every_custom_op_has_a_documented_cuda_path_that_the_code_has() {
    let ops = custom_ops();
    let rows = documented();
    assert!(
        ops.len() >= 20,
        "found only {} custom ops: {ops:?}",
        ops.len()
    );
    let in_code: BTreeSet<&String> = ops.keys().collect();
    let in_doc: BTreeSet<&String> = rows.keys().collect();
    assert_eq!(
        in_code, in_doc,
        "custom ops in the source vs rows in docs/engine.md"
    );
    for (op, row) in &rows {
        let (file, kind, entry) = (&row.file, &row.kind, &row.entry);
        assert!(
            is_test_in_folder(&row.test, file),
            "{op}: no #[test] fn {} beside {file}",
            row.test
        );
        let (impl_file, has_cuda) = &ops[op];
        assert_eq!(file, impl_file, "{op}: implemented in {impl_file}");
        match kind.as_str() {
            "kernel" => assert!(has_cuda, "{op}: a `kernel` row, but no cuda_fwd in {file}"),
            "backward" => assert!(rows.contains_key(entry), "{op}: backward of {entry}?"),
            "primitives" => {
                let (path, function) = entry
                    .split_once(": ")
                    .unwrap_or_else(|| panic!("{op}: entry {entry:?} is not `file: function`"));
                let text = std::fs::read_to_string(src().join(path)).unwrap();
                let head = text
                    .find(&format!("fn {function}("))
                    .unwrap_or_else(|| panic!("{op}: no fn {function} in {path}"));
                let body = block(&text, head);
                assert!(
                    CPU_GATES.iter().any(|g| body.contains(g)),
                    "{op}: {path}: {function} has no CPU gate ({CPU_GATES:?})"
                );
            }
            other => panic!("{op}: unknown kind {other:?} (kernel, primitives, backward)"),
        }
    }
}
