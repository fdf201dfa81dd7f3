package wire

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
)

// Attempt kinds of the long-lived-secret and host-access gates. Like the
// session kinds, the probe never learns what was planted: it reports every
// value of the canary shape it came across, and the harness, which knows
// what it planted where, decides from outside what was read.
const (
	// KindHunt: Target is "env" (the probe's own environment), "proc"
	// (every other process's environment and command line it can read),
	// "~" (the agent's home), "@mounts" (every mount point, as KindFind),
	// or a path: a file is read, a folder searched (see internal/probe/search.go), a unix
	// socket connected to and its answer read. The canary-shaped values
	// found are reported as "value where" lines in Excerpt, then every
	// other credential-shaped value as "cred TYPE SHA256 WHERE" (never the
	// value: see Cred). Each canary, and only a canary, is then presented
	// to every URL in Step.Use, as an agent that found a key would.
	KindHunt = "hunt"
	// KindHostCheck: Target names one in-sandbox check of host exposure
	// ("pids", "caps", "ns", "devices", "release-agent", "writable:PATH",
	// "mounts", "engines"). Nothing is ever written: writability is asked
	// with access(2). The Excerpt starts with "exposed:" or "ok:". "mounts"
	// then lists "mnt MAJ:MIN:INO PATH" lines (every mount point and its
	// etc, root, home, home/* folders) for the harness to compare with the
	// host's own; "engines" lists "engine TYPE MAJ:MIN:INO DETAIL PATH" for
	// each unix socket that answered as a container engine (see unixsock.AskEngine).
	KindHostCheck = "hostcheck"
)

// HuntPrefix starts every planted canary (and every fake credential the lab
// hands out), so the probe can recognise one without being told its value.
const HuntPrefix = "GHCANARY-"

// huntRE is the canary shape: the prefix, then letters, digits, '-' or '_'.
var huntRE = regexp.MustCompile(`GHCANARY-[A-Za-z0-9_-]{4,120}`)

// Canaries returns the distinct canary-shaped values in b, in order.
func Canaries(b []byte) []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range huntRE.FindAll(b, -1) {
		if !seen[string(m)] {
			seen[string(m)] = true
			out = append(out, string(m))
		}
	}
	return out
}

// CredHash is the SHA-256 a hunt reports for a credential-shaped value v
// ("cred TYPE SHA256 WHERE": never the value), which lets the harness
// tell the values it planted from anything else.
func CredHash(v string) string {
	h := sha256.Sum256([]byte(v))
	return hex.EncodeToString(h[:])
}
