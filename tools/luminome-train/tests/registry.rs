//! The model registry (`luminome_engine::models::ModelConfig::families`) against everything that
//! lists families beside it: luminome-train's subcommands, the output fingerprint that proves
//! refactors, and the checkpoint format in docs/engine.md. (luminome-predict's and
//! luminome-importance's `tests/families.rs` and this crate's `tests/fallbacks.rs` check theirs.)

use std::path::Path;

use clap::CommandFactory;
use luminome_engine::models::ModelConfig;
use luminome_train::{closed_form_kinds, trained_kinds, Cli};

fn repo_file(path: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn every_registered_family_is_trained_by_one_subcommand() {
    let trained = trained_kinds();
    for (kind, family) in ModelConfig::families() {
        let n = trained.iter().filter(|k| *k == kind).count();
        assert_eq!(
            n, 1,
            "the {family} family (kind {kind}) has {n} luminome-train subcommands"
        );
    }
    assert_eq!(trained.len(), ModelConfig::families().len(), "{trained:?}");
    for kind in closed_form_kinds() {
        assert!(trained.contains(&kind), "{kind}");
    }
}

#[test]
fn every_subcommand_runs_in_the_output_fingerprint() {
    let script = repo_file("scripts/output-fingerprint.sh");
    for sub in Cli::command().get_subcommands() {
        let name = sub.get_name();
        assert!(
            script.contains(&format!("run luminome-train {name} ")),
            "scripts/output-fingerprint.sh never runs `luminome-train {name}`: a refactor of that family would go unproven"
        );
    }
}

#[test]
fn the_checkpoint_format_in_the_docs_names_every_kind() {
    let docs = repo_file("docs/engine.md");
    let start = docs
        .find("## Checkpoint format")
        .expect("docs/engine.md: no \"## Checkpoint format\"");
    let section = &docs[start..];
    let section = &section[..section[2..].find("\n## ").map_or(section.len(), |e| e + 2)];
    for (kind, family) in ModelConfig::families() {
        assert!(
            section.contains(&format!("`{kind}`")),
            "docs/engine.md, Checkpoint format: the kinds listed miss `{kind}` ({family})"
        );
    }
}
