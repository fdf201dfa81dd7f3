// Package probetest builds the probe binary once per test binary, for tests
// that run real sandboxes.
package probetest

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/scratch"
)

var (
	once    sync.Once
	path    string
	release func() error // removes the build folder and its ledger entry
	err     error
)

// Build returns the path of a static probe binary built from this module.
// GATEHOUSE_PROBE, when set, names a prebuilt one instead.
func Build(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("GATEHOUSE_PROBE"); p != "" {
		return p
	}
	once.Do(func() {
		// In the harness's root-only scratch folder (on the ledger, so the
		// next sweep removes it): every test session runs this binary as
		// its init, and in the shared /tmp a sandbox that sees the host's
		// /tmp could swap it.
		dir, rel, e := scratch.New("probe")
		if e != nil {
			err = e
			return
		}
		path, release = filepath.Join(dir, "probe"), rel
		cmd := exec.Command("go", "build", "-trimpath", "-o", path, "github.com/gatehouse-dev/gatehouse/cmd/gatehouse-probe")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		out, e := cmd.CombinedOutput()
		if e != nil {
			err = &buildError{out: string(out), err: e}
		}
	})
	if err != nil {
		t.Fatalf("build probe: %v", err)
	}
	return path
}

type buildError struct {
	out string
	err error
}

func (e *buildError) Error() string { return e.err.Error() + ": " + e.out }

// Cleanup removes the folder Build made, if any. Call it from TestMain
// after m.Run: the build is shared by the whole test binary, so no single
// test can own its removal.
func Cleanup() {
	// Through scratch's release, so its ledger entry goes too (a bare
	// RemoveAll left a stale entry per binary that built a probe).
	if release != nil {
		_ = release()
	}
}
