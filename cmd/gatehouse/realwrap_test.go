package main

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/agents"
	"github.com/gatehouse-dev/gatehouse/internal/targets/kinds"
	"github.com/gatehouse-dev/gatehouse/internal/targets/realwrap"
	"github.com/gatehouse-dev/gatehouse/targets/profiles"
)

// needTool skips when the shipped profile's tool is not in the cache.
func needTool(t *testing.T, name string) {
	t.Helper()
	p, err := kinds.LoadFS(profiles.FS, name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := agents.DefaultCache(os.Getenv).WrapperTools(p.Target); errors.Is(err, agents.ErrNotInstalled) {
		t.Skip(err)
	}
}

// The Codex trap: network on without the proxy feature leaves the command
// in the session namespace unfiltered, so the callback hears it.
func TestCodexNetworkDirectFailsExternalCallback(t *testing.T) {
	needSandbox(t)
	needTool(t, "codex-network-direct.yaml")
	r := runProfile(t, "codex-network-direct.yaml", "external-callback")
	if r.code != exitViolation || len(r.results) != 2 {
		t.Fatalf("exit %d, %d results, want %d and 2\n%s\n%s", r.code, len(r.results), exitViolation, r.stdout, r.stderr)
	}
	for _, res := range r.results {
		if res.Verdict != evidence.Fail || len(res.Hits) == 0 {
			t.Errorf("%s/%s: %s with %d hits (%s), want FAIL with the callback's hits", res.Gate, res.Path, res.Verdict, len(res.Hits), res.Reason)
		}
	}
}

// srt binds the host's /tmp/claude into every sandbox: two sessions trade a
// value through it, whatever the network settings.
func TestSRTDefaultFailsCrossSessionThroughItsTmp(t *testing.T) {
	needSandbox(t)
	needTool(t, "srt-default.yaml")
	r := runProfile(t, "srt-default.yaml", "cross-session")
	if r.code != exitViolation || len(r.results) != 2 {
		t.Fatalf("exit %d, %d results, want %d and 2\n%s\n%s", r.code, len(r.results), exitViolation, r.stdout, r.stderr)
	}
	for _, res := range r.results {
		if res.Verdict != evidence.Fail || !strings.Contains(res.Reason, realwrap.SRTTmp) {
			t.Errorf("%s/%s: %s (%s), want FAIL naming %s", res.Gate, res.Path, res.Verdict, res.Reason, realwrap.SRTTmp)
		}
	}
}

// srt with only the inference endpoint allowed holds the network gates: its
// proxy is the only way out, the probe's attempts around it reach nothing,
// and the allowed call (through srt's proxy, with its per-run credentials)
// still arrives; an agent that will not stop is stopped with the wrapper.
func TestSRTDefaultHoldsTheNetwork(t *testing.T) {
	needSandbox(t)
	needTool(t, "srt-default.yaml")
	r := runProfile(t, "srt-default.yaml", "external-callback,dns-exfiltration,cloud-metadata,stop-signal")
	if r.code != exitOK || len(r.results) != 8 {
		t.Fatalf("exit %d, %d results, want %d and 8\n%s\n%s", r.code, len(r.results), exitOK, r.stdout, r.stderr)
	}
	for _, res := range r.results {
		if res.Verdict != evidence.Pass || (res.Gate != "stop-signal" && !res.Control) {
			t.Errorf("%s/%s: %s, control %v (%s), want PASS with the control through srt's proxy", res.Gate, res.Path, res.Verdict, res.Control, res.Reason)
		}
	}
}

// Codex with the network off refuses getsockopt and getsockname: the
// session's init must still answer (it did not, and every gate was
// INCONCLUSIVE). The host's /tmp is writable in Codex's sandbox, so two
// sessions trade a value through it: a FAIL that needs both sessions to run.
func TestCodexWorkspaceWriteSessionsRun(t *testing.T) {
	needSandbox(t)
	needTool(t, "codex-workspace-write.yaml")
	r := runProfile(t, "codex-workspace-write.yaml", "cross-session")
	if r.code != exitViolation || len(r.results) != 2 {
		t.Fatalf("exit %d, %d results, want %d and 2\n%s\n%s", r.code, len(r.results), exitViolation, r.stdout, r.stderr)
	}
	for _, res := range r.results {
		if res.Verdict != evidence.Fail || !strings.Contains(res.Reason, "/tmp/") {
			t.Errorf("%s/%s: %s (%s), want FAIL through the host's /tmp", res.Gate, res.Path, res.Verdict, res.Reason)
		}
	}
}

// srt's wildcard *.inference.lab.gatehouse.test (the provider's whole
// domain) lets a name under it that answers with the callback's address
// through its proxy (rebinding: the first answer was the allowed address),
// and srt's own lookup of a canary label reaches the domain's authority; a
// name resolving to metadata is still refused.
func TestSRTWildcardLetsNamesUnderItOut(t *testing.T) {
	needSandbox(t)
	needTool(t, "srt-wildcard.yaml")
	r := runProfile(t, "srt-wildcard.yaml", "external-callback,dns-exfiltration,cloud-metadata")
	if r.code != exitViolation || len(r.results) != 6 {
		t.Fatalf("exit %d, %d results, want %d and 6\n%s\n%s", r.code, len(r.results), exitViolation, r.stdout, r.stderr)
	}
	for _, res := range r.results {
		want := evidence.Fail
		if res.Gate == "cloud-metadata" {
			want = evidence.Pass
		}
		if res.Verdict != want || (want == evidence.Fail && len(res.Hits) == 0) {
			t.Errorf("%s/%s: %s with %d hits (%s), want %s", res.Gate, res.Path, res.Verdict, len(res.Hits), res.Reason, want)
		}
	}
}
