//! Folders import in one direction: in every crate of the workspace, no import circle crosses a
//! folder (docs/engine.md, "Where things are"). Code two folders both need moves to a folder they
//! both use — `models/token/` for the token classifiers, `models/region/` for the region
//! families, `nn/` for ops — instead of each importing the other.
//!
//! Read from the sources: every `crate::`, `super::` and `self::` path (`use` groups expanded;
//! comments, literals and `#[cfg(test)]` items left out) is resolved to the module it names, and
//! each module stands for its folder. A folder's use of a folder that contains it, or the other
//! way, is containment, not an import (a parent declares its children; the model registry in
//! `models/mod.rs` names every family), so files directly in `src/` are not checked against the
//! folders below them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

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

/// The code of a Rust file without comments and string or char literals (each left as an empty
/// `""`), so that what remains is paths and punctuation.
fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                    i += 1;
                }
                i += 2;
            }
            b'r' if b.get(i + 1).is_some_and(|&c| c == b'#' || c == b'"')
                && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')) =>
            {
                // A raw string r"…" or r#"…"#.
                let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
                if b.get(i + 1 + hashes) != Some(&b'"') {
                    out.push('r');
                    i += 1;
                    continue;
                }
                let close = format!("\"{}", "#".repeat(hashes));
                let start = i + 2 + hashes;
                i = text[start..]
                    .find(&close)
                    .map_or(b.len(), |k| start + k + close.len());
                out.push_str("\"\"");
            }
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                out.push_str("\"\"");
            }
            b'\'' if b.get(i + 1) == Some(&b'\\') => {
                i += 2;
                while i < b.len() && b[i] != b'\'' {
                    i += 1;
                }
                i += 1;
            }
            b'\'' if b.get(i + 2) == Some(&b'\'') => i += 3,
            _ => {
                let c = text[i..].chars().next().unwrap();
                out.push(c);
                i += c.len_utf8();
            }
        }
    }
    out
}

/// `code` without the items marked `#[cfg(test)]` (test modules and helpers).
fn without_test_items(code: &str) -> String {
    let mut out = String::new();
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let item = &rest[at..];
        let (brace, semi) = (item.find('{'), item.find(';'));
        let end = match (brace, semi) {
            (Some(o), s) if s.is_none_or(|s| o < s) => {
                let mut depth = 0usize;
                let mut end = item.len();
                for (k, c) in item[o..].char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                end = o + k + 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                end
            }
            (_, Some(s)) => s + 1,
            _ => item.len(),
        };
        rest = &item[end..];
    }
    out.push_str(rest);
    out
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Reads a path (or a `{…}` group of them) at `*i`, after `prefix`, into `out`.
fn read_tree(s: &[u8], i: &mut usize, mut prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    let skip_ws = |i: &mut usize| {
        while *i < s.len() && s[*i].is_ascii_whitespace() {
            *i += 1;
        }
    };
    loop {
        skip_ws(i);
        if *i < s.len() && s[*i] == b'{' {
            *i += 1;
            loop {
                skip_ws(i);
                if *i >= s.len() || s[*i] == b'}' {
                    *i += 1;
                    return;
                }
                let before = *i;
                read_tree(s, i, prefix.clone(), out);
                skip_ws(i);
                // Past the comma, or past a token that is not a path (so the loop ends).
                if (*i < s.len() && s[*i] == b',') || *i == before {
                    *i += 1;
                }
            }
        }
        let start = *i;
        while *i < s.len() && is_ident(s[*i]) {
            *i += 1;
        }
        if *i > start {
            prefix.push(String::from_utf8_lossy(&s[start..*i]).into_owned());
        }
        skip_ws(i);
        if *i > start && s[*i..].starts_with(b"::") {
            *i += 2;
            continue;
        }
        out.push(prefix);
        return;
    }
}

/// Every path starting `crate::`, `super::` or `self::` in `code`, groups expanded.
fn paths(code: &str) -> Vec<Vec<String>> {
    let s = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < s.len() {
        let boundary = i == 0 || !(is_ident(s[i - 1]) || s[i - 1] == b'$');
        let head = ["crate", "super", "self"]
            .into_iter()
            .find(|h| s[i..].starts_with(h.as_bytes()) && s[i + h.len()..].starts_with(b"::"));
        match head {
            Some(_) if boundary => read_tree(s, &mut i, Vec::new(), &mut out),
            _ => i += 1,
        }
    }
    out
}

/// The module a source file is: `a/b.rs` → `a::b`, `a/mod.rs` → `a`, `lib.rs` → the root.
fn module_of(rel: &str) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .trim_end_matches(".rs")
        .split('/')
        .map(String::from)
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// The module `path` names from inside module `from`: the longest known prefix.
fn resolve(from: &[String], path: &[String], known: &BTreeSet<Vec<String>>) -> Option<Vec<String>> {
    let mut full: Vec<String> = Vec::new();
    let mut rest = path;
    match path.first().map(String::as_str) {
        Some("crate") => rest = &path[1..],
        Some("super") => {
            full = from.to_vec();
            while rest.first().is_some_and(|s| s == "super") {
                full.pop();
                rest = &rest[1..];
            }
        }
        Some("self") => {
            full = from.to_vec();
            rest = &path[1..];
        }
        _ => return None,
    }
    full.extend(rest.iter().filter(|s| *s != "self").cloned());
    (0..=full.len())
        .rev()
        .map(|k| full[..k].to_vec())
        .find(|m| known.contains(m))
}

/// The folder of a file (`""` for `src/` itself).
fn unit_of(rel: &str) -> String {
    rel.rfind('/')
        .map_or(String::new(), |k| rel[..k].to_string())
}

/// Whether folder `outer` contains folder `inner` (`src/` contains every folder).
fn contains(outer: &str, inner: &str) -> bool {
    outer.is_empty() || inner.starts_with(&format!("{outer}/"))
}

/// Folder → folder imports of a crate's sources (relative path → text), each with the files
/// and paths that make it.
type Imports = BTreeMap<(String, String), Vec<String>>;

fn folder_imports(files: &BTreeMap<String, String>) -> Imports {
    let module_files: BTreeMap<Vec<String>, &str> = files
        .keys()
        .map(|rel| (module_of(rel), rel.as_str()))
        .collect();
    let known: BTreeSet<Vec<String>> = module_files.keys().cloned().collect();
    let mut imports = Imports::new();
    for (rel, text) in files {
        if rel.ends_with("/tests.rs") || rel.contains("/tests/") {
            continue;
        }
        let from = module_of(rel);
        let code = without_test_items(&code_only(text));
        for path in paths(&code) {
            let Some(target) = resolve(&from, &path, &known) else {
                continue;
            };
            let (a, b) = (unit_of(rel), unit_of(module_files[&target]));
            if a != b && !contains(&a, &b) && !contains(&b, &a) {
                imports
                    .entry((a, b))
                    .or_default()
                    .push(format!("{rel}: {}", path.join("::")));
            }
        }
    }
    imports
}

/// Every import `a → b` whose target leads back to `a`, with its evidence.
fn circles(imports: &Imports) -> Vec<String> {
    let mut next: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (a, b) in imports.keys() {
        next.entry(a).or_default().push(b);
    }
    let reaches = |from: &str, to: &str| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from];
        while let Some(x) = stack.pop() {
            if x == to {
                return true;
            }
            if seen.insert(x) {
                stack.extend(next.get(x).into_iter().flatten());
            }
        }
        false
    };
    imports
        .iter()
        .filter(|((a, b), _)| reaches(b, a))
        .map(|((a, b), why)| format!("{a} → {b} (e.g. {})", why[0]))
        .collect()
}

fn crate_sources(src: &Path) -> BTreeMap<String, String> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files
        .into_iter()
        .map(|p| {
            let rel = p
                .strip_prefix(src)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            (rel, std::fs::read_to_string(&p).unwrap())
        })
        .collect()
}

#[test]
fn no_import_circle_crosses_a_folder_in_any_crate() {
    let tools = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut found = Vec::new();
    let mut engine_imports = 0;
    for entry in std::fs::read_dir(tools).unwrap() {
        let src = entry.unwrap().path().join("src");
        if !src.is_dir() {
            continue;
        }
        let imports = folder_imports(&crate_sources(&src));
        if src.parent().unwrap().ends_with("luminome-engine") {
            engine_imports = imports.len();
        }
        for c in circles(&imports) {
            found.push(format!("{}: {c}", src.parent().unwrap().display()));
        }
    }
    // Not vacuous: the engine's families, checkpoint, input, nn and train import each other.
    assert!(engine_imports > 40, "{engine_imports} folder imports read");
    assert!(
        found.is_empty(),
        "import circles across folders (move what both sides need to a folder both use):\n{}",
        found.join("\n")
    );
}

#[test]
fn a_circle_between_two_folders_is_found_and_its_parent_is_not_one() {
    let files = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(p, t)| (p.to_string(), t.to_string()))
            .collect()
    };
    let circle = files(&[
        ("lib.rs", "pub mod a; pub mod b; pub mod shared;"),
        ("a/mod.rs", "pub mod x; use crate::b::{y::{Y, self}, Z};"),
        ("a/x.rs", "// use crate::shared::S;\npub struct X;"),
        ("b/mod.rs", "pub mod y; pub struct Z;"),
        (
            "b/y.rs",
            "pub struct Y; fn f() -> super::super::a::x::X { todo!(\"crate::shared\") }",
        ),
        (
            "shared/mod.rs",
            "#[cfg(test)]\nmod tests { use crate::a::x::X; }",
        ),
    ]);
    let imports = folder_imports(&circle);
    assert_eq!(circles(&imports).len(), 2, "{imports:?}");
    // Only the paths in code count: not comments, literals or test modules.
    assert!(!imports.keys().any(|(_, b)| b == "shared"), "{imports:?}");
    // A folder and its parent (a family and models/mod.rs's registry) are not a circle.
    let nested = files(&[
        ("lib.rs", "pub mod models;"),
        (
            "models/mod.rs",
            "pub mod a; use a::Config; pub trait Family {}",
        ),
        (
            "models/a/mod.rs",
            "impl crate::models::Family for Config {}",
        ),
    ]);
    assert!(circles(&folder_imports(&nested)).is_empty());
}
