#!/usr/bin/env bash
# Prints the folder of every workspace crate that builds a binary (tools/<crate> with
# src/main.rs, src/bin/, or a [[bin]] section), one per line. Shared by the Dockerfiles,
# the Apptainer definition and the conda build.sh so that a new tool is packaged
# everywhere without editing them. Run from the repository root.
set -euo pipefail

for manifest in tools/*/Cargo.toml; do
    crate="${manifest%/Cargo.toml}"
    if [[ -f "$crate/src/main.rs" || -d "$crate/src/bin" ]] || grep -q '^\[\[bin\]\]' "$manifest"; then
        echo "$crate"
    fi
done
