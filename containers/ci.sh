#!/usr/bin/env bash
# Static checks for containers/ (docker, apptainer and conda-build do not run on the CI
# machine): hadolint on the Dockerfiles, shellcheck on the build scripts, the conda recipe
# template renders with what bioconda asks for and tests every binary the workspace builds,
# render_recipe.py fills a release's version and sha256, and scripts/check-versions.sh.
# Needs hadolint, shellcheck, jinja2 and pyyaml (workflows/requirements-ci.txt).
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"

echo "== hadolint $(hadolint --version | grep -o '[0-9][0-9.]*' | head -1)"
hadolint --config containers/.hadolint.yaml containers/Dockerfile containers/Dockerfile.cuda

echo "== shellcheck"
shellcheck containers/binary-crates.sh containers/install-binaries.sh containers/conda/build.sh containers/ci.sh \
    scripts/check-versions.sh

echo "== binaries to package"
mapfile -t crates < <(containers/binary-crates.sh)
printf '  %s\n' "${crates[@]}"
[[ ${#crates[@]} -gt 0 ]] || { echo "ci.sh: no binary crate found under tools/" >&2; exit 1; }

echo "== conda recipe template renders, tests every binary, has what bioconda asks for"
python3 - "${crates[@]}" <<'PY'
import re
import sys
import tomllib
from pathlib import Path

import jinja2
import yaml

recipe_path = Path("containers/conda/meta.yaml")
template_text = recipe_path.read_text()
# conda-build's jinja functions, rendered to what they stand for.
functions = dict(
    compiler=lambda language: f"{language}-compiler",
    stdlib=lambda language: f"{language}-stdlib",
    pin_subpackage=lambda name, max_pin=None: f"{name} (pinned {max_pin})",
)
recipe = yaml.safe_load(jinja2.Template(template_text).render(**functions))

workspace = tomllib.loads(Path("Cargo.toml").read_text())["workspace"]["package"]
assert recipe["package"]["version"] == workspace["version"], (
    f"meta.yaml version {recipe['package']['version']} != workspace {workspace['version']}")
assert recipe["about"]["license"] == workspace["license"], recipe["about"]["license"]
home = workspace["repository"]
assert not home.startswith("https://example"), f"Cargo.toml repository is a placeholder: {home}"
for key in ("home", "dev_url"):
    assert recipe["about"][key] == home, f"about.{key} {recipe['about'].get(key)} != {home}"
assert recipe["about"]["summary"] and recipe["about"]["doc_url"].startswith(home)
# The release tarball, its version from the one `set version` line; the sha256 a template value.
assert "path" not in recipe["source"], "source: path is for local builds, not bioconda"
assert "  url: " + home + "/archive/refs/tags/v{{ version }}.tar.gz" in template_text, recipe["source"]
assert not re.fullmatch(r"[0-9a-f]{64}", recipe["source"]["sha256"]), \
    "the template's sha256 must be the placeholder that render_recipe.py replaces"
build_requirements = " ".join(recipe["requirements"]["build"])
for needed in ("c-compiler", "c-stdlib", "cxx-compiler", "rust-compiler", "cargo-bundle-licenses"):
    assert needed in build_requirements, f"build requirements lack {needed}"
assert "THIRDPARTY.yml" in recipe["about"]["license_file"]
build_sh = Path("containers/conda/build.sh").read_text()
assert "cargo-bundle-licenses --format yaml --output THIRDPARTY.yml" in build_sh
assert "containers/install-binaries.sh" in build_sh, "build.sh must build like the images do"

tests = recipe["test"]["commands"]
for crate in sys.argv[1:]:
    manifest = tomllib.loads((Path(crate) / "Cargo.toml").read_text())
    binaries = [b["name"] for b in manifest.get("bin", [])] or [manifest["package"]["name"]]
    for binary in binaries:
        for command in (f"{binary} --version", f"{binary} --help"):
            assert command in tests, f"meta.yaml test: commands lacks '{command}'"
print(f"meta.yaml {recipe['package']['name']} {recipe['package']['version']}: {len(tests)} test commands")
PY

echo "== render_recipe.py fills the version and the tarball's sha256"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
printf 'not a real release\n' > "$scratch/source.tar.gz"
python3 containers/conda/render_recipe.py --tarball "$scratch/source.tar.gz" --output "$scratch/recipe"
python3 - "$scratch" <<'PY'
import hashlib
import sys
import tomllib
from pathlib import Path

import jinja2
import yaml

scratch = Path(sys.argv[1])
rendered = (scratch / "recipe" / "meta.yaml").read_text()
recipe = yaml.safe_load(jinja2.Template(rendered).render(
    compiler=lambda language: language, stdlib=lambda language: language,
    pin_subpackage=lambda name, max_pin=None: name))
workspace = tomllib.loads(Path("Cargo.toml").read_text())["workspace"]["package"]
expected_sha = hashlib.sha256((scratch / "source.tar.gz").read_bytes()).hexdigest()
assert recipe["source"]["sha256"] == expected_sha, recipe["source"]
assert recipe["package"]["version"] == workspace["version"], recipe["package"]
assert recipe["source"]["url"] == f"{workspace['repository']}/archive/refs/tags/v{workspace['version']}.tar.gz"
assert (scratch / "recipe" / "build.sh").read_text() == Path("containers/conda/build.sh").read_text()
print(f"rendered recipe: {recipe['package']['name']} {recipe['package']['version']}, sha256 {expected_sha[:12]}...")
PY

echo "== one version everywhere (scripts/check-versions.sh)"
scripts/check-versions.sh

echo "== containers ci: ok"
