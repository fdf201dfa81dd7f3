package scratch

import (
	"os"
	"path/filepath"
	"testing"
)

// A scratch folder removed under a long-lived process is made again: a CI
// run once failed every scenario after its /run/gatehouse/scratch was
// removed by a `lab down --all` next to it. (The real folder is not
// removed here: other runs may be using it; the remembered one is made
// to point at a folder that is gone.)
func TestDirMadeAgainWhenItWasRemoved(t *testing.T) {
	want, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	baseMu.Lock()
	base = filepath.Join(t.TempDir(), "removed")
	baseMu.Unlock()
	got, err := Dir()
	if err != nil {
		t.Fatalf("Dir after its folder went: %v", err)
	}
	if got != want {
		t.Fatalf("Dir after its folder went = %s, want %s", got, want)
	}
	if fi, err := os.Lstat(got); err != nil || !fi.IsDir() {
		t.Fatalf("%s is not a folder: %v", got, err)
	}
	dir, release, err := New("again")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if filepath.Dir(dir) != want {
		t.Fatalf("New made %s outside %s", dir, want)
	}
}
