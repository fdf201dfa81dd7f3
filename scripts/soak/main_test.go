package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A failed test's output is kept, a passed one's is not, and the counts
// say which failed.
func TestReadKeepsTheOutputOfWhatFailed(t *testing.T) {
	events := strings.Join([]string{
		`{"Action":"run","Package":"p","Test":"TestA"}`,
		`{"Action":"output","Package":"p","Test":"TestA","Output":"all good\n"}`,
		`{"Action":"pass","Package":"p","Test":"TestA"}`,
		`{"Action":"run","Package":"p","Test":"TestB/sub"}`,
		`{"Action":"output","Package":"p","Test":"TestB/sub","Output":"want PASS, got FAIL\n"}`,
		`{"Action":"fail","Package":"p","Test":"TestB/sub","Elapsed":1.5}`,
		`not json`,
	}, "\n")
	keep := t.TempDir()
	counts := map[string]*tally{}
	if n := read(strings.NewReader(events), counts, keep); n != 1 {
		t.Fatalf("%d failures, want 1", n)
	}
	if c := counts["p.TestB/sub"]; c == nil || c.fail != 1 || counts["p.TestA"].pass != 1 {
		t.Fatalf("counts %v", counts)
	}
	files, _ := filepath.Glob(filepath.Join(keep, "*.log"))
	if len(files) != 1 {
		t.Fatalf("kept %v, want only the failed test's output", files)
	}
	b, err := os.ReadFile(files[0])
	if err != nil || !strings.Contains(string(b), "want PASS, got FAIL") || strings.Contains(string(b), "all good") {
		t.Fatalf("kept %q (%v): want the failed test's own output", b, err)
	}
}
