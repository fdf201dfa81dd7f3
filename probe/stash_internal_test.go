package probe

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A stash makes the folders above its file, appends (a second session's
// value never erases the first's), resolves "~/", and refuses kernel
// interfaces like every write.
func TestStash(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	for _, v := range []string{"first\n", "second\n"} {
		var rep Report
		if err := doStash(Step{Target: "~/.cache/pip/state", Payload: v}, &rep); err != nil {
			t.Fatal(err)
		}
		if want := filepath.Join(home, ".cache/pip/state"); rep.Excerpt != want {
			t.Errorf("excerpt %q, want the path written %q", rep.Excerpt, want)
		}
	}
	b, err := os.ReadFile(filepath.Join(home, ".cache/pip/state"))
	if err != nil || string(b) != "first\nsecond\n" {
		t.Errorf("file holds %q (%v), want both values, appended", b, err)
	}
	var rep Report
	if err := doStash(Step{Target: "/proc/self/gatehouse-state", Payload: "x"}, &rep); err == nil || !strings.Contains(err.Error(), RefusePrefix) {
		t.Errorf("a stash under /proc: %v, want a refusal", err)
	}
	if rep.Excerpt != "" {
		t.Errorf("a refused stash names a path: %q", rep.Excerpt)
	}
}

// "~/X" is a folder in the agent's home for searches too.
func TestFindRootsOfHome(t *testing.T) {
	t.Setenv("HOME", "/home/agent")
	roots, _, _, err := findRootsOf("~/.cache", nil)
	if err != nil || len(roots) != 1 || roots[0] != "/home/agent/.cache" {
		t.Errorf("roots %v (%v), want /home/agent/.cache", roots, err)
	}
}
