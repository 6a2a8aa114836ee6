#!/usr/bin/env python3
"""Checks each module's meta.yml and environment.yml against nf-core's JSON schemas and
against the module's main.nf.

    python3 workflows/nextflow/check_module_meta.py

For every modules/local/luminome/<tool>/:
- meta.yml is valid YAML and valid against assets/meta-schema.json, and environment.yml
  against assets/environment-schema.json (both copied unchanged from nf-core/modules,
  modules/meta-schema.json and modules/environment-schema.json at commit
  041fbd98880c9af7762aec2f54fa4f35503d50f2, where `nf-core modules lint` uses them);
- meta.yml's name is luminome_<tool>; every tool entry has a homepage and a licence;
- meta.yml's input channels name the elements of main.nf's `input:` tuples, in order, and its
  output channels the emits of main.nf's `output:` with the same path patterns; the versions
  emit and the `versions` topic are described;
- environment.yml asks for conda-forge and bioconda and pins luminome to the workspace version;
- tests/main.nf.test runs the process (stub test at least) and snapshots it.
"""

import re
import sys
import tomllib
from pathlib import Path

import jsonschema
import yaml

PIPELINE = Path(__file__).resolve().parent
REPO = PIPELINE.parent.parent
MODULES = PIPELINE / "modules" / "local" / "luminome"
ELEMENT = re.compile(r"\b(?:val|path|eval)\(\s*(?:\"([^\"]*)\"|'([^']*)'|(\w+))")


def section(text: str, name: str, following: str) -> str:
    match = re.search(rf"^\s*{name}:\s*$(.*?)^\s*{following}:\s*$", text, re.MULTILINE | re.DOTALL)
    return match.group(1) if match else ""


def main_nf_channels(text: str):
    """Input channels (lists of element names) and outputs ({emit: element names}) of main.nf."""
    inputs = []
    for line in section(text, "input", "output").splitlines():
        code = line.split("//")[0].strip()
        if code.startswith(("tuple", "path(", "val(")):
            inputs.append([next(filter(None, m)) for m in ELEMENT.findall(code)])
        elif code.startswith(("val ", "path ")):
            inputs.append([code.split()[1]])
    outputs = {}
    for line in section(text, "output", "when").splitlines():
        emit = re.search(r"emit:\s*(\w+)", line)
        if emit:
            outputs[emit.group(1)] = [next(filter(None, m)) for m in ELEMENT.findall(line.split("emit:")[0])]
    return inputs, outputs


def names(channel) -> list:
    elements = channel if isinstance(channel, list) else [channel]
    return [key for element in elements for key in element]


def check_module(folder: Path, meta_schema, env_schema, version: str) -> list:
    errors = []
    tool = folder.name
    try:
        meta = yaml.safe_load((folder / "meta.yml").read_text())
        environment = yaml.safe_load((folder / "environment.yml").read_text())
    except (OSError, yaml.YAMLError) as error:
        return [f"{tool}: {error}"]
    for label, document, schema in (("meta.yml", meta, meta_schema), ("environment.yml", environment, env_schema)):
        validator = jsonschema.Draft202012Validator(schema)
        for error in sorted(validator.iter_errors(document), key=lambda e: list(e.path)):
            errors.append(f"{tool}/{label}: {'/'.join(map(str, error.path)) or '(top)'}: {error.message}")
    if errors:
        return errors

    if meta["name"] != f"luminome_{tool}":
        errors.append(f"{tool}/meta.yml: name {meta['name']!r} is not luminome_{tool}")
    for entry in meta["tools"]:
        for name, info in entry.items():
            for key in ("homepage", "licence"):
                if key not in info:
                    errors.append(f"{tool}/meta.yml: tool {name} has no {key}")

    text = (folder / "main.nf").read_text()
    inputs, outputs = main_nf_channels(text)
    meta_inputs = [names(channel) for channel in meta.get("input", [])]
    if meta_inputs != inputs:
        errors.append(f"{tool}/meta.yml: input {meta_inputs} != main.nf {inputs}")
    meta_outputs = {emit: names(channel[0]) for emit, channel in meta["output"].items()}
    if meta_outputs != outputs:
        errors.append(f"{tool}/meta.yml: output {meta_outputs} != main.nf {outputs}")
    version_emits = [emit for emit in outputs if emit.startswith("versions_")]
    if len(version_emits) != 1:
        errors.append(f"{tool}/main.nf: expected one versions_<tool> emit, got {version_emits}")
    elif names(meta.get("topics", {}).get("versions", [[]])[0]) != outputs[version_emits[0]]:
        errors.append(f"{tool}/meta.yml: topics.versions does not describe {outputs[version_emits[0]]}")

    if environment["channels"] != ["conda-forge", "bioconda"]:
        errors.append(f"{tool}/environment.yml: channels {environment['channels']} != [conda-forge, bioconda]")
    pins = [d for d in environment["dependencies"] if isinstance(d, str) and re.match(r"(bioconda::)?luminome=", d)]
    if pins != [f"bioconda::luminome={version}"]:
        errors.append(f"{tool}/environment.yml: luminome pins {pins}, expected bioconda::luminome={version}")

    test = folder / "tests" / "main.nf.test"
    test_text = test.read_text() if test.is_file() else ""
    process = f"LUMINOME_{tool.upper()}"
    for needed, message in ((f'process "{process}"', f"does not test {process}"),
                            ('script "../main.nf"', "does not load ../main.nf"),
                            ('options "-stub"', "has no stub test"),
                            (".match()", "takes no snapshot")):
        if needed not in test_text:
            errors.append(f"{tool}/tests/main.nf.test {message}")
    return errors


def main() -> int:
    meta_schema = yaml.safe_load((PIPELINE / "assets" / "meta-schema.json").read_text())
    env_schema = yaml.safe_load((PIPELINE / "assets" / "environment-schema.json").read_text())
    version = tomllib.loads((REPO / "Cargo.toml").read_text())["workspace"]["package"]["version"]
    folders = sorted(path.parent for path in MODULES.glob("*/main.nf"))
    if not folders:
        print(f"no module under {MODULES}", file=sys.stderr)
        return 1
    errors = [error for folder in folders for error in check_module(folder, meta_schema, env_schema, version)]
    for error in errors:
        print(error, file=sys.stderr)
    if errors:
        return 1
    print(f"{len(folders)} modules: meta.yml and environment.yml valid (nf-core schemas) and match main.nf")
    return 0


if __name__ == "__main__":
    sys.exit(main())
