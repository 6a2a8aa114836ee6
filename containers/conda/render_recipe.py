#!/usr/bin/env python3
"""Writes the bioconda recipe of a Luminome release from the template containers/conda/meta.yaml.

    python3 containers/conda/render_recipe.py --tarball luminome-0.1.0.tar.gz --output recipe/

The version comes from the workspace Cargo.toml ([workspace.package] version, the one place
it is set) and the sha256 from the given source tarball, which must be the release's
https://github.com/luminome/luminome/archive/refs/tags/v<version>.tar.gz (download it after
tagging; GitHub generates it) or, for a local test build, a tarball made with
`git archive --prefix=luminome-<version>/ -o luminome-<version>.tar.gz HEAD` and passed with
--url file:///absolute/path/luminome-<version>.tar.gz. The output folder gets meta.yaml (the
template with the version, the sha256 and, with --url, the url filled in) and build.sh, ready
for bioconda-recipes/recipes/luminome/ or `conda build recipe/`.
"""

import argparse
import hashlib
import re
import shutil
import sys
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent


def set_jinja_variable(text: str, name: str, value: str) -> str:
    pattern = re.compile(r'^\{%\s*set\s+' + name + r'\s*=\s*"[^"]*"\s*%\}$', re.MULTILINE)
    if len(pattern.findall(text)) != 1:
        raise SystemExit(f"meta.yaml: expected one `{{% set {name} = \"...\" %}}` line")
    return pattern.sub(f'{{% set {name} = "{value}" %}}', text)


def render(template: str, version: str, sha256: str, url: str | None) -> str:
    text = set_jinja_variable(template, "version", version)
    text = set_jinja_variable(text, "sha256", sha256)
    if url:
        text, count = re.subn(r"^(  url: ).*$", lambda m: m.group(1) + url, text, flags=re.MULTILINE)
        if count != 1:
            raise SystemExit("meta.yaml: expected one `  url:` line under source:")
    # The template's header says how to make the recipe; the recipe says where it came from.
    body = text[text.index("{% set name"):]
    return f"# Rendered by luminome containers/conda/render_recipe.py for version {version}.\n" + body


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tarball", type=Path, required=True, help="the release's source tarball")
    parser.add_argument("--output", type=Path, required=True, help="folder for meta.yaml and build.sh")
    parser.add_argument("--url", help="source url instead of the GitHub release tarball (local test builds)")
    args = parser.parse_args()
    version = tomllib.loads((REPO / "Cargo.toml").read_text())["workspace"]["package"]["version"]
    sha256 = hashlib.sha256(args.tarball.read_bytes()).hexdigest()
    args.output.mkdir(parents=True, exist_ok=True)
    (args.output / "meta.yaml").write_text(render((HERE / "meta.yaml").read_text(), version, sha256, args.url))
    shutil.copy2(HERE / "build.sh", args.output / "build.sh")
    print(f"{args.output}/meta.yaml: luminome {version}, sha256 {sha256}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
