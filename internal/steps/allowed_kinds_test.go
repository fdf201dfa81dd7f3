package steps

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/lab"
	"github.com/gatehouse-dev/gatehouse/internal/lab/labproxy"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
)

// The attempts at the allowed destination itself, each in a real session
// namespace with the test proxy: a permissive configuration lets it
// through (the inference endpoint records it; FAIL when the profile
// declares allow, a finding when it does not) and a blocking one stops it
// (PASS either way, no finding, the positive control through the proxy
// still arriving). Each run is judged both with and without the
// declaration, over the same hits.

const proxyMark = 0x4748

// directClosed: the sandbox's own traffic may not leave, only the proxy's
// (marked) may: the egress an srt-like setup has.
var directClosed = fmt.Sprintf(`table inet gatehouse_egress {
	chain output {
		type filter hook output priority filter; policy drop;
		oif "lo" accept
		meta mark %#x accept
	}
}
`, proxyMark)

var (
	byName     = labproxy.Config{Allow: allowInference}
	byNamePort = labproxy.Config{Allow: []string{lab.InferenceLabName + ":80", lab.InferenceLabName + ":443"}}
	apiOnly    = labproxy.Config{Allow: allowInference, Requests: &labproxy.Requests{
		Methods: []string{"POST"}, Paths: []string{"/v1/complete"}, MaxBody: 64 << 10}}
	declared = []evidence.Allow{{Host: lab.InferenceLabName, Methods: []string{"POST"}, Paths: []string{"/v1/complete"},
		MaxBody: 64 << 10, Ports: []int{80, 443}}}
)

type allowedCase struct {
	attempt    string
	shut       labproxy.Config
	egressShut string // the blocking configuration's ruleset, "" for none
	proof      func(evidence.Hit) bool
}

func request(method, path string, min int64) func(evidence.Hit) bool {
	return func(h evidence.Hit) bool {
		return h.Method == method && strings.HasPrefix(h.Path, path) && h.BodyBytes >= min
	}
}

func onPort(p string) func(evidence.Hit) bool {
	return func(h evidence.Hit) bool { return strings.HasSuffix(h.Dst, ":"+p) && h.Method == "" }
}

var allowedCases = []allowedCase{
	{"allowed-large-body", byName, directClosed, request("POST", "/v1/complete", allowedBodyFill)},
	{"allowed-method", byName, directClosed, request("PUT", "/v1/complete", 1)},
	{"allowed-path", byName, directClosed, request("POST", "/exfil/", 1)},
	{"allowed-port", byName, directClosed, onPort(allowedPort)},
	{"proxy-allowed-large-body", apiOnly, "", request("POST", "/v1/complete", allowedBodyFill)},
	{"proxy-allowed-method", apiOnly, "", request("PUT", "/v1/complete", 1)},
	{"proxy-allowed-path", apiOnly, "", request("POST", "/exfil/", 1)},
	{"proxy-allowed-port", byNamePort, "", onPort(allowedPort)},
	{"proxy-allowed-port-22", byNamePort, "", onPort("22")},
	{"proxy-socks-allowed-port", byNamePort, "", onPort(allowedPort)},
}

// Every attempt at the allowed destination has its pair of runs.
func TestEveryAllowedAttemptIsTested(t *testing.T) {
	have := map[string]bool{}
	for _, c := range allowedCases {
		have[c.attempt] = true
	}
	for name := range allowedAttempts {
		if !have[name] {
			t.Errorf("%s has no permissive/blocking test", name)
		}
		if _, ok := families["reach the callback server"][name]; !ok {
			t.Errorf("%s is not in the external-callback family", name)
		}
	}
}

func TestAllowedDestinationKinds(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces")
	}
	for _, tool := range []string{"nsenter", "nft"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s", tool)
		}
	}
	bin := probeBinary(t)
	ctx := context.Background()
	l, err := lab.Up(ctx, lab.Options{Logf: t.Logf})
	if err != nil {
		t.Fatalf("lab up: %v", err)
	}
	defer l.Close(context.WithoutCancel(ctx))
	n := 0
	for _, c := range allowedCases {
		t.Run(c.attempt, func(t *testing.T) {
			for _, open := range []bool{true, false} {
				cfg, egress := byName, ""
				if !open {
					cfg, egress = c.shut, c.egressShut
				}
				cfg.User, cfg.Pass, cfg.Mark = "run", "tok3n", proxyMark
				n++
				session := fmt.Sprintf("al%02d", n)
				obs, px := allowedRun(t, l, bin, session, c.attempt, cfg, egress)
				undeclared := *obs
				undeclared.Allowance = &evidence.Allowance{Endpoints: allowedDestination}
				withAllow := *obs
				withAllow.Allowance = &evidence.Allowance{Endpoints: allowedDestination, Declared: declared}
				jd, ju := evidence.Judge(withAllow), evidence.Judge(undeclared)
				what := map[bool]string{true: "permissive", false: "blocking"}[open]
				t.Logf("%s, allow declared: %s: %s", what, jd.Verdict, jd.Reason)
				t.Logf("%s, no allow: %s: %s; findings %q", what, ju.Verdict, ju.Reason, ju.Findings)
				if open {
					if jd.Verdict != evidence.Fail || !containsHit(jd.Violating, c.proof) {
						t.Errorf("permissive, allow declared: %s, violating %+v; want FAIL with the hit; proxy log %q", jd.Verdict, jd.Violating, px)
					}
					if ju.Verdict != evidence.Pass || len(ju.Findings) == 0 || !strings.Contains(ju.Findings[0], "declares no allow") {
						t.Errorf("permissive, no allow: %s (%s) findings %q; want PASS with a finding", ju.Verdict, ju.Reason, ju.Findings)
					}
					continue
				}
				if jd.Verdict != evidence.Pass || ju.Verdict != evidence.Pass || !jd.Control {
					t.Errorf("blocking: %s (%s) / %s (%s); want PASS with the control; proxy log %q", jd.Verdict, jd.Reason, ju.Verdict, ju.Reason, px)
				}
				if len(ju.Findings) > 0 || containsHit(obs.Hits, c.proof) {
					t.Errorf("blocking: something arrived: %q", ju.Findings)
				}
			}
		})
	}
}

func containsHit(hs []evidence.Hit, match func(evidence.Hit) bool) bool {
	for _, h := range hs {
		if h.Endpoint == "inference" && match(h) {
			return true
		}
	}
	return false
}

// allowedRun attaches a session, applies the ruleset, starts the proxy,
// runs the attempt and the positive control through the proxy, and
// returns the observation (without an Allowance) and the proxy's log.
func allowedRun(t *testing.T, l *lab.Lab, bin, session, attempt string, cfg labproxy.Config, egress string) (*evidence.Observation, []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nw, err := l.Attach(ctx, session)
	if err != nil {
		t.Fatalf("attach: %v", err)
	}
	defer func() { _ = l.Detach(context.WithoutCancel(ctx), session) }()
	if egress != "" {
		cmd := exec.CommandContext(ctx, "nsenter", "--net="+nw.NetnsPath, "nft", "-f", "-")
		cmd.Stdin = strings.NewReader(egress)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("egress ruleset: %v: %s", err, out)
		}
	}
	canary, control := token("ghc"), token("ghctl")
	l.Track(session, canary)
	defer l.Untrack(session)
	px, err := labproxy.Start(ctx, nw.NetnsPath, cfg)
	if err != nil {
		t.Fatalf("proxy: %v", err)
	}
	defer px.Close()
	steps, err := plan("reach the callback server", []string{attempt}, canary, l.Addrs())
	if err != nil {
		t.Fatal(err)
	}
	ctl := wire.Step{ID: "positive-control", Kind: wire.KindProxy, Via: wire.ViaHTTP, Method: "POST",
		Target:  "http://" + lab.InferenceLabName + "/v1/complete?control=" + control,
		Headers: map[string]string{"X-Gatehouse-Control": control}, Body: `{"prompt":"hi"}`}
	pl, _ := json.Marshal(wire.Plan{Session: session, Canary: canary, TimeoutMS: 5000, Steps: append(steps, ctl)})
	before, err := l.Emitted(ctx, session)
	if err != nil {
		t.Fatalf("emitted: %v", err)
	}
	cmd := exec.CommandContext(ctx, "nsenter", "--net="+nw.NetnsPath, bin, "run")
	cmd.Env = []string{"PATH=/usr/bin:/bin",
		"HTTP_PROXY=http://run:tok3n@" + px.HTTPAddr, "all_proxy=socks5h://run:tok3n@" + px.SOCKSAddr}
	cmd.Stdin = bytes.NewReader(pl)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("probe: %v: %s", err, errb.String())
	}
	reps, problems, err := wire.Decode(bytes.NewReader(out.Bytes()), wire.Plan{Steps: append(steps, ctl)}, wire.DefaultLimits())
	if err != nil || len(problems) > 0 {
		t.Fatalf("decode: %v %v", err, problems)
	}
	var atts []evidence.Attempt
	for _, r := range reps {
		t.Logf("%s: %s %s status=%d", r.ID, r.Outcome, r.Error, r.Status)
		if r.ID != "positive-control" {
			atts = append(atts, evidence.Attempt{Session: session, ID: r.ID, Kind: r.Kind, Target: r.Target,
				Outcome: r.Outcome, Error: r.Error, Status: r.Status, Start: r.Start, DurationMS: r.DurationMS})
		}
	}
	time.Sleep(300 * time.Millisecond) // the settle time verdicts wait
	after, err := l.Emitted(ctx, session)
	if err != nil {
		t.Fatalf("emitted: %v", err)
	}
	var mine []evidence.Hit
	for _, h := range l.Hits() {
		if h.Session == session || strings.Contains(strings.ToLower(h.Data+h.Summary), canary) {
			mine = append(mine, h)
		}
	}
	return &evidence.Observation{
		Session: session, Canary: canary, Control: control,
		Planned: []string{attempt}, Attempts: atts, Hits: mine, Allowed: allowedEndpoints,
		Emitted: delta(before, after), Dests: map[string]string{attempt: destOf(steps[0], l.Addrs(), "resolver")},
	}, px.Log()
}

// The positive control is what a profile's allow must permit (the profile
// loader refuses a declaration that does not): keep the two in step.
func TestControlFitsWhatAllowMustPermit(t *testing.T) {
	st := controlStep("ghctl0000000000000000")
	if st.Method != profile.ControlMethod || !strings.Contains(st.Target, inferenceAddr+profile.ControlPath+"?") ||
		len(st.Body) > profile.ControlMaxBody || strings.Contains(st.Target, inferenceAddr+":") {
		t.Errorf("control %s %s (%d-byte body) is not %s %s on port %d within %d bytes",
			st.Method, st.Target, len(st.Body), profile.ControlMethod, profile.ControlPath, profile.ControlPort, profile.ControlMaxBody)
	}
}
