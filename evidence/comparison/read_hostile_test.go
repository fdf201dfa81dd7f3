package comparison

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// compare --run reads folders a hostile runner may have written: a FIFO in
// place of run.json or a link to a host file must be refused, not read or
// waited on.
func TestReadRunRefusesPlantedEntries(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret.json")
	os.WriteFile(secret, []byte(`{"id":"HOST-SECRET","profile":"host"}`), 0o600)
	for name, plant := range map[string]func(dir string) error{
		"run.json is a FIFO":              func(d string) error { return syscall.Mkfifo(filepath.Join(d, "run.json"), 0o644) },
		"run.json links to a host file":   func(d string) error { return os.Symlink(secret, filepath.Join(d, "run.json")) },
		"results.json links to /dev/zero": func(d string) error { return os.Symlink("/dev/zero", filepath.Join(d, "results.json")) },
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "run.json"), []byte(`{"id":"r1","profile":"p"}`), 0o644)
			os.Remove(filepath.Join(dir, "run.json"))
			if name == "results.json links to /dev/zero" {
				os.WriteFile(filepath.Join(dir, "run.json"), []byte(`{"id":"r1","profile":"p"}`), 0o644)
			}
			if err := plant(dir); err != nil {
				t.Fatal(err)
			}
			var col Column
			done := make(chan error, 1)
			go func() { done <- ReadRun(&col, dir) }()
			select {
			case err := <-done:
				if err == nil {
					t.Fatalf("ReadRun accepted it: %+v", col)
				}
				if col.RunID == "HOST-SECRET" {
					t.Fatal("a host file was read as run.json")
				}
			case <-time.After(30 * time.Second):
				t.Fatal("ReadRun still blocked after 30s")
			}
		})
	}
}
