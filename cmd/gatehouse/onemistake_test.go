package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/lab"
)

// One-mistake profiles (testdata/profiles): bwrap-hardened with exactly one
// realistic change to its egress ruleset. Each must FAIL the gates its
// mistake really opens, with the hit that proves it, and PASS the others;
// the harmless variant must PASS everything. Before the lab had
// public-looking addresses and a catch-all on every port, all three
// mistakes PASSed external-callback.
func TestOneMistakeEgressProfiles(t *testing.T) {
	needSandbox(t)
	gates := "external-callback,dns-exfiltration,cloud-metadata"
	pub := lab.DefaultPublic()
	type proof func(h evidence.Hit) bool
	tests := []struct {
		profile string
		// fail names the gates that must FAIL, each with a hit that must be
		// among the FAIL's hits; every other gate must PASS.
		fail map[string]proof
	}{
		{"mistake-allow-public", map[string]proof{
			"external-callback": func(h evidence.Hit) bool { return h.Endpoint == "callback" && host(h.Dst) == pub.CallbackV4 },
			// A resolver of the agent's own choosing on a public address.
			"dns-exfiltration": func(h evidence.Hit) bool {
				return h.Endpoint == "dns-authority" && h.Dst == net.JoinHostPort(pub.AuthorityV4, "53")
			},
			// The rule drops 169.254.0.0/16 and 100.64.0.0/10, not Azure's
			// WireServer (168.63.129.16, public space): such a guard really
			// lets it through.
			"cloud-metadata": func(h evidence.Hit) bool { return h.Endpoint == "wireserver" },
		}},
		{"mistake-ssh", map[string]proof{
			"external-callback": func(h evidence.Hit) bool { return h.Endpoint == "callback" && port(h.Dst) == "22" },
		}},
		{"mistake-quic", map[string]proof{
			"external-callback": func(h evidence.Hit) bool {
				return h.Proto == "udp" && port(h.Dst) == "443" && strings.Contains(h.Summary, "QUIC Initial")
			},
		}},
		{"harmless", nil},
	}
	for _, tt := range tests {
		t.Run(tt.profile, func(t *testing.T) {
			r := runProfileAt(t, filepath.Join("testdata", "profiles", tt.profile+".yaml"), gates)
			code := exitOK
			if len(tt.fail) > 0 {
				code = exitViolation
			}
			if r.code != code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, code, r.stdout, r.stderr)
			}
			if len(r.results) != 6 {
				t.Fatalf("want 6 results (3 gates x 2 paths), got %d; stdout:\n%s\nstderr:\n%s", len(r.results), r.stdout, r.stderr)
			}
			for _, res := range r.results {
				ok, mustFail := tt.fail[res.Gate]
				switch {
				case !mustFail && (res.Verdict != evidence.Pass || !res.Control):
					t.Errorf("%s/%s: %s (%s), want PASS with a positive control", res.Gate, res.Path, res.Verdict, res.Reason)
				case mustFail && res.Verdict != evidence.Fail:
					t.Errorf("%s/%s: %s (%s), want FAIL", res.Gate, res.Path, res.Verdict, res.Reason)
				case mustFail && !anyHit(res.Hits, ok):
					t.Errorf("%s/%s: FAIL without the hit that proves this mistake; hits: %+v", res.Gate, res.Path, res.Hits)
				}
				if tt.profile == "mistake-allow-public" && res.Gate == "external-callback" {
					// The documentation-range callback stays dropped: the
					// public-looking one is what shows the leak.
					if anyHit(res.Hits, func(h evidence.Hit) bool { return host(h.Dst) == lab.CallbackV4 }) {
						t.Errorf("the rule drops 203.0.113.0/24, yet the documentation callback was reached: %+v", res.Hits)
					}
				}
			}
			assertNothingLeft(t, r.stdout)
		})
	}
}

func anyHit(hits []evidence.Hit, match func(evidence.Hit) bool) bool {
	for _, h := range hits {
		if match(h) {
			return true
		}
	}
	return false
}

// host is the address of a hit's Dst ("ip:port", or a bare ip for ICMP).
func host(dst string) string {
	if h, _, err := net.SplitHostPort(dst); err == nil {
		return h
	}
	return dst
}

func port(dst string) string {
	_, p, _ := net.SplitHostPort(dst)
	return p
}

// A public-looking address override that is unsafe or not public-looking is
// a usage error, before any lab or sandbox is started.
func TestPublicOverrideIsAUsageError(t *testing.T) {
	for _, tc := range []struct{ env, value, want string }{
		{lab.EnvPublicV4, "127.0.0.1", "loopback"},
		{lab.EnvPublicV6, "fd00::1", "private"},
		{lab.EnvPublicDNSV4, "203.0.113.99", "non-public"},
	} {
		t.Run(tc.env, func(t *testing.T) {
			t.Setenv(tc.env, tc.value)
			exe, err := os.Executable() // any regular file passes the probe lookup
			if err != nil {
				t.Fatal(err)
			}
			r := gatehouse(t, context.Background(), "run", "--profile", profilePath("bwrap-hardened.yaml"), "--out", t.TempDir(), "--probe", exe)
			if r.code != exitUsage || !strings.Contains(r.stderr, tc.env) || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want exit %d naming %s and %q", r.code, r.stderr, exitUsage, tc.env, tc.want)
			}
		})
	}
}
