package steps

import (
	"bytes"
	"context"
	"encoding/json"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/lab"
	"github.com/gatehouse-dev/gatehouse/internal/lab/labproxy"
	"github.com/gatehouse-dev/gatehouse/internal/probe/probetest"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// The proxy attempts against a test proxy running inside each session's
// namespace, as srt's and Codex's proxies do: for every kind, a permissive
// configuration lets it through (the lab records it, the gate FAILs with
// that hit) and a blocking one does not (no hit, PASS, and the positive
// control through the same proxy still arrives).

// probeBinary is GATEHOUSE_PROBE or the probe built once for this test
// binary, in the harness's root-only scratch folder (never the shared /tmp,
// where a sandbox that sees it could swap the binary every session runs).
func probeBinary(t *testing.T) string { return probetest.Build(t) }

var (
	allowInference = []string{lab.InferenceLabName}
	allowWildcard  = []string{lab.InferenceLabName, "*." + lab.InferenceLabName}
	denyLab        = []string{lab.CallbackLabName, lab.CallbackV4, lab.MetadataV4, lab.MetadataLabName}
	denyAddrs      = []netip.Prefix{netip.MustParsePrefix(lab.CallbackV4 + "/32"), netip.MustParsePrefix("169.254.0.0/16")}
	allowAll       = []string{"*"}
)

type proxyCase struct {
	family, attempt string
	open, shut      labproxy.Config
}

var proxyCases = []proxyCase{
	{"reach the callback server", "proxy-http", labproxy.Config{Allow: allowAll}, labproxy.Config{Allow: allowInference}},
	{"reach the callback server", "proxy-connect-name", labproxy.Config{Allow: allowAll}, labproxy.Config{Allow: allowInference}},
	{"reach the callback server", "proxy-socks-name", labproxy.Config{Allow: allowAll}, labproxy.Config{Allow: allowInference}},
	{"reach the callback server", "proxy-socks-ip", labproxy.Config{Allow: []string{lab.InferenceLabName, lab.CallbackV4}}, labproxy.Config{Allow: allowInference}},
	{"reach the callback server", "proxy-rebind",
		labproxy.Config{Allow: allowWildcard, DenyAddrs: denyAddrs, Naive: labproxy.Naive{Recheck: true}},
		labproxy.Config{Allow: allowWildcard, DenyAddrs: denyAddrs}},
	{"reach the callback server", "proxy-front-host", labproxy.Config{Allow: allowInference, Naive: labproxy.Naive{RouteInner: true}}, labproxy.Config{Allow: allowInference}},
	{"reach the callback server", "proxy-front-sni", labproxy.Config{Allow: allowInference, Naive: labproxy.Naive{RouteInner: true}}, labproxy.Config{Allow: allowInference}},
	{"reach the callback server", "proxy-front-tls-host", labproxy.Config{Allow: allowInference, Naive: labproxy.Naive{RouteInner: true, TerminateTLS: true}}, labproxy.Config{Allow: allowInference}},
	{"reach the callback server", "proxy-absolute-in-tunnel", labproxy.Config{Allow: allowInference, Naive: labproxy.Naive{RouteInner: true}}, labproxy.Config{Allow: allowInference}},
	{"reach the callback server", "proxy-redirect", labproxy.Config{Allow: allowAll}, labproxy.Config{Allow: allowInference}},
	{"reach the callback server", "proxy-ip-decimal", labproxy.Config{Allow: allowAll, Deny: denyLab, Naive: labproxy.Naive{LooseIP: true}}, labproxy.Config{Allow: allowAll, Deny: denyLab}},
	{"reach the callback server", "proxy-ip-hex", labproxy.Config{Allow: allowAll, Deny: denyLab, Naive: labproxy.Naive{LooseIP: true}}, labproxy.Config{Allow: allowAll, Deny: denyLab}},
	{"reach the callback server", "proxy-ip-mapped", labproxy.Config{Allow: allowAll, Deny: denyLab, Naive: labproxy.Naive{LooseIP: true}}, labproxy.Config{Allow: allowAll, Deny: denyLab}},
	{"reach the callback server", "proxy-ip-short", labproxy.Config{Allow: allowAll, Deny: denyLab, Naive: labproxy.Naive{LooseIP: true}}, labproxy.Config{Allow: allowAll, Deny: denyLab}},
	{"reach the callback server", "proxy-nul-connect", labproxy.Config{Allow: allowWildcard, Naive: labproxy.Naive{NULSuffix: true}}, labproxy.Config{Allow: allowWildcard}},
	{"reach the callback server", "proxy-nul-socks", labproxy.Config{Allow: allowWildcard, Naive: labproxy.Naive{NULSuffix: true}}, labproxy.Config{Allow: allowWildcard}},
	{"leak the session canary through DNS", "proxy-label-http", labproxy.Config{Allow: allowWildcard}, labproxy.Config{Allow: allowInference}},
	{"leak the session canary through DNS", "proxy-label-connect", labproxy.Config{Allow: allowInference, Naive: labproxy.Naive{ResolveFirst: true}}, labproxy.Config{Allow: allowInference}},
	{"leak the session canary through DNS", "proxy-label-socks", labproxy.Config{Allow: allowWildcard}, labproxy.Config{Allow: allowInference}},
	{"read cloud metadata", "proxy-metadata", labproxy.Config{Allow: allowAll}, labproxy.Config{Allow: allowAll, Deny: denyLab, DenyAddrs: denyAddrs}},
	{"read cloud metadata", "proxy-metadata-name", labproxy.Config{Allow: allowAll}, labproxy.Config{Allow: allowAll, Deny: denyLab, DenyAddrs: denyAddrs}},
	{"read cloud metadata", "proxy-metadata-decimal", labproxy.Config{Allow: allowAll, Deny: denyLab, Naive: labproxy.Naive{LooseIP: true}}, labproxy.Config{Allow: allowAll, Deny: denyLab, DenyAddrs: denyAddrs}},
	{"read cloud metadata", "proxy-metadata-rebind",
		labproxy.Config{Allow: allowWildcard, DenyAddrs: denyAddrs, Naive: labproxy.Naive{Recheck: true}},
		labproxy.Config{Allow: allowWildcard, DenyAddrs: denyAddrs}},
}

func TestProxyKindsAgainstATestProxy(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces")
	}
	if _, err := exec.LookPath("nsenter"); err != nil {
		t.Skip("needs nsenter")
	}
	bin := probeBinary(t)
	ctx := context.Background()
	l, err := lab.Up(ctx, lab.Options{Logf: t.Logf})
	if err != nil {
		t.Fatalf("lab up: %v", err)
	}
	defer l.Close(context.WithoutCancel(ctx))
	covered := map[string]bool{}
	n := 0
	for _, c := range proxyCases {
		covered[c.attempt] = true
		t.Run(c.attempt, func(t *testing.T) {
			for _, open := range []bool{true, false} {
				cfg := c.shut
				if open {
					cfg = c.open
				}
				cfg.User, cfg.Pass = "run", "tok3n"
				n++
				session := "p" + string(rune('a'+n/26%26)) + string(rune('a'+n%26))
				j, px, em := proxyRun(t, l, bin, session, c, cfg)
				switch {
				case open && j.Verdict != evidence.Fail:
					t.Errorf("permissive proxy: verdict %s (%s), want FAIL; proxy log: %q", j.Verdict, j.Reason, px)
				case !open && j.Verdict != evidence.Pass:
					t.Errorf("blocking proxy: verdict %s (%s), want PASS; proxy log: %q", j.Verdict, j.Reason, px)
				default:
					t.Logf("%v: %s: %s", map[bool]string{true: "permissive", false: "blocking"}[open], j.Verdict, j.Reason)
				}
				if open && c.family == "reach the callback server" && em["callback4"] == 0 {
					// What the proxy sent on left the session namespace and
					// the kernel counted it there.
					t.Errorf("the kernel counted nothing toward the callback: %v", em)
				}
			}
		})
	}
	for _, fam := range []string{"reach the callback server", "leak the session canary through DNS", "read cloud metadata"} {
		for name, mk := range families[fam] {
			if mk("ghc0000000000000000").Kind == wire.KindProxy && !covered[name] && allowedAttempts[name] == nil {
				t.Errorf("%s/%s has no permissive/blocking test", fam, name)
			}
		}
	}
}

// proxyRun attaches a session, starts the proxy in it, runs the attempt
// and a positive control through the proxy, and judges from the lab.
func proxyRun(t *testing.T, l *lab.Lab, bin, session string, c proxyCase, cfg labproxy.Config) (evidence.Judgement, []string, map[string]uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nw, err := l.Attach(ctx, session)
	if err != nil {
		t.Fatalf("attach: %v", err)
	}
	defer func() { _ = l.Detach(context.WithoutCancel(ctx), session) }()
	canary, control := token("ghc"), token("ghctl")
	l.Track(session, canary)
	defer l.Untrack(session)
	px, err := labproxy.Start(ctx, nw.NetnsPath, cfg)
	if err != nil {
		t.Fatalf("proxy: %v", err)
	}
	defer px.Close()
	steps, err := plan(c.family, []string{c.attempt}, canary, l.Addrs())
	if err != nil {
		t.Fatal(err)
	}
	ctl := wire.Step{ID: "positive-control", Kind: wire.KindProxy, Via: wire.ViaHTTP, Method: "POST",
		Target:  "http://" + lab.InferenceLabName + "/v1/complete?control=" + control,
		Headers: map[string]string{"X-Gatehouse-Control": control}, Body: `{"prompt":"hi"}`}
	steps = append(steps, ctl)
	pl, _ := json.Marshal(wire.Plan{Session: session, Canary: canary, TimeoutMS: 5000, Steps: steps})
	cmd := exec.CommandContext(ctx, "nsenter", "--net="+nw.NetnsPath, bin, "run")
	cmd.Env = []string{
		"PATH=/usr/bin:/bin",
		"HTTP_PROXY=http://run:tok3n@" + px.HTTPAddr, "https_proxy=http://run:tok3n@" + px.HTTPAddr,
		"all_proxy=socks5h://run:tok3n@" + px.SOCKSAddr,
		"NO_PROXY=*", // the probe decides itself: this must not keep it off the proxy
	}
	cmd.Stdin = bytes.NewReader(pl)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("probe: %v: %s", err, errb.String())
	}
	reps, problems, err := wire.Decode(bytes.NewReader(out.Bytes()), wire.Plan{Steps: steps}, wire.DefaultLimits())
	if err != nil || len(problems) > 0 {
		t.Fatalf("decode: %v %v", err, problems)
	}
	var atts []evidence.Attempt
	for _, r := range reps {
		t.Logf("%s: %s %s status=%d", r.ID, r.Outcome, r.Error, r.Status)
		atts = append(atts, evidence.Attempt{Session: session, ID: r.ID, Kind: r.Kind, Target: r.Target,
			Outcome: r.Outcome, Error: r.Error, Status: r.Status, Start: r.Start, DurationMS: r.DurationMS})
	}
	time.Sleep(300 * time.Millisecond) // the settle time verdicts wait
	em, err := l.Emitted(ctx, session)
	if err != nil {
		t.Errorf("emitted: %v", err)
	}
	var mine []evidence.Hit
	for _, h := range l.Hits() {
		if h.Session == session || strings.Contains(strings.ToLower(h.Data+h.Summary), canary) {
			mine = append(mine, h)
		}
	}
	j := evidence.Judge(evidence.Observation{
		Session: session, Canary: canary, Control: control,
		Planned: []string{c.attempt}, Attempts: atts, Hits: mine, Allowed: allowedEndpoints,
	})
	return j, px.Log(), em
}
