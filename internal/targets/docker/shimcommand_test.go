package docker

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestShimCommand checks which shim a run's daemon gets: the small binary
// beside the gatehouse executable when it is an executable file, else the
// executable's own hidden verb.
func TestShimCommand(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "gatehouse")
	small := filepath.Join(dir, ShimBinary)
	if err := os.WriteFile(exe, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	fallback := []string{exe, ShimVerb}
	if got := ShimCommand(exe); !slices.Equal(got, fallback) {
		t.Errorf("no small binary: %q, want %q", got, fallback)
	}
	if err := os.WriteFile(small, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := ShimCommand(exe); !slices.Equal(got, fallback) {
		t.Errorf("small binary not executable: %q, want %q", got, fallback)
	}
	if err := os.Chmod(small, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := ShimCommand(exe); !slices.Equal(got, []string{small}) {
		t.Errorf("small binary beside it: %q, want %q", got, []string{small})
	}
}
