package bundle_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence/bundle"
)

// A full run: 12 gates on both paths and 5,000 trace lines of each kind
// (about 2 MB of traces).
const benchGates, benchHits = 12, 5000

func BenchmarkSeal(b *testing.B) {
	s, _, _ := testKeys(b)
	src := filepath.Join(b.TempDir(), "src")
	writeRun(b, src, benchGates, benchHits, testImage)
	ctx := context.Background()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		dir := filepath.Join(b.TempDir(), "run-1")
		if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := bundle.Seal(ctx, dir, s); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerify(b *testing.B) {
	s, v, _ := testKeys(b)
	dir := filepath.Join(b.TempDir(), "run-1")
	writeRun(b, dir, benchGates, benchHits, testImage)
	ctx := context.Background()
	if err := bundle.Seal(ctx, dir, s); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := bundle.Verify(ctx, dir, v); err != nil {
			b.Fatal(err)
		}
	}
}
