package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/auditmon"
	"github.com/gatehouse-dev/gatehouse/internal/probe/probetest"
)

// needAuditMonitor skips where --monitor audit cannot run; it returns
// audit's enabled state before the test.
func needAuditMonitor(t *testing.T) uint32 {
	t.Helper()
	needSandbox(t)
	en, _, err := auditmon.Status()
	if err != nil {
		t.Skipf("no audit here: %v", err)
	}
	if err := auditmon.Preflight(); err != nil {
		t.Skipf("the audit monitor cannot run here: %v", err)
	}
	return en
}

// rulesOf lists the audit rules process pid added.
func rulesOf(t *testing.T, pid int) []string {
	t.Helper()
	left, err := auditmon.Leftover()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range left {
		if strings.Contains(r, auditmon.KeyPrefix+strconv.Itoa(pid)+"-") {
			out = append(out, r)
		}
	}
	return out
}

// Audit rules are kernel state a SIGKILLed run leaves behind; the next
// `lab down` removes them and turns audit back off if the run had turned
// it on.
func TestKill9AuditRulesGoAtLabDown(t *testing.T) {
	before := needAuditMonitor(t)
	out := t.TempDir()
	cmd := exec.Command(os.Args[0], "run", "--profile", profilePath("bwrap-leaky.yaml"), "--out", out,
		"--probe", probetest.Build(t), "--gates", "external-callback,stop-signal", "--monitor", "builtin,audit", "--respond", "stop")
	cmd.Env = append(os.Environ(), asGatehouse+"=1")
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	pid := cmd.Process.Pid
	for deadline := time.Now().Add(60 * time.Second); len(rulesOf(t, pid)) == 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("the run never registered a session with audit; its output:\n%s", stdout.String())
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	had := len(rulesOf(t, pid)) > 0
	if !had {
		t.Log("the run's audit rules were gone before lab down (it was between sessions)")
	}
	r := gatehouse(t, t.Context(), "lab", "down")
	if r.code != exitOK {
		t.Fatalf("lab down: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if had && !strings.Contains(r.stdout, "audit rule(s) of dead runs") {
		t.Errorf("lab down did not say it removed the killed run's audit rules:\n%s", r.stdout)
	}
	if left := rulesOf(t, pid); len(left) > 0 {
		t.Errorf("audit rules of the killed run left after lab down: %q\n%s", left, r.stdout)
	}
	if en, dpid, err := auditmon.Status(); err != nil || en != before || (dpid != 0 && dpid != pid) {
		t.Errorf("after lab down: audit enabled %d, daemon pid %d (%v); want %d as before", en, dpid, err, before)
	}
	noProgramsLeft(t)
}

// noProgramsLeft: the builtin monitor's programs and links are owned by
// file descriptors, so none outlives its process (the kernel frees a
// closed program a moment later).
func noProgramsLeft(t *testing.T) {
	t.Helper()
	left := ownLoaded(t)
	for end := time.Now().Add(5 * time.Second); len(left) > 0 && time.Now().Before(end); left = ownLoaded(t) {
		time.Sleep(50 * time.Millisecond)
	}
	if len(left) > 0 {
		t.Errorf("monitor programs still loaded: %v", left)
	}
}

// Ctrl-C in the middle of a run with both monitors and a response: no
// audit rule and no monitor program left, audit as it was.
func TestInterruptLeavesNoAuditRules(t *testing.T) {
	before := needAuditMonitor(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sawRules := make(chan bool, 1)
	go func() {
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if len(rulesOf(t, os.Getpid())) > 0 {
				time.Sleep(200 * time.Millisecond)
				sawRules <- true
				cancel()
				return
			}
		}
		sawRules <- false
		cancel()
	}()
	r := gatehouse(t, ctx, "run", "--profile", profilePath("bwrap-leaky.yaml"), "--out", t.TempDir(),
		"--probe", probetest.Build(t), "--gates", "external-callback,stop-signal", "--monitor", "builtin,audit", "--respond", "stop")
	if !<-sawRules {
		t.Fatalf("the run never had audit rules in; exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r.code != exitInconclusive || !strings.Contains(r.stderr, "interrupted") {
		t.Errorf("exit %d, want %d and 'interrupted'\n%s", r.code, exitInconclusive, r.stderr)
	}
	if left := rulesOf(t, os.Getpid()); len(left) > 0 {
		t.Errorf("audit rules left after Ctrl-C: %q", left)
	}
	if en, dpid, err := auditmon.Status(); err != nil || en != before || dpid != 0 {
		t.Errorf("after Ctrl-C: audit enabled %d, daemon pid %d (%v); want %d as before and none", en, dpid, err, before)
	}
	noProgramsLeft(t)
}
