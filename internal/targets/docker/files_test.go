package docker_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
	"github.com/gatehouse-dev/gatehouse/internal/targets/docker"
	"github.com/gatehouse-dev/gatehouse/targets"
)

// TestFilesBoundReadOnly: on the lab daemon a session's files are bound
// read-only from a per-session copy on the host (not copied through the
// archive API): they run and read as placed, not even the assume-breach
// path's root can change them, each session has its own copy, and the
// copies are gone after Reap; also on a read-only root. In a private user
// namespace (runc would make the mount points as an unmapped uid) they
// are copied in as before, and still cannot be changed from inside.
func TestFilesBoundReadOnly(t *testing.T) {
	needLab(t)
	script := []byte("#!/bin/sh\necho placed-probe \"$@\"\n")
	files := map[string]targets.File{
		wire.SandboxPath:       {Data: script, Mode: 0o755},
		"/gatehouse/suite/txt": {Data: []byte("hello\n"), Mode: 0o644},
	}
	for _, c := range []struct {
		name  string
		spec  docker.Spec
		bound bool
	}{
		{"default", docker.Spec{Runtime: "runc", Network: docker.NetworkNone}, true},
		{"readonly", docker.Spec{Runtime: "runc", Network: docker.NetworkNone, ReadOnly: true, User: "1000:1000"}, true},
		{"readonly-userns", docker.Spec{Runtime: "runc", Network: docker.NetworkNone, ReadOnly: true, Userns: "private", User: "1000:1000"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			tg, err := docker.NewLab(labDaemon, docker.Options{Spec: c.spec})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			var sources []string
			for _, path := range []targets.Path{targets.PathNormal, targets.PathBreach} {
				s, err := tg.Start(ctx, targets.Spec{Name: "files-" + randomSuffix(), Path: path, Files: files})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = s.(*docker.Session).Reap(context.Background()) })
				if code, out, errs := run(t, s, "", wire.SandboxPath, "x"); code != 0 || out != "placed-probe x\n" {
					t.Fatalf("%s: placed script: exit %d, %q %q", path, code, out, errs)
				}
				if code, out, _ := run(t, s, "", "cat", "/gatehouse/suite/txt"); code != 0 || out != "hello\n" {
					t.Fatalf("%s: placed file: exit %d, %q", path, code, out)
				}
				if code, _, _ := run(t, s, "", "sh", "-c", "echo changed > "+wire.SandboxPath); code == 0 {
					t.Errorf("%s: the probe could be overwritten", path)
				}
				cfg, err := s.Inspect(ctx)
				if err != nil {
					t.Fatal(err)
				}
				src := boundSource(cfg.Mounts, wire.SandboxPath)
				if !c.bound {
					if src != "" {
						t.Errorf("%s: probe bound from %s in a private user namespace", path, src)
					}
					continue
				}
				if src == "" {
					t.Fatalf("%s: no read-only bind for the probe in %q", path, cfg.Mounts)
				}
				if b, err := os.ReadFile(src); err != nil || string(b) != string(script) {
					t.Fatalf("%s: staged probe %s: %v %q", path, src, err, b)
				}
				sources = append(sources, src)
				if err := s.(*docker.Session).Reap(ctx); err != nil {
					t.Fatal(err)
				}
				if _, err := os.Stat(src); !os.IsNotExist(err) {
					t.Errorf("%s: staged copy %s still there after Reap (%v)", path, src, err)
				}
			}
			if c.bound && sources[0] == sources[1] {
				t.Errorf("two sessions share the staged probe %s", sources[0])
			}
		})
	}
}

// boundSource finds the source of a read-only bind at dest in Inspect's
// mounts ("bind SRC -> DEST (ro)").
func boundSource(mounts []string, dest string) string {
	for _, m := range mounts {
		src, ok := strings.CutPrefix(m, "bind ")
		if ok && strings.HasSuffix(src, " -> "+dest+" (ro)") {
			return strings.TrimSuffix(src, " -> "+dest+" (ro)")
		}
	}
	return ""
}
