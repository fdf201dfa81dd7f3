package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/ledger"
)

// `lab down --all` while another run holds its ledger refuses, names the
// run's pid and removes nothing: it once pulled a CI run's scratch folder
// from under it.
func TestLabDownAllRefusesWhileARunGoesOn(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the ledger lives under /run/gatehouse")
	}
	owner := filepath.Join(ledger.Root, "987654-0000feed")
	if err := os.MkdirAll(owner, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(owner) })
	lock := filepath.Join(owner, "lock")
	if err := os.WriteFile(lock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(lock, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	sentinel := filepath.Join(stateDir, "gatehouse-test-sentinel")
	if err := os.WriteFile(sentinel, []byte("a run's\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(sentinel) })

	r := gatehouse(t, t.Context(), "lab", "down", "--all")
	if r.code != exitInconclusive {
		t.Fatalf("lab down --all while a run held its ledger: exit %d, want %d (could not finish)\n%s%s", r.code, exitInconclusive, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "going on (pid ") || !strings.Contains(r.stderr, "987654") {
		t.Errorf("the refusal does not name the run going on:\n%s", r.stderr)
	}
	if _, err := os.Stat(sentinel); err != nil {
		t.Errorf("lab down --all removed %s while refusing: %v", sentinel, err)
	}
	if _, err := os.Stat(lock); err != nil {
		t.Errorf("lab down --all removed the live run's ledger: %v", err)
	}
}
