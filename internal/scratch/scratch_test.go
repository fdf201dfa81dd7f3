package scratch_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/scratch"
)

func TestNewIsPrivateAndReleased(t *testing.T) {
	dir, release, err := scratch.New("reports/../x y")
	if err != nil {
		t.Fatal(err)
	}
	parent, _ := scratch.Dir()
	if filepath.Dir(dir) != parent || strings.ContainsAny(filepath.Base(dir), "/ ") {
		t.Fatalf("folder %s is not a plain child of %s", dir, parent)
	}
	for _, d := range []string{parent, dir} {
		fi, err := os.Lstat(d)
		if err != nil {
			t.Fatal(err)
		}
		if !fi.IsDir() || fi.Mode().Perm()&0o077 != 0 {
			t.Fatalf("%s is %v: want a folder nobody else can enter", d, fi.Mode())
		}
	}
	if os.Geteuid() == 0 && !strings.HasPrefix(dir, scratch.Base+"/") {
		t.Fatalf("as root, %s is not under %s", dir, scratch.Base)
	}
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	if err := release(); err != nil {
		t.Fatalf("release twice: %v", err)
	}
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Fatalf("%s still there after release: %v", dir, err)
	}
}
