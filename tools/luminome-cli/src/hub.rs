//! Published checkpoints by name: `--checkpoint hf:ORG/NAME[@REVISION]` is fetched once into
//! the standard Hugging Face cache (`$HF_HOME/hub`, default `~/.cache/huggingface/hub`, the
//! layout Python's `huggingface_hub` uses, so either fills it for the other) with the `hf-hub`
//! crate, and read from there afterwards. The suite's one network path: anything else is a local
//! folder. `HF_HUB_OFFLINE=1` reads the cache only; `HF_ENDPOINT` names a mirror; a token is
//! taken from the cache's `token` file when there is one (public models need none).

use std::path::PathBuf;

use anyhow::{bail, Result};
use luminome_io::hf_checkpoint::HfCheckpoint;

/// The files a published checkpoint folder is made of: required, then optional.
const REQUIRED: [&str; 2] = ["config.json", "model.safetensors"];
const OPTIONAL: [&str; 4] = [
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    // The Nucleotide Transformer's EsmTokenizer.
    "vocab.txt",
];

/// A `hf:ORG/NAME[@REVISION]` argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubName {
    pub repo: String,
    pub revision: Option<String>,
}

impl HubName {
    /// `None` when `arg` does not start with `hf:` (a local folder).
    pub fn parse(arg: &str) -> Option<Result<Self>> {
        let rest = arg.strip_prefix("hf:")?;
        let (repo, revision) = match rest.split_once('@') {
            Some((r, v)) => (r, Some(v.to_string())),
            None => (rest, None),
        };
        let valid = |s: &str| {
            !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        };
        let ok = match repo.split_once('/') {
            Some((org, name)) => valid(org) && valid(name),
            None => false,
        } && revision.as_deref().is_none_or(|v| !v.is_empty());
        Some(if ok {
            Ok(Self {
                repo: repo.to_string(),
                revision,
            })
        } else {
            Err(anyhow::anyhow!(
                "{arg}: not a model name; write hf:ORG/NAME or hf:ORG/NAME@REVISION (e.g. hf:kuleshov-group/PlantCaduceus_l20)"
            ))
        })
    }

    fn repo(&self) -> hf_hub::Repo {
        match &self.revision {
            Some(r) => {
                hf_hub::Repo::with_revision(self.repo.clone(), hf_hub::RepoType::Model, r.clone())
            }
            None => hf_hub::Repo::model(self.repo.clone()),
        }
    }
}

/// Whether `HF_HUB_OFFLINE` asks for the cache only (as huggingface_hub reads it).
fn offline() -> bool {
    std::env::var("HF_HUB_OFFLINE")
        .map(|v| matches!(v.to_ascii_lowercase().as_str(), "1" | "true" | "yes" | "on"))
        .unwrap_or(false)
}

/// Opens `arg`: a local folder, or `hf:ORG/NAME[@REVISION]` from the cache, fetched first when
/// it is not there (unless offline).
pub fn open_checkpoint(arg: &str) -> Result<HfCheckpoint> {
    match HubName::parse(arg) {
        None => HfCheckpoint::open(std::path::Path::new(arg), arg),
        Some(name) => {
            let name = name?;
            let dir = fetch(&name, arg)?;
            HfCheckpoint::open(&dir, arg)
        }
    }
}

/// The snapshot folder of `name` in the cache, with the checkpoint's files in it.
fn fetch(name: &HubName, arg: &str) -> Result<PathBuf> {
    let cache = hf_hub::Cache::from_env();
    let cached = cache.repo(name.repo());
    let download_hint = format!(
        "download it where there is network (luminome with {arg}, or `huggingface-cli download {}{} config.json model.safetensors tokenizer.json tokenizer_config.json special_tokens_map.json vocab.txt` (those the model has)) into {} and copy that folder here, or give the checkpoint's folder instead",
        name.repo,
        name.revision
            .as_ref()
            .map(|r| format!(" --revision {r}"))
            .unwrap_or_default(),
        cache.path().display()
    );
    if REQUIRED.iter().all(|f| cached.get(f).is_some()) {
        return snapshot_dir(cached.get(REQUIRED[0]));
    }
    if offline() {
        bail!(
            "{arg}: not in the Hugging Face cache {} and HF_HUB_OFFLINE is set; {download_hint}",
            cache.path().display()
        );
    }
    let api = hf_hub::api::sync::ApiBuilder::from_env()
        .with_progress(false)
        .build()
        .map_err(|e| anyhow::anyhow!("{arg}: cannot start the Hugging Face client: {e}"))?;
    let repo = api.repo(name.repo());
    let mut config = None;
    for f in REQUIRED {
        let path = repo.get(f).map_err(|e| {
            anyhow::anyhow!(
                "{arg}: could not fetch {f} from the Hugging Face Hub ({e}); check the name (https://huggingface.co/{}) and the network, or {download_hint}",
                name.repo
            )
        })?;
        config.get_or_insert(path);
    }
    for f in OPTIONAL {
        // Not every model ships each tokenizer file; a missing one is not an error here (the
        // tool that needs a tokenizer says so).
        let _ = repo.get(f);
    }
    snapshot_dir(config)
}

fn snapshot_dir(config: Option<PathBuf>) -> Result<PathBuf> {
    match config.as_ref().and_then(|p| p.parent()) {
        Some(d) => Ok(d.to_path_buf()),
        None => bail!("internal: a cached file without a folder"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_with_and_without_revision() {
        let n = HubName::parse("hf:kuleshov-group/PlantCaduceus_l20")
            .unwrap()
            .unwrap();
        assert_eq!(n.repo, "kuleshov-group/PlantCaduceus_l20");
        assert_eq!(n.revision, None);
        let n = HubName::parse("hf:org/name@v1.0").unwrap().unwrap();
        assert_eq!(n.revision.as_deref(), Some("v1.0"));
        assert!(HubName::parse("models/plantcad").is_none());
        for bad in [
            "hf:",
            "hf:name",
            "hf:org/",
            "hf:org/na me",
            "hf:org/name@",
            "hf:a/b/c",
        ] {
            let e = HubName::parse(bad).unwrap().unwrap_err().to_string();
            assert!(e.contains("hf:ORG/NAME"), "{bad}: {e}");
        }
    }

    #[test]
    fn offline_and_not_cached_says_what_to_download_and_where() {
        let home = tempfile::tempdir().unwrap();
        // The variables are read when the client is made; this test owns them (no other test
        // in this crate reads HF_*).
        std::env::set_var("HF_HOME", home.path());
        std::env::set_var("HF_HUB_OFFLINE", "1");
        let e = open_checkpoint("hf:kuleshov-group/PlantCaduceus_l20")
            .unwrap_err()
            .to_string();
        assert!(e.contains("HF_HUB_OFFLINE"), "{e}");
        assert!(
            e.contains("huggingface-cli download kuleshov-group/PlantCaduceus_l20"),
            "{e}"
        );
        assert!(
            e.contains(&home.path().join("hub").display().to_string()),
            "{e}"
        );
    }

    #[test]
    fn a_cached_snapshot_is_used_without_network() {
        let home = tempfile::tempdir().unwrap();
        let repo = home.path().join("models--org--tiny");
        let snap = repo.join("snapshots").join("abc123");
        std::fs::create_dir_all(&snap).unwrap();
        std::fs::create_dir_all(repo.join("refs")).unwrap();
        std::fs::write(repo.join("refs").join("main"), "abc123").unwrap();
        for f in REQUIRED {
            std::fs::write(snap.join(f), "{}").unwrap();
        }
        let cache = hf_hub::Cache::new(home.path().to_path_buf());
        let cached = cache.repo(hf_hub::Repo::model("org/tiny".into()));
        assert_eq!(snapshot_dir(cached.get("config.json")).unwrap(), snap);
    }
}
