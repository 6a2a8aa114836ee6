#!/usr/bin/env python3
"""Checks that every job reading a dataset also declares the files read from beside it.

    python3 check_sidecars.py [snakemake options...]

Run from workflows/snakemake with the options of a run (e.g. --directory .test --config
outdir=RESULTS). The tools read a token or pair dataset's .index.tsv and a region dataset's
.samples.tsv and .regions.tsv from beside the .safetensors they are given. A rule that does not
declare them works on a shared filesystem only by luck (not with remote storage or a job's
own scratch copy) and is not rerun when they change.

A forced dry run (--dry-run --forceall) lists every job of the resolved DAG with its input
files; every job whose inputs include a dataset written by the tokenize, mask_pairs or regions
rules must list that dataset's sidecars too.
"""

import re
import subprocess
import sys

SIDECARS = {
    "/tokenize/": [".index.tsv"],
    "/mask_pairs/": [".index.tsv"],
    "/regions/": [".samples.tsv", ".regions.tsv"],
}


def main() -> int:
    result = subprocess.run(["snakemake", "--dry-run", "--forceall", *sys.argv[1:]], capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"snakemake --dry-run --forceall failed:\n{result.stdout}{result.stderr}")
    jobs = {}
    for rule, inputs, outputs in re.findall(
            r"^rule (\w+):\n    input: (.*)\n    output: (.*)$", result.stdout, re.MULTILINE):
        jobs[(rule, frozenset(inputs.split(", ")))] = outputs.split(", ")
    checked, errors = 0, []
    for (rule, inputs), outputs in sorted(jobs.items()):
        for path in sorted(inputs):
            folder = next((f for f in SIDECARS if f in path), None)
            # Embeddings and the parts of a sharded run are single files with no sidecar.
            single = path.endswith((".embeddings.safetensors", ".part.safetensors"))
            if folder is None or not path.endswith(".safetensors") or single:
                continue
            stem = path.removesuffix(".safetensors")
            missing = [stem + suffix for suffix in SIDECARS[folder] if stem + suffix not in inputs]
            checked += 1
            if missing:
                errors.append(f"{rule} (writing {outputs[0]}) reads {path} but does not declare {missing}")
    for error in errors:
        print(f"FAIL {error}", file=sys.stderr)
    if not checked:
        raise SystemExit("no job reads a dataset: nothing was checked")
    if not errors:
        print(f"{checked} dataset inputs of {len(jobs)} jobs: every one declares its sidecars")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
