package gate_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence/gate"
	"github.com/gatehouse-dev/gatehouse/evidence/index"
)

// BenchmarkGate: index lookup plus decision on an index of 10,000 runs
// (100 policies x 2 images x 50 runs, 12 gates on both paths each).
func BenchmarkGate(b *testing.B) {
	ctx := context.Background()
	ix, err := index.Open(ctx, filepath.Join(b.TempDir(), index.DefaultName))
	if err != nil {
		b.Fatal(err)
	}
	defer ix.Close()
	var gates []string
	for g := 0; g < 12; g++ {
		gates = append(gates, fmt.Sprintf("gate-%02d", g))
	}
	rs := results(gates...)
	var runs []index.Run
	for p := 0; p < 100; p++ {
		for i := 0; i < 100; i++ {
			img := fmt.Sprintf("sha256:image-%d", i%2)
			runs = append(runs, runRow(fmt.Sprintf("p%d-r%d", p, i), fmt.Sprintf("sha256:policy-%d", p), img,
				time.Duration(100-i)*time.Minute, rs))
		}
	}
	if err := ix.RecordAll(ctx, runs); err != nil {
		b.Fatal(err)
	}
	req := gate.Request{PolicyDigest: "sha256:policy-42", ImageDigest: "sha256:image-1", Require: gates,
		MaxAge: 24 * time.Hour, Now: now}
	for b.Loop() {
		rows, err := ix.Candidates(ctx, req.PolicyDigest)
		if err != nil {
			b.Fatal(err)
		}
		if d := gate.Decide(req, rows); !d.Pass || d.Run.ID != "p42-r99" {
			b.Fatalf("%s", d.Reason())
		}
	}
}
