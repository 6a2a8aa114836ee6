//! Whether tests may check our outputs from Python (numpy, safetensors, pandas): one probe for
//! every crate's tests, so a machine without those modules prints one line per skipped check —
//! not the interpreter's `ModuleNotFoundError` traceback, which reads as a failure.

use std::process::{Command, Stdio};

/// True when `python3 -c "import MODULES"` succeeds (`modules` as written after `import`, e.g.
/// `"numpy, safetensors"`). Otherwise prints `skipped: …` naming `check` and the modules and
/// returns false — or panics when one of the missing packages is listed in
/// `LUMINOME_REQUIRE_PYTHON` (`.ci/run` lists numpy and safetensors, which it installs, so a
/// broken Python there fails the check instead of skipping it).
pub fn python_can_import(modules: &str, check: &str) -> bool {
    let ok = Command::new("python3")
        .args(["-c", &format!("import {modules}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        // The packages to install: each module's top-level name (`safetensors.numpy` → safetensors).
        let pip: Vec<&str> = modules
            .split(',')
            .map(|m| m.trim().split('.').next().unwrap_or(""))
            .collect();
        let required = std::env::var("LUMINOME_REQUIRE_PYTHON").unwrap_or_default();
        if let Some(m) = pip
            .iter()
            .find(|m| required.split([' ', ',']).any(|r| r == **m))
        {
            panic!("{check}: python3 cannot import {m} (LUMINOME_REQUIRE_PYTHON={required})");
        }
        eprintln!(
            "skipped: {check} (python3 cannot import {modules}; python3 -m pip install {})",
            pip.join(" ")
        );
    }
    ok
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_module_python_lacks_is_a_skip_not_a_panic() {
        // Not listed in LUMINOME_REQUIRE_PYTHON, so a missing module only skips.
        assert!(!super::python_can_import(
            "luminome_no_such_module.sub",
            "the probe's own test"
        ));
    }
}
