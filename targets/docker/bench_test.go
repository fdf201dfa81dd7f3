package docker_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"gatehouse/targets"
	"gatehouse/targets/docker"
)

// BenchmarkColdStart compares a bare `docker run --rm` of the probe base
// image (the runtime's own cold start) with a session through the target
// (create, start, first exec, stop), per runtime.
func BenchmarkColdStart(b *testing.B) {
	needLab(b)
	ctx := context.Background()
	ref, err := docker.BaseImage(ctx, labDaemon.Host(), docker.BusyboxPath)
	if err != nil {
		b.Fatal(err)
	}
	for _, rt := range []string{"runc", "runsc"} {
		b.Run(rt+"/docker-run", func(b *testing.B) {
			if rt == "runsc" {
				needRunsc(b)
			}
			for i := 0; i < b.N; i++ {
				out, err := exec.Command("docker", "-H", labDaemon.Host(), "run", "--rm", "--network", "none", "--runtime", rt, ref, "true").CombinedOutput()
				if err != nil {
					b.Fatalf("docker run: %v: %s", err, out)
				}
			}
		})
		b.Run(rt+"/target", func(b *testing.B) {
			if rt == "runsc" {
				needRunsc(b)
			}
			tg, err := docker.New(labDaemon.Host(), docker.Spec{Runtime: rt, Network: docker.NetworkNone})
			if err != nil {
				b.Fatal(err)
			}
			for i := 0; i < b.N; i++ {
				s, err := tg.Start(ctx, targets.Spec{Name: strings.ReplaceAll(b.Name(), "/", "-") + "-" + string(rune('a'+i%26)), Path: targets.PathNormal})
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
		})
	}
}
