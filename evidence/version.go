package evidence

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"runtime/debug"
	"sort"
	"strings"
)

// version is set at link time (-X github.com/gatehouse-dev/gatehouse/evidence.version=...) by the Makefile.
var version = ""

// HarnessVersion names the harness build that produced a run.
func HarnessVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				return "dev-" + s.Value
			}
		}
	}
	return "dev"
}

// SHA256 is the digest notation used throughout the evidence.
func SHA256(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// PolicyDigest is a run's policy_digest from its policy_files (name →
// SHA256 of the file): the sha256 of the "<hex>  <name>" listing, sorted by
// name, as profile.Digest computes it and verify recomputes it.
func PolicyDigest(files map[string]string) string {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "%s  %s\n", strings.TrimPrefix(files[n], "sha256:"), n)
	}
	return SHA256([]byte(b.String()))
}
