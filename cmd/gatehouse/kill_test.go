package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/ledger"
	"github.com/gatehouse-dev/gatehouse/internal/probe/probetest"
	"github.com/gatehouse-dev/gatehouse/internal/scratch"
	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
)

// asGatehouse makes the test binary act as the gatehouse command (TestMain).
const asGatehouse = "GATEHOUSE_TEST_AS_GATEHOUSE" // a GATEHOUSE_ setting: gatehouse children get it (hostenv.Gatehouse)

// kill -9 in the middle of a run gives no teardown a chance. What the run
// made (sessions and their processes, cgroups, namespaces, staging and
// planted folders, init sockets) is in its ledger; the next `lab down`
// removes all of it, by ownership, and leaves nothing of it running.
func TestKill9LeavesNothingAfterLabDown(t *testing.T) {
	needSandbox(t)
	out := t.TempDir()
	cmd := exec.Command(os.Args[0], "run", "--profile", profilePath("bwrap-leaky.yaml"), "--out", out,
		"--probe", probetest.Build(t), "--gates", "stop-signal,cross-session,long-lived-secret")
	cmd.Env = append(os.Environ(), asGatehouse+"=1")
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until the run has sessions going: its ledger lists cgroups.
	var entries []ledger.Entry
	deadline := time.Now().Add(60 * time.Second)
	for {
		entries = ledgerOf(t, cmd.Process.Pid)
		if entryKinds(entries)[ledger.Cgroup] >= 2 {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("the run never had two sessions going; its output:\n%s", stdout.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	going := entries                   // while two sessions ran
	time.Sleep(300 * time.Millisecond) // let it get into the middle of things
	entries = ledgerOf(t, cmd.Process.Pid)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	k := entryKinds(entries)
	if k[ledger.Netns] == 0 || k[ledger.Path] == 0 {
		t.Fatalf("the run's ledger lists %v: want namespaces and folders too", k)
	}
	// Its working folders, its sessions' staging among them, are all in
	// the harness's root-only folder, never in the shared /tmp, and listed.
	// (The reports have no spool: they are written from the final
	// verdicts straight into the run folder.)
	staging := false
	for _, e := range append(going, entries...) {
		if e.Kind != ledger.Path {
			continue
		}
		if !strings.HasPrefix(e.What, profile.HarnessDir+"/") {
			t.Errorf("the run made %s outside %s", e.What, profile.HarnessDir)
		}
		staging = staging || strings.HasPrefix(e.What, scratch.Base+"/gatehouse-bwrap-")
	}
	if !staging {
		t.Errorf("no session's staging is on the run's ledger: %v, then %v", going, entries)
	}
	for _, e := range entries {
		if e.Kind == ledger.Path || e.Kind == ledger.Cgroup {
			if _, err := os.Stat(e.What); err != nil {
				t.Logf("%s %s was already gone before lab down", e.Kind, e.What)
			}
		}
	}

	r := gatehouse(t, t.Context(), "lab", "down")
	if r.code != exitOK {
		t.Fatalf("lab down: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "run(s) that died left behind") {
		t.Errorf("lab down did not say it removed a dead run's leftovers:\n%s", r.stdout)
	}
	for _, e := range entries {
		switch e.Kind {
		case ledger.Path, ledger.Cgroup:
			if _, err := os.Stat(e.What); err == nil {
				t.Errorf("left behind after lab down: %s %s", e.Kind, e.What)
			}
		case ledger.Netns:
			if _, err := os.Stat("/run/netns/" + e.What); err == nil {
				t.Errorf("namespace left behind after lab down: %s", e.What)
			}
		}
	}
	// Nothing of the dead run runs on: no process in any of its cgroups.
	for _, e := range entries {
		if e.Kind != ledger.Cgroup {
			continue
		}
		if pids := inCgroup(filepath.Base(e.What)); len(pids) > 0 {
			t.Errorf("processes of the dead run still running in %s: %v", e.What, pids)
		}
	}
	if dirs, _ := filepath.Glob(filepath.Join(ledger.Root, itoa(cmd.Process.Pid)+"-*")); len(dirs) > 0 {
		t.Errorf("the dead run's ledger is still there: %v", dirs)
	}
}

func ledgerOf(t *testing.T, pid int) []ledger.Entry {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(ledger.Root, itoa(pid)+"-*", "*.json"))
	var out []ledger.Entry
	for _, f := range files {
		b, err := os.ReadFile(f)
		var e ledger.Entry
		if err == nil && json.Unmarshal(b, &e) == nil {
			out = append(out, e)
		}
	}
	return out
}

func entryKinds(es []ledger.Entry) map[string]int {
	m := map[string]int{}
	for _, e := range es {
		m[e.Kind]++
	}
	return m
}

// inCgroup lists the processes whose v2 cgroup path ends in name.
func inCgroup(name string) []string {
	dirs, _ := filepath.Glob("/proc/[0-9]*/cgroup")
	var out []string
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "0::") && strings.HasSuffix(line, "/"+name) {
				out = append(out, filepath.Base(filepath.Dir(d)))
			}
		}
	}
	return out
}

func itoa(n int) string { return strconv.Itoa(n) }
