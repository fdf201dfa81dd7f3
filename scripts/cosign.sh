#!/bin/sh
# Builds the cosign CLI from the Go module proxy into a cache folder keyed by
# version, so interop tests use a binary we built, not a downloaded release.
# Prints the binary's path on stdout. Usage: scripts/cosign.sh [version]
set -eu
version="${1:-${COSIGN_VERSION:-v2.6.5}}"
cache="${GATEHOUSE_CACHE:-/var/cache/gatehouse}/cosign-${version}"
bin="${cache}/cosign"
if [ -x "$bin" ] && "$bin" version >/dev/null 2>&1; then
	echo "$bin"
	exit 0
fi
mkdir -p "$cache"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# A throwaway module pins the exact version without touching our go.mod.
cd "$work"
go mod init cosignbuild >/dev/null 2>&1
major="$(echo "$version" | sed -n 's/^v\([0-9]*\)\..*/\1/p')"
mod="github.com/sigstore/cosign/v${major}"
GOFLAGS=-mod=mod go get "${mod}@${version}" >&2
CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "-s -w" -o "${bin}.tmp" "${mod}/cmd/cosign" >&2
mv "${bin}.tmp" "$bin"
echo "$bin"
