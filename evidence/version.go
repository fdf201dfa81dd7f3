package evidence

import (
	"crypto/sha256"
	"encoding/hex"
	"runtime/debug"
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
