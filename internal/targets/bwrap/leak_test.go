package bwrap_test

import (
	"context"
	"github.com/gatehouse-dev/gatehouse/internal/probe/probetest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/targets/bwrap"
	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
	"github.com/gatehouse-dev/gatehouse/targets"
	"github.com/gatehouse-dev/gatehouse/targets/profiles"
)

// After Stop nothing of the session is left: no process in its namespace,
// no staging folder, no egress table. Leaky has no PID namespace, so its
// background processes outlive their Exec; hardened is stopped mid-Exec.
func TestStopLeavesNothing(t *testing.T) {
	needSandbox(t)
	for _, tc := range []struct {
		profile, script string
		background      bool
	}{
		{profiles.Leaky, "sleep 300 >/dev/null 2>&1 & setsid sleep 301 >/dev/null 2>&1 & echo ok", true},
		{profiles.Hardened, "sleep 302", false},
	} {
		t.Run(tc.profile, func(t *testing.T) {
			n := newNetns(t)
			root := t.TempDir()
			p := shipped(t, tc.profile)
			s, err := bwrap.New(bwrap.Options{Profile: p, Root: root, Init: probetest.Build(t)}).Start(context.Background(),
				withPlaces(t, p, targets.Spec{Name: "leak", Path: targets.PathNormal, Network: n}))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Stop(context.Background()) }) // when a check below fails first
			done := make(chan error, 1)
			go func() {
				_, err := s.Exec(context.Background(), targets.Command{Args: []string{"/bin/sh", "-c", tc.script}})
				done <- err
			}()
			if tc.background {
				if err := <-done; err != nil {
					t.Fatal(err)
				}
			}
			want := 1 // hardened: the running sleep
			if tc.background {
				want = 2 // leaky: both sleeps outlived their Exec
			}
			waitPids(t, n.NetnsPath, func(n int) bool { return n >= want }, "session processes to appear")
			if err := s.Stop(context.Background()); err != nil {
				t.Fatalf("Stop: %v", err)
			}
			if p.Scope() == profile.StopProcess {
				// The careless stop leaves the escaped sleep running; the
				// harness's own teardown must still end it.
				if pids := ipNetnsPids(t, n.NetnsName); len(pids) == 0 {
					t.Fatalf("stop_scope process ended the escaped process too")
				}
				if err := s.(interface {
					Reap(context.Context) error
				}).Reap(context.Background()); err != nil {
					t.Fatalf("Reap: %v", err)
				}
			}
			if !tc.background {
				select {
				case <-done:
				case <-time.After(30 * time.Second):
					t.Fatal("the running Exec did not return after Stop")
				}
			}
			if pids := ipNetnsPids(t, n.NetnsName); len(pids) != 0 {
				t.Fatalf("processes left in %s after Stop: %v", n.NetnsName, pids)
			}
			if left, _ := os.ReadDir(root); len(left) != 0 {
				t.Fatalf("staging left behind: %v", left)
			}
			if out, _ := exec.Command("nsenter", "--net="+n.NetnsPath, "nft", "list", "ruleset").Output(); strings.Contains(string(out), "gatehouse_egress") {
				t.Fatalf("egress table left behind:\n%s", out)
			}
			if err := s.Stop(context.Background()); err != nil {
				t.Fatalf("second Stop: %v", err)
			}
		})
	}
}

func ipNetnsPids(t *testing.T, name string) []string {
	t.Helper()
	return strings.Fields(run(t, "ip", "netns", "pids", name))
}

func waitPids(t *testing.T, path string, ok func(int) bool, what string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		pids, err := bwrap.PidsInNetns(path)
		if err != nil {
			t.Fatal(err)
		}
		if ok(len(pids)) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s (have %d)", what, len(pids))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
