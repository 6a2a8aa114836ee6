#!/bin/bash
# Bioconda build: the licences of every crate compiled into the binaries (THIRDPARTY.yml,
# named in meta.yaml's about.license_file), then every binary crate of the workspace into
# $PREFIX/bin with the same script the container images use (containers/install-binaries.sh).
set -euxo pipefail

export CARGO_PROFILE_RELEASE_STRIP=symbols

cargo-bundle-licenses --format yaml --output THIRDPARTY.yml

CARGO_TARGET_DIR="${SRC_DIR}/target" containers/install-binaries.sh "${PREFIX}"
