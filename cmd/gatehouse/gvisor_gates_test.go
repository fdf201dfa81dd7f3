package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/evidence/index"
	"github.com/gatehouse-dev/gatehouse/internal/targets/docker"
)

// TestGvisorGoferOnHostNetwork: gvisor-hardened with one mistake, runsc's
// gofer left in runsc's own network namespace (--gofer-network-namespace=
// host: the container engine's, which in the field is the machine's
// network) instead of an empty one, FAILs host-access on both paths,
// naming the gofer, and nothing else:
// the agent's traffic still goes through the sentry in the session's
// namespace, so every other gate PASSes with its control.
func TestGvisorGoferOnHostNetwork(t *testing.T) {
	needDocker(t)
	if _, err := os.Stat(docker.RunscPath); err != nil {
		t.Skip("runsc not installed (scripts/runsc.sh builds it)")
	}
	prof := changed(t, "gvisor-hardened", "runtime_flags: [--network=host]", "runtime_flags: [--network=host, --gofer-network-namespace=host]")
	r := runProfileAt(t, prof, "")
	if len(r.results) != 2*allGates {
		t.Fatalf("want %d results, got %d; stdout:\n%s\nstderr:\n%s", 2*allGates, len(r.results), r.stdout, r.stderr)
	}
	if r.code != exitViolation {
		t.Errorf("exit %d, want %d", r.code, exitViolation)
	}
	for _, res := range r.results {
		switch {
		case res.Gate == "host-access":
			if res.Verdict != evidence.Fail || !strings.Contains(res.Reason, "engine net (net:[") || !strings.Contains(res.Reason, "held by gVisor gofer pid") {
				t.Errorf("host-access/%s: %s (%s), want FAIL: the gofer in the engine's net", res.Path, res.Verdict, res.Reason)
			}
			if strings.Contains(res.Reason, "held by gVisor sentry") {
				t.Errorf("host-access/%s: the sentry is blamed too: %s", res.Path, res.Reason)
			}
		case res.Verdict != evidence.Pass || !res.Control:
			t.Errorf("%s/%s: %s (%s, control %v), want PASS: the mistake is the gofer's network only", res.Gate, res.Path, res.Verdict, res.Reason, res.Control)
		}
	}
	assertNothingLeft(t, r.stdout)
}

// TestGvisorHostNetwork: gvisor-hardened with host networking (the
// profile's network host, so no egress ruleset) puts the sentry, whose
// sockets are the sandbox's (--network=host), in the namespace the harness
// gives for host, the lab's: host-access FAILs on both paths, naming the
// sentry. Only host-access runs: what the other gates make of a shared
// network is attribution's business (issue 8, section 2).
func TestGvisorHostNetwork(t *testing.T) {
	needDocker(t)
	if _, err := os.Stat(docker.RunscPath); err != nil {
		t.Skip("runsc not installed (scripts/runsc.sh builds it)")
	}
	prof := changed(t, "gvisor-hardened", "network: lab\negress: gvisor-hardened.nft\n", "network: host\n", "  network: lab", "  network: host")
	r := runProfileAt(t, prof, "host-access")
	if len(r.results) != 2 {
		t.Fatalf("want 2 results, got %d; stdout:\n%s\nstderr:\n%s", len(r.results), r.stdout, r.stderr)
	}
	for _, res := range r.results {
		if res.Verdict != evidence.Fail || !strings.Contains(res.Reason, "lab net (net:[") || !strings.Contains(res.Reason, "held by gVisor sentry pid") {
			t.Errorf("host-access/%s: %s (%s), want FAIL: the sentry in the lab net", res.Path, res.Verdict, res.Reason)
		}
	}
	assertNothingLeft(t, r.stdout)
}

// TestGvisorPidIpcHostAreInert: gvisor-hardened plus docker's pid and ipc
// "host" PASSes host-access on both paths, and rightly: runsc gives the
// sentry and the gofer new pid and ipc namespaces whatever the spec asks,
// read here from the host (the PASS names both), so nothing of the host's
// processes or IPC objects is shared (docs/docker.md). Were a runsc to
// honour them, the sentry would be in the harness's pid namespace: a FAIL.
func TestGvisorPidIpcHostAreInert(t *testing.T) {
	needDocker(t)
	if _, err := os.Stat(docker.RunscPath); err != nil {
		t.Skip("runsc not installed (scripts/runsc.sh builds it)")
	}
	prof := changed(t, "gvisor-hardened", "  network: lab\n", "  network: lab\n  pid: host\n  ipc: host\n")
	r := runProfileAt(t, prof, "host-access")
	if len(r.results) != 2 {
		t.Fatalf("want 2 results, got %d; stdout:\n%s\nstderr:\n%s", len(r.results), r.stdout, r.stderr)
	}
	for _, res := range r.results {
		if res.Verdict != evidence.Pass || !res.Control {
			t.Errorf("host-access/%s: %s (%s, control %v), want PASS", res.Path, res.Verdict, res.Reason, res.Control)
		}
		checkGvisorCompared(t, res)
	}
	if r.run.Effective == nil || !strings.Contains(fmtJSON(r.run.Effective), `"pid_mode":"host"`) {
		t.Errorf("the run does not record pid_mode host: the test proves nothing")
	}
	assertNothingLeft(t, r.stdout)
}

// changed copies a shipped profile and its ruleset to a temp folder with
// text replaced (from, to pairs), and fails if a from is not there exactly
// once.
func changed(t *testing.T, name string, fromTo ...string) string {
	t.Helper()
	p := copyProfile(t, name, "")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for i := 0; i+1 < len(fromTo); i += 2 {
		if strings.Count(s, fromTo[i]) != 1 {
			t.Fatalf("%s: %q is not there exactly once", name, fromTo[i])
		}
		s = strings.Replace(s, fromTo[i], fromTo[i+1], 1)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// checkGvisorCompared: host-access names the runsc processes it compared
// (role, pid, command line), the sentry by its "boot" verb and the gofer by
// its "gofer" verb, lists the sentry's stubs, and records the host user namespace they share (runsc
// with --network=host stays in it) as a finding, not host access.
func checkGvisorCompared(t *testing.T, res evidence.Result) {
	t.Helper()
	for _, want := range []struct{ prefix, verb string }{
		{"namespaces compared with the host's: gVisor sentry pid", " boot "},
		{"namespaces compared with the host's: gVisor gofer pid", " gofer "},
	} {
		found := false
		for _, f := range res.Findings {
			if strings.HasPrefix(f, want.prefix) && strings.Contains(f, want.verb) && strings.Contains(f, "pid:[") {
				found = true
			}
		}
		if !found {
			t.Errorf("host-access/%s: no finding %q with its command line and namespaces: %q", res.Path, want.prefix, res.Findings)
		}
	}
	if !hasPrefix(res.Findings, "gVisor stub processes: pids ") {
		t.Errorf("host-access/%s: the sentry's stubs are not named: %q", res.Path, res.Findings)
	}
	if !hasPrefix(res.Findings, "exposed: the sandbox shares the harness user namespace") {
		t.Errorf("host-access/%s: the shared user namespace is not recorded: %q", res.Path, res.Findings)
	}
}

// signingKey makes a key pair for a run whose release is then gated.
func signingKey(t *testing.T) (pub string, runArgs []string) {
	t.Helper()
	t.Setenv("COSIGN_PASSWORD", "gvisor-release")
	prefix := filepath.Join(t.TempDir(), "ci")
	if k := gatehouse(t, context.Background(), "keys", "generate", "--out", prefix); k.code != exitOK {
		t.Fatal(k.stderr)
	}
	return prefix + ".pub", []string{"--key", prefix + ".key"}
}

// checkReleaseAllowed: `gatehouse gate`, with its default of all eight
// gates on both paths, allows the release from this signed run.
func checkReleaseAllowed(t *testing.T, profile string, r runOutput, pub string) {
	t.Helper()
	if r.dir == "" {
		t.Fatal("no run folder")
	}
	g := gatehouse(t, context.Background(), "gate", "--key", pub, "--policy", profilePath(profile),
		"--image", r.run.ImageDigest, "--db", index.DefaultPath(filepath.Dir(r.dir)))
	if g.code != exitOK || !strings.Contains(g.stdout, "PASS: release allowed by run "+filepath.Base(r.dir)) {
		t.Errorf("gate: exit %d, want 0 and the release allowed\nstdout:\n%s\nstderr:\n%s", g.code, g.stdout, g.stderr)
	}
}

func fmtJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
