#!/bin/sh
# Builds gVisor's runsc from the Go module proxy, as platform-notes says:
# pinned version, static (a cgo build cannot fork its umounter inside the
# sandbox), cached by version, then installed to /usr/local/bin/runsc when
# that is missing or differs. Idempotent; says what it did on stderr and
# prints the installed path on stdout. Usage: scripts/runsc.sh [version]
set -eu
version="${1:-${RUNSC_VERSION:-v0.0.0-20260905035102-160fafc42237}}"
cache="${GATEHOUSE_CACHE:-/var/cache/gatehouse}/runsc-${version}"
bin="${cache}/runsc"
dest="${RUNSC_DEST:-/usr/local/bin/runsc}"

if [ -x "$bin" ]; then
	echo "runsc: cached build ${bin}" >&2
else
	mkdir -p "$cache"
	work="$(mktemp -d)"
	trap 'rm -rf "$work"' EXIT
	echo "runsc: building ${version} (cold build takes about 6 min on 2 cores)" >&2
	# GOBIN puts the binary straight into a temp folder; mv makes the
	# cache entry appear whole or not at all.
	(cd "$work" && CGO_ENABLED=0 GOBIN="$work/bin" GOFLAGS=-mod=mod \
		go install -trimpath \
		-ldflags "-s -w -X gvisor.dev/gvisor/runsc/version.version=${version}" \
		"gvisor.dev/gvisor/runsc@${version}") >&2
	mv "$work/bin/runsc" "${bin}.tmp"
	mv "${bin}.tmp" "$bin"
	echo "runsc: built ${bin}" >&2
fi

if [ -x "$dest" ] && cmp -s "$bin" "$dest"; then
	echo "runsc: ${dest} already is ${version}" >&2
else
	install -m 0755 "$bin" "${dest}.tmp"
	mv "${dest}.tmp" "$dest"
	echo "runsc: installed ${version} to ${dest}" >&2
fi
echo "$dest"
