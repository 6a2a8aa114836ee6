"""reftrace lint rules for the Luminome Nextflow pipeline.

    reftrace lint --rules workflows/nextflow/reftrace_rules.py --directory workflows/nextflow

reftrace parses every .nf and .config file (a syntax error fails the run) and then
applies these rules. They hold each tool's module to the nf-core conventions the
pipeline relies on: one process per modules/local/luminome/<tool>/main.nf, tagged
with meta.id, a resource label, ext.args (never meta.args), a stub block, versions on
the `versions` topic, pinned Docker and Singularity containers (the Singularity image an
https:// URL: nf-core tools refuse oras://), a conda environment,
task.accelerator for GPUs, a reference FASTA only as `tuple val(meta2), path(fasta),
path(fai)`, and an nf-test beside it (tests/main.nf.test).
"""

import re
from pathlib import Path

from reftrace import ConfigFile, Module
from reftrace.linting import LintError, LintResults, configrule, rule

# One size label per process, plus any of the modifiers (conf/base.config defines them all).
SIZE_LABELS = {"process_single", "process_low", "process_medium", "process_high"}
MODIFIER_LABELS = {"process_long", "process_high_memory", "process_gpu"}
MODULE_PATH = re.compile(r"(^|/)modules/local/luminome/(?P<tool>[a-z0-9_]+)/main\.nf$")

# Required parts of a module's text, with the message given when one is missing.
REQUIRED_TEXT = [
    (re.compile(r"^\s*stub:\s*$", re.MULTILINE), "has no stub: block"),
    (re.compile(r"\btopic:\s*versions\b"), "emits no versions on the `versions` topic"),
    (re.compile(r"\btask\.ext\.args\b"), "does not read task.ext.args"),
    (re.compile(r"\btask\.ext\.when\b"), "has no `when: task.ext.when == null || task.ext.when`"),
    (re.compile(r"--threads \$\{task\.cpus\}"), "does not pass --threads ${task.cpus}"),
]

# Text a module must not contain: (pattern, message).
FORBIDDEN_TEXT = [
    (re.compile(r"\btask\.ext\.use_gpu\b"), "reads task.ext.use_gpu; nf-core modules read task.accelerator"),
    (re.compile(r"\bmeta\.args\b"), "reads meta.args; tool options come only from task.ext.args"),
]
# A reference FASTA comes in its own nf-core tuple, with its index.
REFERENCE_TUPLE = re.compile(r"tuple\s+val\(meta\d+\),\s*path\(fasta\),\s*path\(fai\)")
# Image references inside a container directive (a plain name, or the names of a ternary,
# nested ones included: reftrace gives the inner ternary back as text): an https:// URL of a
# Singularity image file, or a registry image name (oras:// and docker:// ones included, so that
# they are seen and refused or checked).
IMAGE = re.compile(
    r"https://[^\s'\"]+"
    r"|(?:oras://|docker://)?[a-z0-9][a-z0-9.-]*(?:/[a-z0-9._-]+)+(?::[A-Za-z0-9._-]+)?")
# A version in an image file's name (luminome_0.1.0.sif, or depot-style tool:1.2--build).
FILE_VERSION = re.compile(r"\d+\.\d+")


def pinned(name: str) -> bool:
    """An https:// image names a version in its file name; a registry image has a tag, not latest."""
    last = name.rsplit("/", 1)[-1]
    if name.startswith("https://"):
        return bool(FILE_VERSION.search(last)) and "latest" not in last
    tag = last.rsplit(":", 1)[-1] if ":" in last else ""
    return bool(tag) and tag != "latest"


def is_module(module: Module) -> bool:
    return bool(MODULE_PATH.search(module.path))


@rule
def processes_live_in_modules(module: Module, results: LintResults):
    """Processes are defined only in modules/local/luminome/<tool>/main.nf, one per file."""
    if not module.processes:
        return
    match = MODULE_PATH.search(module.path)
    if not match:
        for process in module.processes:
            results.errors.append(LintError(
                process.line,
                f"process {process.name} must be in modules/local/luminome/<tool>/main.nf"))
        return
    if len(module.processes) != 1:
        results.errors.append(LintError(1, "a module file holds exactly one process"))
    expected = "LUMINOME_" + match["tool"].upper()
    for process in module.processes:
        if process.name != expected:
            results.errors.append(LintError(
                process.line, f"process in {match['tool']}/main.nf must be named {expected}"))


@rule
def tagged_with_meta_id(module: Module, results: LintResults):
    for process in module.processes:
        tags = process.tags
        if len(tags) != 1 or "meta.id" not in tags[0].tag:
            results.errors.append(LintError(
                process.line, f"process {process.name} needs exactly one tag, \"$meta.id\""))


@rule
def resource_labels(module: Module, results: LintResults):
    for process in module.processes:
        labels = [label.value for label in process.labels]
        sizes = [label for label in labels if label in SIZE_LABELS]
        unknown = [label for label in labels if label not in SIZE_LABELS | MODIFIER_LABELS]
        if len(sizes) != 1:
            results.errors.append(LintError(
                process.line,
                f"process {process.name} needs exactly one of {sorted(SIZE_LABELS)}, has {sizes}"))
        if unknown:
            results.errors.append(LintError(
                process.line, f"process {process.name} has labels not in conf/base.config: {unknown}"))


@rule
def pinned_container_and_conda(module: Module, results: LintResults):
    for process in module.processes:
        containers = process.containers
        if not containers:
            results.errors.append(LintError(process.line, f"process {process.name} has no container"))
        for container in containers:
            texts = [container.simple_name] if container.simple_name else [
                name for name in (container.true_name, container.false_name) if name]
            names = [name for text in texts for name in IMAGE.findall(text)]
            if not names:
                results.errors.append(LintError(container.line, f"container {texts!r} names no image"))
            for name in names:
                if not pinned(name):
                    results.errors.append(LintError(
                        container.line, f"container {name!r} needs a pinned version tag"))
                if name.startswith("oras://"):
                    results.errors.append(LintError(
                        container.line,
                        f"container {name!r}: nf-core tools refuse oras:// Singularity images; "
                        "name the https:// URL of the .sif"))
            if is_module(module) and not container.simple_name and not any(
                    name.startswith("https://") for name in names):
                results.errors.append(LintError(
                    container.line,
                    "container needs a Singularity image (an https:// URL) beside the Docker one"))
            if is_module(module) and container.simple_name:
                results.errors.append(LintError(
                    container.line,
                    "container must pick Docker or Singularity on workflow.containerEngine (nf-core pattern)"))
        if not process.condas:
            results.errors.append(LintError(process.line, f"process {process.name} has no conda directive"))
        elif is_module(module) and not (Path(module.path).parent / "environment.yml").exists():
            results.errors.append(LintError(process.line, "environment.yml is missing beside main.nf"))


@rule
def module_text_conventions(module: Module, results: LintResults):
    if not is_module(module):
        return
    text = Path(module.path).read_text()
    for pattern, message in REQUIRED_TEXT:
        if not pattern.search(text):
            results.errors.append(LintError(1, f"module {message}"))
    for pattern, message in FORBIDDEN_TEXT:
        if pattern.search(text):
            results.errors.append(LintError(1, f"module {message}"))
    if re.search(r"\bpath\(fasta\b", text) and not REFERENCE_TUPLE.search(text):
        results.errors.append(LintError(
            1, "the reference must be its own input `tuple val(meta2), path(fasta), path(fai)`"))
    for process in module.processes:
        labels = [label.value for label in process.labels]
        if "process_gpu" in labels and "task.accelerator" not in text:
            results.errors.append(LintError(
                process.line, f"process {process.name} has the process_gpu label but never reads task.accelerator"))
        # A gather computes nothing: under -profile gpu it must not hold a GPU (or 8 CPUs).
        if process.name.endswith("GATHER") and ("process_gpu" in labels or "process_single" not in labels):
            results.errors.append(LintError(
                process.line, f"process {process.name} gathers parts: label it process_single, not process_gpu"))
    folder = Path(module.path).parent
    for required in ("meta.yml", "environment.yml", "tests/main.nf.test"):
        if not (folder / required).exists():
            results.errors.append(LintError(1, f"{required} is missing beside main.nf"))


def uses_params_outside_closure(value) -> bool:
    return bool(value.params) and not value.in_closure


@configrule
def params_in_closures(config: ConfigFile, results: LintResults):
    """Process settings that read params must be closures, so that -params-file and
    command-line values are seen (nf-core rule). publishDir's mode may not be a closure."""
    for process_scope in config.process_scopes:
        scopes = [process_scope] + list(process_scope.named_scopes)
        for scope in scopes:
            for directive in scope.directives:
                if directive.value and uses_params_outside_closure(directive.value):
                    results.errors.append(LintError(
                        directive.line_number, f"{directive.name} uses params outside a closure"))
                for option in directive.options:
                    if directive.name == "publishDir" and option.name == "mode":
                        continue
                    if uses_params_outside_closure(option.value):
                        results.errors.append(LintError(
                            option.line_number,
                            f"{directive.name}.{option.name} uses params outside a closure"))
