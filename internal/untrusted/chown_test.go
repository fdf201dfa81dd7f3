package untrusted_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/untrusted"
)

// ChownTree gives a tree away without following a link out of it and
// without handing over a file that has a name elsewhere (a hard link).
func TestChownTreeFollowsNoLinks(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown")
	}
	root := t.TempDir()
	outside := filepath.Join(root, "outside")
	tree := filepath.Join(root, "tree")
	for _, d := range []string{outside, filepath.Join(tree, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	victim := filepath.Join(outside, "victim")
	if err := os.WriteFile(victim, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	own := filepath.Join(tree, "sub", "own")
	if err := os.WriteFile(own, []byte("y"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(tree, "to-outside")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(tree, "sub", "to-victim")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(victim, filepath.Join(tree, "hard")); err != nil {
		t.Fatal(err)
	}
	const uid, gid = 2000000001, 2000000001
	if err := untrusted.ChownTree(context.Background(), tree, uid, gid, true, untrusted.Limits{}); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]uint32{
		tree: uid, filepath.Join(tree, "sub"): uid, own: uid,
		filepath.Join(tree, "to-outside"): uid, // the link itself
		outside:                           0, victim: 0,
	} {
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			t.Fatal(err)
		}
		if st.Uid != want {
			t.Errorf("%s: uid %d, want %d", p, st.Uid, want)
		}
	}
	// Only the top, when not whole.
	if err := os.Chown(own, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := untrusted.ChownTree(context.Background(), tree, uid, gid, false, untrusted.Limits{}); err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(own, &st); err != nil || st.Uid != 0 {
		t.Errorf("not whole: %s handed over (uid %d, %v)", own, st.Uid, err)
	}
}
