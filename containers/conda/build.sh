#!/bin/bash
# Bioconda-style build: the licences of all linked crates, then a cargo install of
# every binary crate in the workspace into $PREFIX/bin.
set -euxo pipefail

export CARGO_TARGET_DIR="${SRC_DIR}/target"
export CARGO_PROFILE_RELEASE_STRIP=symbols

cargo-bundle-licenses --format yaml --output THIRDPARTY.yml

for crate in $(containers/binary-crates.sh); do
    cargo install --locked --no-track --verbose --root "${PREFIX}" --path "${crate}"
done
