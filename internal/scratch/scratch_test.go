package scratch_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/ledger"
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
	// The parent may keep a search bit a docker session in a private user
	// namespace added; nobody else may list or write either.
	for d, forbidden := range map[string]os.FileMode{parent: 0o076, dir: 0o077} {
		fi, err := os.Lstat(d)
		if err != nil {
			t.Fatal(err)
		}
		if !fi.IsDir() || fi.Mode().Perm()&forbidden != 0 {
			t.Fatalf("%s is %v: want a folder nobody else can list or write", d, fi.Mode())
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

// A run killed with SIGKILL leaves its scratch folders; the ledger's sweep
// (`gatehouse lab down`, the next run) removes them, and only them.
func TestSweepRemovesWhatAKilledRunLeft(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the ledger and scratch live under /run/gatehouse")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperScratchThenHang$")
	cmd.Env = append(os.Environ(), "GH_SCRATCH_HELPER=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var dirs []string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "scratch "); ok {
			dirs = append(dirs, d)
		}
		if sc.Text() == "ready" {
			break
		}
	}
	if len(dirs) != 2 {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("helper made %v", dirs)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	for _, d := range dirs {
		if _, err := os.Lstat(d); err != nil {
			t.Fatalf("%s gone before the sweep: %v", d, err)
		}
	}
	// Ours, made by this live process: the sweep must leave it.
	mine, release, err := scratch.New("live")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := ledger.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if _, err := os.Lstat(d); !os.IsNotExist(err) {
			t.Errorf("%s still there after the sweep (%v)", d, err)
		}
	}
	if _, err := os.Lstat(mine); err != nil {
		t.Errorf("the live process's scratch folder was swept: %v", err)
	}
}

func TestHelperScratchThenHang(t *testing.T) {
	if os.Getenv("GH_SCRATCH_HELPER") == "" {
		t.Skip("helper for TestSweepRemovesWhatAKilledRunLeft")
	}
	for _, kind := range []string{"reports", "bwrap-s1"} {
		d, _, err := scratch.New(kind)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "f"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		fmt.Println("scratch " + d)
	}
	fmt.Println("ready")
	time.Sleep(time.Hour) // killed with SIGKILL: no cleanup runs
}
