package evidence_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

func TestFolderIsPartialUntilFinished(t *testing.T) {
	out := t.TempDir()
	f, err := evidence.Create(out, "run1")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.WriteJSON("run.json", map[string]bool{"complete": false}); err != nil {
		t.Fatal(err)
	}
	if err := f.AppendJSONL("traces/endpoint-hits.jsonl", evidence.Hit{Endpoint: "callback"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, "run1")); !os.IsNotExist(err) {
		t.Fatalf("final folder exists before Finish: %v", err)
	}
	dir, err := f.Finish()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "traces/endpoint-hits.jsonl"))
	if err != nil || len(b) == 0 {
		t.Fatalf("trace not written: %v %q", err, b)
	}
	if _, err := os.Stat(filepath.Join(out, ".run1.partial")); !os.IsNotExist(err) {
		t.Fatal("partial folder left behind")
	}
	if _, err := evidence.Create(out, "run1"); err == nil {
		t.Fatal("Create over an existing run succeeded")
	}
}

func TestFolderRefusesEscapingNames(t *testing.T) {
	f, err := evidence.Create(t.TempDir(), "run2")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"../x", "/etc/passwd", "."} {
		if err := f.WriteFile(name, []byte("x")); err == nil {
			t.Errorf("WriteFile(%q) succeeded", name)
		}
	}
	if _, err := evidence.Create(t.TempDir(), "../up"); err == nil {
		t.Error("Create with an escaping id succeeded")
	}
	if dir := f.Abandon(); filepath.Base(dir) != ".run2.partial" {
		t.Errorf("abandoned folder %s", dir)
	}
}
