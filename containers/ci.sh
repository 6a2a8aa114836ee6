#!/usr/bin/env bash
# Static checks for containers/ and the release (docker, apptainer and conda-build do not run on
# the CI machine): hadolint on the Dockerfiles, shellcheck on the build scripts, the Apptainer
# definition copies what the Dockerfiles copy and has a %test (run here with the workspace's
# binaries when they are on PATH), the conda recipe template renders with what bioconda asks for
# and tests every binary the workspace builds, render_recipe.py fills a release's version and
# sha256, actionlint on the GitHub Actions workflows (.github/workflows, the release), and
# scripts/check-versions.sh.
# Needs hadolint, shellcheck, actionlint, jinja2 and pyyaml (workflows/requirements-ci.txt).
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"

echo "== hadolint $(hadolint --version | grep -o '[0-9][0-9.]*' | head -1)"
hadolint --config containers/.hadolint.yaml containers/Dockerfile containers/Dockerfile.cuda

echo "== shellcheck"
shellcheck containers/binary-crates.sh containers/install-binaries.sh containers/conda/build.sh containers/ci.sh \
    scripts/check-versions.sh

echo "== luminome.def: the files the Dockerfiles copy, their base images and build script, a %test"
# Apptainer is not installable on the CI machine (no package; it needs user namespaces or root);
# the release workflow builds the .def. These checks keep it from drifting from the Dockerfiles.
python3 - <<'PY'
import re
import shlex
from pathlib import Path


def dockerfile_context_copies(path):
    """Sources of every COPY/ADD from the build context (not --from=), ARG defaults, FROM images."""
    text = re.sub(r"\\\n", " ", Path(path).read_text())
    sources, args, bases = set(), {}, []
    for line in text.splitlines():
        words = shlex.split(line, comments=True) if line.strip() else []
        if not words:
            continue
        keyword = words[0].upper()
        if keyword == "ARG" and "=" in words[1]:
            name, value = words[1].split("=", 1)
            args.setdefault(name, value)
        elif keyword == "FROM":
            bases.append(re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], words[1]))
        elif keyword in ("COPY", "ADD"):
            operands = [w for w in words[1:] if not w.startswith("--")]
            if not any(w.startswith("--from") for w in words[1:]):
                sources.update(operands[:-1])
    return sources, bases


def definition_stages(path):
    """Each stage of an Apptainer definition: its header keywords and its %sections' lines."""
    stages = []
    section = None
    for raw in Path(path).read_text().splitlines():
        line = raw.split("#", 1)[0].rstrip() if not raw.lstrip().startswith("#") else ""
        if not line.strip():
            continue
        if line.startswith("Bootstrap:"):
            stages.append({"header": {}, "sections": {}})
            section = None
        if line.startswith("%"):
            section = line.strip()
            stages[-1]["sections"][section] = []
        elif section is None:
            key, value = line.split(":", 1)
            stages[-1]["header"][key.strip()] = value.strip()
        else:
            stages[-1]["sections"][section].append(line.strip())
    return stages


copies, bases = dockerfile_context_copies("containers/Dockerfile")
cuda_copies, _ = dockerfile_context_copies("containers/Dockerfile.cuda")
assert copies == cuda_copies, f"Dockerfile copies {sorted(copies)}, Dockerfile.cuda {sorted(cuda_copies)}"
for source in copies:
    assert Path(source).exists(), f"the Dockerfile copies {source}, which does not exist"

stages = definition_stages("containers/luminome.def")
assert len(stages) == 2, f"luminome.def: expected a build and a runtime stage, got {len(stages)}"
build, runtime = stages
assert [build["header"].get("From"), runtime["header"].get("From")] == bases, (
    f"luminome.def builds from {build['header'].get('From')} and runs on {runtime['header'].get('From')}; "
    f"the Dockerfile from {bases}")
files = [line.split() for line in build["sections"].get("%files", [])]
def_sources = {entry[0] for entry in files}
missing, extra = sorted(copies - def_sources), sorted(def_sources - copies)
assert not missing and not extra, (
    f"luminome.def %files differs from the Dockerfile's COPY: missing {missing}, not in the Dockerfile {extra}")
for entry in files:
    assert len(entry) == 2 and entry[1] == f"/src/{entry[0]}", f"luminome.def %files: {entry} is not copied to /src/{entry[0]}"
assert "containers/install-binaries.sh /opt/luminome" in build["sections"].get("%post", []), \
    "luminome.def must build with containers/install-binaries.sh /opt/luminome, as the Dockerfiles do"
test = "\n".join(runtime["sections"].get("%test", []))
assert test, "luminome.def has no %test in its runtime stage"
for needed in ("/usr/local/bin/luminome-*", "--version", "luminome-tokenize"):
    assert needed in test, f"luminome.def %test does not run {needed}"
print(f"luminome.def: copies {sorted(copies)} like the Dockerfiles, from {bases}, with a %test")
PY
if command -v luminome-tokenize >/dev/null; then
    # The %test as the image runs it, on the workspace's binaries: a folder of links to them (the
    # executables only; a cargo target folder also holds luminome-*.d files) for /usr/local/bin.
    bin_dir="$(dirname "$(command -v luminome-tokenize)")"
    test_bin="$(mktemp -d)"
    for tool in "$bin_dir"/luminome-*; do
        if [[ -f "$tool" && -x "$tool" ]]; then
            ln -s "$tool" "$test_bin/"
        fi
    done
    sed -n '/^%test/,/^%/{/^%/d;p}' containers/luminome.def | sed "s#/usr/local/bin/luminome-#$test_bin/luminome-#" \
        | PATH="$test_bin:$PATH" sh -eu >/dev/null
    rm -rf "$test_bin"
    echo "luminome.def %test passes with the binaries in $bin_dir"
else
    echo "luminome.def %test not run: no luminome-tokenize on PATH (build the workspace first)"
fi

echo "== actionlint $(actionlint -version | head -1) (with shellcheck on run: blocks)"
actionlint -shellcheck "$(command -v shellcheck)" .github/workflows/*.yml
python3 - .github/workflows/*.yml <<'PY'
import re
import sys
from pathlib import Path

import yaml

# The workflows build with the images' toolchain.
rust = re.search(r"^ARG RUST_VERSION=(\S+)$", Path("containers/Dockerfile").read_text(), re.MULTILINE)[1]
for path in sys.argv[1:]:
    workflow = yaml.safe_load(Path(path).read_text())
    found = (workflow.get("env") or {}).get("RUST_VERSION")
    assert found in (None, rust), f"{path}: RUST_VERSION {found} != containers/Dockerfile's {rust}"
print(f"workflows: Rust {rust}, as containers/Dockerfile")
PY

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
