package docker_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/gatehouse-dev/gatehouse/internal/targets/docker"
	"github.com/gatehouse-dev/gatehouse/targets"
	"github.com/gatehouse-dev/gatehouse/targets/targettest"
)

// A session whose profile binds storage-root writable can swap the next
// session's storage (ROOT/storage/sN) for a link to a host folder or a
// folder of its own, before the next session starts or between the
// target's check and the daemon's bind (the daemon binds by path). The
// next session must not start with either bound, and no container of it
// is left.
func TestReplacedPlacesAreNeverBound(t *testing.T) {
	link := func(p, outside string) error { return os.Symlink(outside, p) }
	folder := func(p, _ string) error { return os.Mkdir(p, 0o755) }
	for _, rt := range []string{"runc", "runsc"} {
		for _, tc := range []struct {
			name string
			mk   func(p, outside string) error // nil: left intact
			late bool                          // swapped once the target checked
			is   error
		}{
			{name: "intact place is bound"},
			{name: "link to a host folder before start", mk: link},
			{name: "another folder before start", mk: folder, is: targets.ErrPlaceSwapped},
			{name: "link to a host folder once checked", mk: link, late: true, is: targets.ErrPlaceSwapped},
			{name: "another folder once checked", mk: folder, late: true, is: targets.ErrPlaceSwapped},
		} {
			t.Run(rt+"/"+tc.name, func(t *testing.T) {
				if rt == "runsc" {
					needRunsc(t)
				} else {
					needLab(t)
				}
				root, outside := t.TempDir(), t.TempDir()
				own := filepath.Join(root, "storage", "s2")
				if err := os.MkdirAll(own, 0o755); err != nil {
					t.Fatal(err)
				}
				writeFile(t, filepath.Join(own, "nonce"), "ours\n")
				writeFile(t, filepath.Join(outside, "nonce"), "the host's\n")
				spec := targets.Spec{Name: "places-" + randomSuffix(), Path: targets.PathNormal,
					Places: map[string]string{"storage-root": filepath.Join(root, "storage"), "storage": own}}
				targettest.RecordPlaces(t, &spec)
				tg, err := docker.NewLab(labDaemon, docker.Options{Spec: docker.Spec{Runtime: rt, Network: docker.NetworkNone,
					Mounts: []docker.Mount{{Type: "bind", Source: "{{place:storage}}", Target: "/workspace"}}}})
				if err != nil {
					t.Fatal(err)
				}
				swap := func() {
					if err := os.Rename(own, own+".moved"); err != nil {
						t.Fatal(err)
					}
					if err := tc.mk(own, outside); err != nil {
						t.Fatal(err)
					}
				}
				if tc.mk != nil && tc.late {
					docker.SetPinned(tg, swap)
				} else if tc.mk != nil {
					swap()
				}
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				s, err := tg.Start(ctx, spec)
				if err == nil {
					t.Cleanup(func() { _ = s.(*docker.Session).Reap(context.Background()) })
				}
				if tc.mk == nil {
					if err != nil {
						t.Fatal(err)
					}
					if code, out, _ := run(t, s, "", "cat", "/workspace/nonce"); code != 0 || out != "ours\n" {
						t.Fatalf("intact place: /workspace/nonce exit %d, %q", code, out)
					}
					return
				}
				if err == nil {
					_, out, _ := run(t, s, "", "cat", "/workspace/nonce")
					t.Fatalf("started with a replaced place bound (/workspace/nonce: %q)", out)
				}
				t.Logf("refused: %v", err)
				if tc.is != nil && !errors.Is(err, tc.is) {
					t.Errorf("refused as %v, want %v", err, tc.is)
				}
				if n := sessionContainers(t, spec.Name); n != 0 {
					t.Errorf("%d container(s) of the refused session left", n)
				}
			})
		}
	}
}

func writeFile(t *testing.T, p, data string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// sessionContainers counts containers on the lab daemon labelled with the
// session's name.
func sessionContainers(t *testing.T, name string) int {
	t.Helper()
	cli, err := client.New(client.WithHost(labDaemon.Host()), client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	list, err := cli.ContainerList(context.Background(), client.ContainerListOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range list.Items {
		if c.Labels["gatehouse.session"] == name {
			n++
		}
	}
	return n
}
