#!/usr/bin/env bash
# Checks that every place naming the Luminome version agrees with the one place it is set:
# [workspace.package] version in the workspace Cargo.toml (the tools' --version). Those places:
# the container definitions (containers/Dockerfile, Dockerfile.cuda, luminome.def), the conda
# recipe template (containers/conda/meta.yaml), the Nextflow pipeline (manifest; each module's
# Docker images, the https URLs of its Singularity images, which are release assets, and its
# environment.yml) and the Snakemake workflow (conda env, image). Also that no image, SIF, release tag, tarball or
# package other than the published names is referred to, in any version. The release workflow
# (.github/workflows/release.yml) reads the version from Cargo.toml and refuses a tag that is not
# v<version>, so it names no version of its own.
# Run from anywhere; run by containers/ci.sh. Exits 1 listing every disagreement.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

version="$(sed -n '/^\[workspace.package\]/,/^\[/s/^version *= *"\([^"]*\)".*/\1/p' Cargo.toml)"
[[ -n "$version" ]] || { echo "check-versions: no [workspace.package] version in Cargo.toml" >&2; exit 1; }
v="${version//./\\.}"
errors=0
fail() { echo "check-versions: $*" >&2; errors=$((errors + 1)); }

# need FILE REGEX: FILE must contain a line matching the (extended) regex.
need() {
    grep -Eq -- "$2" "$1" || fail "$1 lacks /$2/ (version $version)"
}

need containers/Dockerfile "^ARG VERSION=$v\$"
need containers/Dockerfile "ghcr\.io/luminome/luminome:$v( |\$)"
need containers/Dockerfile.cuda "^ARG VERSION=$v\$"
need containers/Dockerfile.cuda "ghcr\.io/luminome/luminome:$v-cuda( |\$)"
need containers/luminome.def "org\.opencontainers\.image\.version $v\$"
# The Singularity images are assets of the GitHub release v<version> (https: nf-core refuses oras://).
sif="https://github\.com/luminome/luminome/releases/download/v$v/luminome_$v"
need containers/luminome.def "$sif\.sif\$"
need containers/conda/meta.yaml "^\{% set version = \"$v\" %\}\$"
need workflows/nextflow/nextflow.config "^ +version += '$v'\$"
for module in workflows/nextflow/modules/local/luminome/*; do
    need "$module/main.nf" "'ghcr\.io/luminome/luminome:$v'"
    need "$module/main.nf" "'$sif\.sif'"
    if grep -q "^ *label 'process_gpu'" "$module/main.nf"; then
        need "$module/main.nf" "'ghcr\.io/luminome/luminome:$v-cuda'"
        need "$module/main.nf" "'$sif-cuda\.sif'"
    fi
    need "$module/environment.yml" "^  - bioconda::luminome=$v\$"
done
need workflows/snakemake/workflow/envs/luminome.yaml "^  - bioconda::luminome=$v\$"
need workflows/snakemake/config/config.yaml "^container: docker://ghcr\.io/luminome/luminome:$v\$"
need workflows/snakemake/workflow/schemas/config.schema.yaml "default: docker://ghcr\.io/luminome/luminome:$v\$"

# Every version-looking mention of an image, a SIF file or the conda package, anywhere in the
# files people read or run, is the workspace version.
# A release's files: SIF images, the binaries' tarball and the source folder and tarball
# (luminome-<version>...), and its tag in a download or archive URL.
files=(README.md docs workflows containers .github)
mentions="$(grep -rnoE \
    'luminome(-sif)?:[0-9][0-9A-Za-z.-]*|luminome ?[=<>]=? ?[0-9][0-9.]*|luminome_[0-9][0-9.]*(-cuda)?\.sif|luminome-[0-9]+\.[0-9]+\.[0-9]+[A-Za-z0-9_.-]*|(download|tags)/v[0-9]+\.[0-9]+\.[0-9]+[0-9A-Za-z.-]*' \
    "${files[@]}" || true)"
stale="$(grep -vE "(luminome(-sif)?:$v(-cuda)?|luminome ?=$v|luminome_$v(-cuda)?\.sif|luminome-$v([-.][A-Za-z0-9_.-]*)?|(download|tags)/v$v(\.tar\.gz)?)\$" <<<"$mentions" || true)"
[[ -z "$stale" ]] || fail "versions other than $version:"$'\n'"$stale"
# Images are published under ghcr.io/luminome only (the project's canonical home).
unpublished="$(grep -rnE '(^|[^./a-z])luminome/luminome(-sif)?:' "${files[@]}" || true)"
[[ -z "$unpublished" ]] || fail "image names without ghcr.io/:"$'\n'"$unpublished"

if (( errors > 0 )); then
    exit 1
fi
echo "check-versions: every container, recipe and workflow pin is $version"
