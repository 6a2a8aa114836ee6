#!/usr/bin/env bash
# cargo install of every binary crate (binary-crates.sh) into ROOT/bin, sharing one
# target folder so that common dependencies are built once. Crates that declare a
# `cuda` feature get it when LUMINOME_CUDA=1 (Dockerfile.cuda).
# Usage, from the repository root: containers/install-binaries.sh ROOT
set -euo pipefail

root="${1:?usage: install-binaries.sh ROOT}"
here="$(dirname "${BASH_SOURCE[0]}")"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"

for crate in $("$here/binary-crates.sh"); do
    features=()
    if [[ "${LUMINOME_CUDA:-0}" == 1 ]] && grep -Eq '^cuda[[:space:]]*=' "$crate/Cargo.toml"; then
        features=(--features cuda)
    fi
    cargo install --locked --no-track --root "$root" --path "$crate" "${features[@]}"
done
