package steps

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

// A report swapped in the spool for a link to a host secret, or for a
// FIFO, is refused: the secret never reaches the evidence, nothing blocks.
func TestMoveReportsRefusesPlantedEntries(t *testing.T) {
	base := t.TempDir()
	secret := filepath.Join(base, "host-secret")
	if err := os.WriteFile(secret, []byte("HOST-SECRET-VALUE"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, plant := range []struct {
		name string
		make func(p string) error
	}{
		{"link to a host secret", func(p string) error { return os.Symlink(secret, p) }},
		{"FIFO", func(p string) error { return syscall.Mkfifo(p, 0o644) }},
	} {
		t.Run(plant.name, func(t *testing.T) {
			spool := filepath.Join(t.TempDir(), "spool")
			if err := os.Mkdir(spool, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := plant.make(filepath.Join(spool, "junit.xml")); err != nil {
				t.Fatal(err)
			}
			folder, err := evidence.Create(t.TempDir(), "run")
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- moveReports(spool, folder) }()
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("moveReports still blocked after 10s")
			}
			if err == nil {
				t.Error("moveReports accepted a planted report")
			}
			// Looked at, never opened: a FIFO moved in would block a read.
			if fi, err := os.Lstat(filepath.Join(folder.Dir(), "reports", "junit.xml")); err == nil {
				got := ""
				if fi.Mode().IsRegular() {
					b, _ := os.ReadFile(filepath.Join(folder.Dir(), "reports", "junit.xml"))
					got = string(b)
				}
				t.Fatalf("the evidence holds a %v (%q) where the report was planted", fi.Mode().Type(), got)
			}
		})
	}
}

// Plain reports are copied whole; a missing one is not an error.
func TestMoveReportsCopiesRegularFiles(t *testing.T) {
	spool := t.TempDir()
	if err := os.WriteFile(filepath.Join(spool, "cucumber.json"), []byte("[]"), 0o644); err != nil {
		t.Fatal(err)
	}
	folder, err := evidence.Create(t.TempDir(), "run")
	if err != nil {
		t.Fatal(err)
	}
	if err := moveReports(spool, folder); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(folder.Dir(), "reports", "cucumber.json")); err != nil || string(b) != "[]" {
		t.Fatalf("cucumber.json: %q, %v", b, err)
	}
}
