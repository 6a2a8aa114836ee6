//! Every example a user copies — the README, docs/*.md and each tool's `--help` — that reads the
//! bundled `test-data/` writes its outputs under `work/`, never into the folder it runs in: for a
//! newcomer that is the repository root, where dozens of outputs would mix with the sources.

use std::path::{Path, PathBuf};

use clap::CommandFactory;

/// Flags whose value is a file or folder the command writes.
const OUTPUT_FLAGS: &[&str] = &[
    "-o",
    "--output",
    "--metrics",
    "--npz",
    "--bedgraph",
    "--bigwig",
    "--ranking",
    "--embeddings",
    "--vcf",
];

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The fenced shell blocks of a markdown file.
fn shell_blocks(markdown: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    // Inside a fence: whether it is a shell block, and its lines so far.
    let mut open: Option<(bool, String)> = None;
    for line in markdown.lines() {
        let fence = line.trim_start().strip_prefix("```");
        match (&mut open, fence) {
            (None, Some(lang)) => {
                let shell = ["", "sh", "bash", "shell", "console"].contains(&lang.trim());
                open = Some((shell, String::new()));
            }
            (Some(_), Some(_)) => {
                if let Some((true, block)) = open.take() {
                    blocks.push(block);
                }
            }
            (Some((_, block)), None) => {
                block.push_str(line);
                block.push('\n');
            }
            (None, None) => {}
        }
    }
    blocks
}

/// Command lines of a block: continuations joined, comments dropped.
fn command_lines(block: &str) -> Vec<String> {
    let joined = block.replace("\\\n", " ");
    joined
        .lines()
        .map(|line| line.split(" #").next().unwrap_or("").trim().to_string())
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .collect()
}

/// (command line, output path) for every output a block's commands write outside `work/`.
fn outputs_outside_work(block: &str) -> Vec<(String, String)> {
    if !block.contains("test-data/") {
        return Vec::new();
    }
    let allowed = |path: &str| {
        let path = path.trim_matches('"');
        path == "-"
            || path.starts_with("work/")
            || path.starts_with('$')
            || path.starts_with("/tmp/")
    };
    let mut bad = Vec::new();
    for line in command_lines(block) {
        let tokens: Vec<&str> = line.split_whitespace().collect();
        for pair in tokens.windows(2) {
            if OUTPUT_FLAGS.contains(&pair[0]) && !allowed(pair[1]) {
                bad.push((line.clone(), pair[1].to_string()));
            }
        }
    }
    bad
}

fn helps() -> Vec<(String, String)> {
    let mut commands = vec![
        luminome_tokenize::args::Args::command(),
        luminome_predict::args::PredictArgs::command(),
        luminome_importance::args::ImportanceArgs::command(),
        luminome_regions::args::Args::command(),
        luminome_mask_pairs::args::Args::command(),
        luminome_train::Cli::command(),
    ];
    let mut rendered = Vec::new();
    while let Some(mut command) = commands.pop() {
        let name = command.get_name().to_string();
        rendered.push((name, command.render_long_help().to_string()));
        commands.extend(command.get_subcommands().cloned());
    }
    rendered
}

#[test]
fn examples_on_the_bundled_data_write_under_work() {
    let root = repo_root();
    let mut documents = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    documents.extend(docs);
    let mut bad = Vec::new();
    let mut blocks_checked = 0;
    for document in &documents {
        let text = std::fs::read_to_string(document).unwrap();
        for block in shell_blocks(&text) {
            blocks_checked += block.contains("test-data/") as usize;
            for (line, path) in outputs_outside_work(&block) {
                bad.push(format!("{}: {path} in `{line}`", document.display()));
            }
        }
    }
    let helps = helps();
    assert!(
        helps.len() >= 14,
        "every tool and train subcommand: {}",
        helps.len()
    );
    for (name, help) in &helps {
        // An example is a paragraph of the help.
        for paragraph in help.split("\n\n") {
            blocks_checked += paragraph.contains("test-data/") as usize;
            for (line, path) in outputs_outside_work(paragraph) {
                bad.push(format!("{name} --help: {path} in `{line}`"));
            }
        }
    }
    assert!(
        blocks_checked >= 15,
        "found only {blocks_checked} examples on test-data/"
    );
    assert!(
        bad.is_empty(),
        "examples writing outside work/:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_check_finds_an_output_in_the_current_folder() {
    let block = "luminome-tokenize test-data/x.csv \\\n    --max-length 72 -o x.safetensors  # x\n";
    assert_eq!(
        outputs_outside_work(block),
        vec![(
            "luminome-tokenize test-data/x.csv      --max-length 72 -o x.safetensors".to_string(),
            "x.safetensors".to_string()
        )]
    );
    let fine =
        "mkdir -p work\nluminome-tokenize test-data/x.csv -o work/x.safetensors --metrics -\n";
    assert!(outputs_outside_work(fine).is_empty());
    let markdown = "text\n```sh\nluminome-predict --dataset test-data/a -o a.tsv\n```\n```python\nx = 1 -o b\n```\n";
    assert_eq!(shell_blocks(markdown).len(), 1);
}
