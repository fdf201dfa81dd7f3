package docker_test

import (
	"context"
	"os"
	"os/exec"
	"sort"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/targets/docker"
	"github.com/gatehouse-dev/gatehouse/targets"
)

// BenchmarkColdStart compares, per runtime, the runtime's own cold start by
// hand with a Gatehouse session, on the lab daemon, same image (the probe
// base image), same runtime binary, same network mode (none):
//
//   - bare: `docker -H LAB run --rm --network none --runtime RT IMAGE true`,
//     the docker CLI's whole run: create, start, the container's command,
//     wait, and the removal --rm waits for.
//   - session: target Start (create with the probe placed, through the
//     gatehouse-RT shim, start), a first Exec of true, Stop (the container
//     removed): what every scenario of a run pays.
//
// The two alternate within each iteration (their order swapping every
// time), so that load from elsewhere on the machine falls on both alike,
// after one untimed of each (page cache). It reports the median and p95
// of each and the overhead of the session median over the bare median, in
// percent (use -benchtime 20x).
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
	files := map[string]targets.File{"/gatehouse/bin/probe": probe}
	for _, rt := range []string{"runc", "runsc"} {
		b.Run(rt, func(b *testing.B) {
			if rt == "runsc" {
				needRunsc(b)
			}
			tg, err := docker.NewLab(labDaemon, docker.Options{Spec: docker.Spec{Runtime: rt, Network: docker.NetworkNone}})
			if err != nil {
				b.Fatal(err)
			}
			bare := func() {
				out, err := exec.Command("docker", "-H", labDaemon.Host(), "run", "--rm", "--network", "none", "--runtime", rt, ref, "true").CombinedOutput()
				if err != nil {
					b.Fatalf("docker run: %v: %s", err, out)
				}
			}
			session := func() {
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
			}
			bare()
			session()
			var bares, sessions []time.Duration
			timed := func(fn func(), into *[]time.Duration) {
				t0 := time.Now()
				fn()
				*into = append(*into, time.Since(t0))
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if i%2 == 0 {
					timed(bare, &bares)
					timed(session, &sessions)
				} else {
					timed(session, &sessions)
					timed(bare, &bares)
				}
			}
			b.StopTimer()
			bm, bp := medianP95(bares)
			sm, sp := medianP95(sessions)
			b.ReportMetric(bm, "bare-ms-median")
			b.ReportMetric(bp, "bare-ms-p95")
			b.ReportMetric(sm, "session-ms-median")
			b.ReportMetric(sp, "session-ms-p95")
			b.ReportMetric(100*(sm-bm)/bm, "overhead-%")
		})
	}
}

// medianP95 of ds, in ms.
func medianP95(ds []time.Duration) (float64, float64) {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	return ms(ds[len(ds)/2]), ms(ds[(len(ds)*95+99)/100-1])
}
