package docker_test

import (
	"context"
	"os"
	"os/exec"
	"sort"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/targets"
	"github.com/gatehouse-dev/gatehouse/targets/docker"
)

// BenchmarkColdStart compares a bare `docker run --rm` of the probe base
// image (the runtime's own cold start, by hand) with a session through the
// target on the lab daemon's shimmed runtime (create with the probe
// placed, start, first exec, stop), per runtime. Besides ns/op it reports the
// median and p95 of the iterations (use -benchtime 20x).
func BenchmarkColdStart(b *testing.B) {
	needLab(b)
	ctx := context.Background()
	ref, err := docker.BaseImage(ctx, labDaemon.Host(), docker.BusyboxPath)
	if err != nil {
		b.Fatal(err)
	}
	// The real probe when the bench script names it (a run places it from
	// that host path), else bytes of about its size.
	probe := targets.File{Data: make([]byte, 6<<20), Mode: 0o755}
	if p := os.Getenv("GATEHOUSE_PROBE"); p != "" {
		probe = targets.File{HostPath: p, Mode: 0o755}
	}
	for _, rt := range []string{"runc", "runsc"} {
		b.Run(rt+"/docker-run", func(b *testing.B) {
			if rt == "runsc" {
				needRunsc(b)
			}
			timeEach(b, func() {
				out, err := exec.Command("docker", "-H", labDaemon.Host(), "run", "--rm", "--network", "none", "--runtime", rt, ref, "true").CombinedOutput()
				if err != nil {
					b.Fatalf("docker run: %v: %s", err, out)
				}
			})
		})
		b.Run(rt+"/target", func(b *testing.B) {
			if rt == "runsc" {
				needRunsc(b)
			}
			tg, err := docker.NewLab(labDaemon, docker.Options{Spec: docker.Spec{Runtime: rt, Network: docker.NetworkNone}})
			if err != nil {
				b.Fatal(err)
			}
			files := map[string]targets.File{"/gatehouse/bin/probe": probe}
			timeEach(b, func() {
				s, err := tg.Start(ctx, targets.Spec{Name: "bench-" + randomSuffix(), Path: targets.PathNormal, Files: files})
				if err != nil {
					b.Fatal(err)
				}
				res, err := s.Exec(ctx, targets.Command{Args: []string{"true"}})
				if err != nil || res.ExitCode != 0 {
					b.Fatalf("first exec: %v %+v", err, res)
				}
				if err := s.Stop(ctx); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// timeEach runs fn b.N times and reports the median and p95 in ms.
func timeEach(b *testing.B, fn func()) {
	ds := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		fn()
		ds = append(ds, time.Since(t0))
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(ds[len(ds)/2]), "ms-median")
	b.ReportMetric(ms(ds[(len(ds)*95+99)/100-1]), "ms-p95")
}
