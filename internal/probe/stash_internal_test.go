package probe

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// A stash makes the folders above its file, appends (a second session's
// value never erases the first's), resolves "~/", and refuses kernel
// interfaces like every write.
func TestStash(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	for i, v := range []string{"first\n", "second\n"} {
		var rep wire.Report
		if err := doStash(wire.Step{Target: "~/.cache/pip/state", Payload: v}, &rep); err != nil {
			t.Fatal(err)
		}
		// The first made both folders and says so; the second made none.
		wantMade := []string{filepath.Join(home, ".cache/pip"), filepath.Join(home, ".cache")}
		if i == 1 {
			wantMade = nil
		}
		if !slices.Equal(rep.Made, wantMade) {
			t.Errorf("stash %d: made %q, want %q", i, rep.Made, wantMade)
		}
		if want := filepath.Join(home, ".cache/pip/state"); rep.Excerpt != want || len(rep.Wrote) != 1 || rep.Wrote[0] != want {
			t.Errorf("excerpt %q, wrote %q; want the path written %q in both", rep.Excerpt, rep.Wrote, want)
		}
	}
	b, err := os.ReadFile(filepath.Join(home, ".cache/pip/state"))
	if err != nil || string(b) != "first\nsecond\n" {
		t.Errorf("file holds %q (%v), want both values, appended", b, err)
	}
	var rep wire.Report
	if err := doStash(wire.Step{Target: "/proc/self/gatehouse-state", Payload: "x"}, &rep); err == nil || !strings.Contains(err.Error(), wire.RefusePrefix) {
		t.Errorf("a stash under /proc: %v, want a refusal", err)
	}
	if rep.Excerpt != "" || len(rep.Wrote) > 0 {
		t.Errorf("a refused stash names a path: %q, %q", rep.Excerpt, rep.Wrote)
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

// A send through shared folders and a receive on a socket file list what
// they left, by the names the harness computes (XSFile, XSSocket); the
// list stays within its caps however many folders there are.
func TestWroteNamesWhatWasLeft(t *testing.T) {
	dir := t.TempDir()
	var rep wire.Report
	send, done := sendFiles(dir, "ghc0123456789abcdef", func(p string) { wrote(&rep, p) })
	if err := send(t.Context()); err != nil {
		t.Fatal(err)
	}
	name, content := wire.XSFile("ghc0123456789abcdef", dir)
	want := filepath.Join(dir, name)
	if b, err := os.ReadFile(want); err != nil || string(b) != content {
		t.Errorf("%s holds %q (%v), want %q", want, b, err, content)
	}
	if len(rep.Wrote) != 1 || rep.Wrote[0] != want {
		t.Errorf("wrote %q, want [%s]", rep.Wrote, want)
	}
	done()

	rep = wire.Report{}
	for i := range 2 * wire.MaxWrote {
		wrote(&rep, fmt.Sprintf("/%s/%d", strings.Repeat("d", 200), i))
	}
	wrote(&rep, "relative/path")
	n := 0
	for _, p := range rep.Wrote {
		n += len(p)
		if !filepath.IsAbs(p) {
			t.Errorf("a relative path listed: %q", p)
		}
	}
	if len(rep.Wrote) > wire.MaxWrote || n > wire.MaxWroteBytes {
		t.Errorf("%d paths, %d bytes: past the caps %d, %d", len(rep.Wrote), n, wire.MaxWrote, wire.MaxWroteBytes)
	}
}

// Each beat carries the session's tag.
func TestBeatCarriesTheTag(t *testing.T) {
	f := filepath.Join(t.TempDir(), "beat-main")
	appendBeat(f, "ghc0123456789abcdef")
	appendBeat(f, "ghc0123456789abcdef")
	if b, _ := os.ReadFile(f); string(b) != strings.Repeat(wire.BeatLine("ghc0123456789abcdef"), 2) {
		t.Errorf("beats %q", b)
	}
}
