package bwrap_test

import (
	"context"
	"github.com/gatehouse-dev/gatehouse/probe/probetest"
	"io"
	"testing"

	"github.com/gatehouse-dev/gatehouse/targets"
	"github.com/gatehouse-dev/gatehouse/targets/bwrap"
)

// BenchmarkSessionStart measures one hardened bubblewrap session from Start
// through a first command to Stop, in a namespace with only lo.
func BenchmarkSessionStart(b *testing.B) {
	benchNeed(b)
	p := benchProfile(b, "bwrap-hardened.yaml")
	nw := benchNetns(b)
	ctx := context.Background()
	tgt := bwrap.New(bwrap.Options{Profile: p, Root: b.TempDir(), Init: probetest.Build(b)})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s, err := tgt.Start(ctx, withPlaces(b, p, targets.Spec{Name: "bench", Path: targets.PathNormal, Network: nw}))
		if err != nil {
			b.Fatal(err)
		}
		res, err := s.Exec(ctx, targets.Command{Args: []string{"/bin/true"}, Stdout: io.Discard, Stderr: io.Discard})
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("exec: %v %+v", err, res)
		}
		if err := s.Stop(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
