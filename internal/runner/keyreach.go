package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
)

// ReachError refuses to sign in a process that runs a profile's sandboxes
// when the guest could reach what signs: the process itself (its memory,
// its environment), the key file, or the harness's binary.
type ReachError struct {
	Profile string
	Keyless bool // the refused flag: --keyless, else --key
	Reasons []profile.HostAccess
}

func (e *ReachError) Error() string {
	flag, seal := "--key", "gatehouse seal --key cosign.key RUN_FOLDER"
	if e.Keyless {
		flag, seal = "--keyless", "gatehouse seal --keyless --trusted-root FILE RUN_FOLDER"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s refused: profile %s puts the host within the guest's reach, and a guest that reaches the host reads the signing process's key and its password:", flag, e.Profile)
	for _, r := range e.Reasons {
		fmt.Fprintf(&b, "\n  - %s", r)
	}
	fmt.Fprintf(&b, "\nRun it without %s here, on a disposable runner, then seal the run folder in a separate job that runs no sandbox:\n  %s\n(docs/ci.md, \"Sealing on a separate job\")", flag, seal)
	return b.String()
}

// CheckSigning refuses (*ReachError) to hold a signing key in a process
// that runs prof's sandboxes when the profile puts the host within the
// guest's reach (profile.HostReach), shows the guest the key file (keyPath,
// "" for keyless), or lets it write the folder of this very binary, which
// the next run would start. Call it before the key is read.
func CheckSigning(prof *profile.Profile, keyPath string) error {
	reasons := prof.HostReach()
	if keyPath != "" {
		for _, p := range hostPaths(keyPath) {
			if a, ok := prof.Exposes(p); ok {
				reasons = append(reasons, profile.HostAccess{Field: a.Field, Why: "the key file: " + a.Why})
				break
			}
		}
	}
	if exe, err := os.Executable(); err == nil {
		for _, p := range hostPaths(exe) {
			if a, ok := prof.Exposes(p); ok && a.Writable {
				reasons = append(reasons, profile.HostAccess{Field: a.Field, Why: "the harness's own binary, writable: " + a.Why})
				break
			}
		}
	}
	if len(reasons) == 0 {
		return nil
	}
	return &ReachError{Profile: prof.Name, Keyless: keyPath == "", Reasons: reasons}
}

// hostPaths is p made absolute, and again with its links resolved: a bind
// may show either.
func hostPaths(p string) []string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return []string{filepath.Clean(p)}
	}
	out := []string{abs}
	if real, err := filepath.EvalSymlinks(abs); err == nil && real != abs {
		out = append(out, real)
	}
	return out
}
