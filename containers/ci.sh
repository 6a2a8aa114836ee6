#!/usr/bin/env bash
# Static checks for containers/ (docker and apptainer do not run on the CI machine):
# hadolint on the Dockerfiles, shellcheck on the build scripts, and the conda recipe
# renders and tests every binary the workspace builds.
# Needs hadolint, shellcheck, jinja2 and pyyaml (workflows/requirements-ci.txt).
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"

echo "== hadolint $(hadolint --version | grep -o '[0-9][0-9.]*' | head -1)"
hadolint --config containers/.hadolint.yaml containers/Dockerfile containers/Dockerfile.cuda

echo "== shellcheck"
shellcheck containers/binary-crates.sh containers/install-binaries.sh containers/conda/build.sh containers/ci.sh

echo "== binaries to package"
mapfile -t crates < <(containers/binary-crates.sh)
printf '  %s\n' "${crates[@]}"
[[ ${#crates[@]} -gt 0 ]] || { echo "ci.sh: no binary crate found under tools/" >&2; exit 1; }

echo "== conda recipe renders and tests each binary"
python3 - "${crates[@]}" <<'PY'
import sys
import tomllib
from pathlib import Path

import jinja2
import yaml

recipe_path = Path("containers/conda/meta.yaml")
template = jinja2.Template(recipe_path.read_text())
# conda-build's jinja functions, rendered to what they stand for.
rendered = template.render(
    compiler=lambda language: f"{language}-compiler",
    pin_subpackage=lambda name, max_pin=None: f"{name} (pinned {max_pin})",
)
recipe = yaml.safe_load(rendered)

workspace = tomllib.loads(Path("Cargo.toml").read_text())["workspace"]["package"]
assert recipe["package"]["version"] == workspace["version"], (
    f"meta.yaml version {recipe['package']['version']} != workspace {workspace['version']}")
assert recipe["about"]["license"] == workspace["license"], recipe["about"]["license"]
assert (recipe_path.parent / recipe["source"]["path"]).resolve() == Path.cwd().resolve()
build_requirements = " ".join(recipe["requirements"]["build"])
for needed in ("rust-compiler", "c-compiler", "cxx-compiler", "cargo-bundle-licenses"):
    assert needed in build_requirements, f"build requirements lack {needed}"
assert "THIRDPARTY.yml" in recipe["about"]["license_file"]

tests = recipe["test"]["commands"]
for crate in sys.argv[1:]:
    manifest = tomllib.loads((Path(crate) / "Cargo.toml").read_text())
    binaries = [b["name"] for b in manifest.get("bin", [])] or [manifest["package"]["name"]]
    for binary in binaries:
        assert f"{binary} --version" in tests, f"meta.yaml test: commands lacks '{binary} --version'"
print(f"meta.yaml {recipe['package']['name']} {recipe['package']['version']}: tests {tests}")
PY

echo "== image tags and conda pins match the workspace version"
version="$(python3 -c 'import tomllib; print(tomllib.load(open("Cargo.toml", "rb"))["workspace"]["package"]["version"])')"
stale="$(grep -rnoE 'luminome/luminome:[0-9][0-9A-Za-z.-]*|luminome ?=[0-9][0-9.]*' workflows containers \
    | grep -vE "luminome/luminome:${version//./\\.}(-cuda)?\$|luminome ?=${version//./\\.}\$" || true)"
[[ -z "$stale" ]] || { echo "ci.sh: versions other than $version:" >&2; echo "$stale" >&2; exit 1; }
echo "  all $version"

echo "== containers ci: ok"
