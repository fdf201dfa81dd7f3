package main

import (
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/detect"
	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/auditmon"
	"github.com/gatehouse-dev/gatehouse/internal/monitor"
)

// The builtin monitor, on a real run: every observable network attempt is
// detected with a latency on bwrap-leaky (where it got through) and on
// bwrap-hardened (where it was blocked: attempted, prevented, detected),
// the verdicts are the ones without a monitor, and nothing of the monitor
// stays loaded after the run.
func TestBuiltinMonitorDetectsTheNetworkAttempts(t *testing.T) {
	needSandbox(t)
	gates := "external-callback,dns-exfiltration,cloud-metadata"
	for _, tt := range []struct {
		profile string
		code    int
		verdict evidence.Verdict
		// missPct is the share of observable attempts a scenario may miss.
		// The old hardened "misses" were attempts by a name that never
		// resolved in the sandbox (no connect), counted observable and
		// taking other attempts' events; they are now not observable
		// (docs/detection.md, "what it misses").
		missPct int
	}{
		{"bwrap-leaky.yaml", exitViolation, evidence.Fail, 5},
		{"bwrap-hardened.yaml", exitOK, evidence.Pass, 5},
	} {
		t.Run(tt.profile, func(t *testing.T) {
			r := runProfile(t, tt.profile, gates, "--monitor", "builtin")
			loadRunFolder(t, &r)
			if r.code != tt.code || len(r.results) != 6 {
				t.Fatalf("exit %d with %d results, want %d and 6\n%s\n%s", r.code, len(r.results), tt.code, r.stdout, r.stderr)
			}
			for _, res := range r.results {
				if res.Verdict != tt.verdict {
					t.Errorf("%s/%s: %s with the monitor, want %s", res.Gate, res.Path, res.Verdict, tt.verdict)
				}
				d := res.Detection
				if d == nil || !d.Measured {
					t.Fatalf("%s/%s: detection not measured: %+v", res.Gate, res.Path, d)
				}
				observable, missed := 0, 0
				for _, a := range d.Attempts {
					if !a.Observable {
						continue
					}
					observable++
					if a.Detected == nil {
						// A connect whose address the kernel could not read
						// at syscall entry (not paged in yet) is not seen:
						// rare, and said in docs/detection.md.
						missed++
						t.Logf("%s/%s: attempt %s (%s %s) not detected: %s", res.Gate, res.Path, a.ID, a.Kind, a.Object, a.Reason)
						continue
					}
					if a.Detected.Source != "builtin" || a.Detected.LatencyMS == nil || *a.Detected.LatencyMS < 0 {
						t.Errorf("%s/%s: attempt %s detected without a latency: %+v", res.Gate, res.Path, a.ID, a.Detected)
					}
				}
				if observable == 0 || missed*100 > tt.missPct*observable {
					t.Errorf("%s/%s: %d of %d observable attempts not detected", res.Gate, res.Path, missed, observable)
				}
			}
			// The kernel frees a closed program a moment later (RCU).
			// A program another live process holds open is another
			// run's (the machine is shared), not a leftover of ours.
			left := ownLoaded(t)
			for end := time.Now().Add(5 * time.Second); len(left) > 0 && time.Now().Before(end); left = ownLoaded(t) {
				time.Sleep(50 * time.Millisecond)
			}
			if len(left) > 0 {
				t.Errorf("monitor programs still loaded 5 s after the run: %v", left)
			}
		})
	}
}

// The audit monitor, on a real run of bwrap-leaky: every observable
// connect (callback, metadata) is detected by source "audit" with a
// latency, through the session's login uid; the verdicts are the ones
// without a monitor; no Gatehouse audit rule is left and audit is back in
// the state it was in.
func TestAuditMonitorDetectsTheConnects(t *testing.T) {
	needSandbox(t)
	enabled, _, err := auditmon.Status()
	if err != nil {
		t.Skipf("no audit here: %v", err)
	}
	if err := auditmon.Preflight(); err != nil {
		t.Skipf("the audit monitor cannot run here: %v", err)
	}
	r := runProfile(t, "bwrap-leaky.yaml", "external-callback,cloud-metadata", "--monitor", "audit")
	loadRunFolder(t, &r)
	if r.code != exitViolation || len(r.results) != 4 {
		t.Fatalf("exit %d with %d results, want %d and 4\n%s\n%s", r.code, len(r.results), exitViolation, r.stdout, r.stderr)
	}
	for _, res := range r.results {
		if res.Verdict != evidence.Fail {
			t.Errorf("%s/%s: %s with the audit monitor, want FAIL", res.Gate, res.Path, res.Verdict)
		}
		d := res.Detection
		if d == nil || !d.Measured {
			t.Fatalf("%s/%s: detection not measured: %+v", res.Gate, res.Path, d)
		}
		observable := 0
		for _, a := range d.Attempts {
			if !a.Observable {
				t.Logf("%s/%s: attempt %s not observable: %s", res.Gate, res.Path, a.ID, a.Reason)
				continue
			}
			observable++
			if a.Detected == nil {
				if _, err := netip.ParseAddrPort(a.Object); a.Kind == detect.KindDNS && err != nil {
					// A query name is in the payload, which audit does
					// not record (docs/detection.md): a known limit.
					t.Logf("%s/%s: attempt %s (dns %s) not seen: audit records no payloads", res.Gate, res.Path, a.ID, a.Object)
					continue
				}
				t.Errorf("%s/%s: attempt %s (%s %s) not detected: %s", res.Gate, res.Path, a.ID, a.Kind, a.Object, a.Reason)
				continue
			}
			if a.Detected.Source != "audit" || a.Detected.LatencyMS == nil || *a.Detected.LatencyMS < 0 {
				t.Errorf("%s/%s: attempt %s detected without the audit source or a latency: %+v", res.Gate, res.Path, a.ID, a.Detected)
			} else {
				t.Logf("%s/%s: %s %s detected by audit rule %s in %.1f ms", res.Gate, res.Path, a.Kind, a.Object, a.Detected.Rule, *a.Detected.LatencyMS)
			}
		}
		if observable == 0 {
			t.Errorf("%s/%s: no observable attempt", res.Gate, res.Path)
		}
	}
	if left, err := auditmon.Leftover(); err != nil || len(left) > 0 {
		t.Errorf("audit rules left after the run: %q (%v)", left, err)
	}
	if en, pid, err := auditmon.Status(); err != nil || en != enabled || pid != 0 {
		t.Errorf("after the run: audit enabled %d, daemon pid %d (%v); want %d as before and none", en, pid, err, enabled)
	}
}

// ownLoaded is monitor.Loaded without the programs held open only by other
// live processes (another test run's monitor on this shared machine): ours
// are held by this process, or by none while the kernel frees them.
func ownLoaded(t *testing.T) []string {
	held := map[string][]string{} // prog id -> holder pids
	fdinfos, _ := filepath.Glob("/proc/[0-9]*/fdinfo/*")
	for _, f := range fdinfos {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if id, ok := strings.CutPrefix(line, "prog_id:"); ok {
				pid := strings.Split(f, "/")[2]
				held[strings.TrimSpace(id)] = append(held[strings.TrimSpace(id)], pid)
			}
		}
	}
	self := strconv.Itoa(os.Getpid())
	var own []string
	for _, p := range monitor.Loaded() {
		_, id, _ := strings.Cut(p, "#")
		if pids := held[id]; len(pids) > 0 && !slices.Contains(pids, self) {
			t.Logf("%s is held by process %v, another run's: not counted", p, pids)
			continue
		}
		own = append(own, p)
	}
	return own
}

// The builtin monitor on bwrap-leaky's long-lived-secret: the reads of the
// planted credential files and of the secrets folders are detected, each
// by its rule, with a latency; the verdict is the one without a monitor.
// (The search of /root and the credential socket under /run/user are not
// flagged by any built-in rule: they stay misses, said in the results.)
func TestBuiltinMonitorDetectsTheCredentialReads(t *testing.T) {
	needSandbox(t)
	r := runProfile(t, "bwrap-leaky.yaml", "long-lived-secret", "--monitor", "builtin")
	if r.code != exitViolation || len(r.results) != 2 {
		t.Fatalf("exit %d with %d results, want %d and 2\n%s\n%s", r.code, len(r.results), exitViolation, r.stdout, r.stderr)
	}
	want := map[string]string{
		"home-files":      "read-of-a-credential-file",
		"run-secrets":     "read-under-a-secrets-folder",
		"service-account": "read-under-a-secrets-folder",
	}
	for _, res := range r.results {
		if res.Verdict != evidence.Fail || res.Detection == nil || !res.Detection.Measured {
			t.Fatalf("%s: %s, detection %+v", res.Path, res.Verdict, res.Detection)
		}
		seen := map[string]bool{}
		for _, a := range res.Detection.Attempts {
			rule, ok := want[a.ID]
			if !ok {
				continue
			}
			seen[a.ID] = true
			if a.Detected == nil || a.Detected.Rule != rule || a.Detected.LatencyMS == nil {
				t.Errorf("%s: %s (%s %s) detected %+v, want rule %s with a latency: %s", res.Path, a.ID, a.Kind, a.Object, a.Detected, rule, a.Reason)
			}
		}
		if len(seen) != len(want) {
			t.Errorf("%s: attempts scored %v, want %d of them", res.Path, seen, len(want))
		}
	}
}
