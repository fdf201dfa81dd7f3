package bundle_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence/bundle"
)

// FuzzParseSums: the parser never panics, and whatever it accepts formats
// back to exactly the input (one canonical form, nowhere to hide a line).
func FuzzParseSums(f *testing.F) {
	f.Add([]byte("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef  run.json\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, in []byte) {
		entries, err := bundle.ParseSums(in)
		if err != nil {
			return
		}
		if out := bundle.FormatSums(entries); string(out) != string(in) {
			t.Fatalf("accepted %q but formats as %q", in, out)
		}
	})
}

// FuzzVerify replaces the test-result attestation of a sealed bundle with
// fuzzed bytes. Verify must never panic, and may only succeed when the
// signed statement is the original one.
func FuzzVerify(f *testing.F) {
	s, v, _ := testKeys(f)
	dir := filepath.Join(f.TempDir(), "run-1")
	writeRun(f, dir, 2, 3, testImage)
	if err := bundle.Seal(context.Background(), dir, s); err != nil {
		f.Fatal(err)
	}
	att := filepath.Join(dir, bundle.TestResultFile)
	orig, err := os.ReadFile(att)
	if err != nil {
		f.Fatal(err)
	}
	good, err := bundle.Verify(context.Background(), dir, v)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(orig)
	f.Fuzz(func(t *testing.T, in []byte) {
		if err := os.WriteFile(att, in, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := bundle.Verify(context.Background(), dir, v)
		if err != nil {
			return
		}
		if got.TestResult.Result != good.TestResult.Result ||
			len(got.TestResult.PassedTests) != len(good.TestResult.PassedTests) {
			t.Fatalf("accepted a different statement: %+v", got.TestResult)
		}
	})
}
