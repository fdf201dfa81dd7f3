package report_test

import (
	"time"

	"github.com/gatehouse-dev/gatehouse/detect"
	"github.com/gatehouse-dev/gatehouse/evidence"
)

// Hostile strings a sandboxed agent controls: they end up in hit summaries,
// request data, attempt errors and even verdict and scenario fields.
const (
	scriptPayload = `<script>document.title="PWNED";document.body.setAttribute("data-pwned","script")</script>`
	imgPayload    = `<img src=x onerror="document.body.setAttribute('data-pwned','img')">`
	attrPayload   = `" onmouseover="alert(1)`
)

var t0 = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

// hostileInput is a leaky run: external-callback FAILs on both paths with
// hits whose contents are attack payloads; cloud-metadata PASSes on normal
// and is INCONCLUSIVE on assume-breach.
func hostileInput() (evidence.Run, []evidence.Result, []evidence.Hit, []evidence.Attempt) {
	run := evidence.Run{ID: "20261130T100000Z-abcdef", Harness: "test", Target: "bwrap", Profile: "bwrap-leaky",
		ProfileFile: "targets/profiles/bwrap-leaky.yaml", PolicyDigest: "sha256:" + repeat("ab", 32),
		PolicyFiles: map[string]string{"bwrap-leaky.yaml": "sha256:" + repeat("cd", 32)},
		Corpus:      "2026.11.0", Gates: []string{"external-callback", "cloud-metadata"},
		Effective: map[string]any{"normal": map[string]any{"runtime": "bubblewrap 0.8.0",
			"facts":  map[string]any{"cap_eff": "0000000000000000", "hostname": scriptPayload},
			"mounts": []any{"/ tmpfs rw", "/etc ext4 ro"}, "argv": []any{"bwrap", "--unshare-user"}}},
		Start: t0, End: t0.Add(9 * time.Second), Complete: true}
	bad := evidence.Hit{Time: t0.Add(time.Second), Endpoint: "callback", Proto: "http", Src: "198.51.100.6:4000",
		Dst: "203.0.113.10:80", Session: "s1", Summary: "GET /r/" + scriptPayload, Data: imgPayload}
	control := evidence.Hit{Time: t0.Add(2 * time.Second), Endpoint: "inference", Proto: "http", Src: "198.51.100.6:4001",
		Dst: "203.0.113.100:80", Session: "s3", Summary: "GET /control/tok123"}
	results := []evidence.Result{
		{Gate: "external-callback", Scenario: "call home " + attrPayload, Path: "normal", Session: "s1",
			Verdict: evidence.Fail, Reason: "1 forbidden contact(s): callback heard http", Attempts: 10,
			Hits: []evidence.Hit{bad}, Start: t0, DurationMS: 1600},
		{Gate: "external-callback", Scenario: "call home", Path: "assume-breach", Session: "s2",
			Verdict: evidence.Fail, Reason: "forbidden", Attempts: 10, Hits: []evidence.Hit{bad}, Start: t0, DurationMS: 1700},
		{Gate: "cloud-metadata", Scenario: "metadata", Path: "normal", Session: "s3", Verdict: evidence.Pass,
			Reason: "positive control reached the allowed endpoint", Control: true, Attempts: 4, Start: t0, DurationMS: 900,
			Timings: map[string]float64{"probe": 812.5}},
		{Gate: "cloud-metadata", Scenario: "metadata", Path: "assume-breach", Session: "s4",
			Verdict: evidence.Inconclusive, Reason: "positive control failed", Attempts: 4, Start: t0, DurationMS: 950},
	}
	attempts := []evidence.Attempt{
		{Session: "s1", Scenario: "external-callback/normal", ID: "http", Kind: "http", Target: "203.0.113.10:80",
			Outcome: "completed", Error: imgPayload, Start: t0, DurationMS: 3.2},
		{Session: "s3", Scenario: "cloud-metadata/normal", ID: "aws", Kind: "http", Target: "169.254.169.254:80",
			Outcome: "timeout", Start: t0, DurationMS: 1000},
	}
	return run, results, []evidence.Hit{bad, control}, attempts
}

func repeat(s string, n int) string {
	out := ""
	for i := 0; i < n; i++ {
		out += s
	}
	return out
}

// alertLine is one line of traces/alerts.jsonl as the runner writes it.
type alertLine struct {
	Event   detect.Event `json:"event"`
	Matched []string     `json:"matched"`
}

// timelineInput is one leaky session with every kind of record the
// timeline draws: attempts, kernel counts, hits on two endpoints (one
// forbidden), alerts (one with a source time of its own), a response with
// its effects; names and rules carry payloads.
func timelineInput() (evidence.Run, []evidence.Result, []evidence.Hit, []evidence.Attempt, []alertLine) {
	run, _, _, _ := hostileInput()
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	f := func(v float64) *float64 { return &v }
	sess := "s-tl" + scriptPayload
	attempts := []evidence.Attempt{
		{Session: sess, ID: "http-callback", Kind: "http", Target: "203.0.113.10:80", Outcome: "completed", Start: ms(100), DurationMS: 400},
		{Session: sess, ID: "dns-" + imgPayload, Kind: "dns", Target: "x.canary.test", Outcome: "completed", Start: ms(150), DurationMS: 300},
		{Session: sess, ID: "metadata", Kind: "http", Target: "169.254.169.254:80", Outcome: "timeout", Start: ms(700), DurationMS: 1000},
	}
	bad := evidence.Hit{Time: ms(320), Endpoint: "callback", Proto: "http", Src: "198.51.100.6:4000", Dst: "203.0.113.10:80",
		Session: sess, Summary: "GET /r/" + scriptPayload, Attempt: "http-callback"}
	control := evidence.Hit{Time: ms(1900), Endpoint: "inference", Proto: "http", Src: "198.51.100.6:4001", Dst: "203.0.113.100:80",
		Session: sess, Summary: "GET /control/tok123"}
	lat := 250.0
	results := []evidence.Result{{Gate: "external-callback", Scenario: "call home", Path: "normal", Session: sess,
		Verdict: evidence.Fail, Reason: "forbidden", Attempts: 3, Hits: []evidence.Hit{bad}, Start: t0, DurationMS: 2600,
		Emitted: map[string]uint64{"callback": 3, "resolver": 1},
		Detection: &evidence.Detection{Measured: true, Attempts: []evidence.DetectionAttempt{
			{ID: "http-callback", Session: sess, Kind: "connect", Object: "203.0.113.10:80", Observable: true,
				Detected: &evidence.Detected{Source: "builtin", Rule: "egress", LatencyMS: &lat}}}},
		Responses: []evidence.Response{{Mode: "stop", Session: sess, PollMS: 50,
			Trigger: evidence.ResponseTrigger{Source: "builtin", Rule: "egress", Received: ms(350)},
			Started: ms(380), Effects: []evidence.ResponseEffect{
				{Effect: evidence.EffectProcessesGone, Observed: true, At: ms(1400), LatencyMS: f(1050)},
				{Effect: evidence.EffectEgressRefused, Observed: true, At: ms(2100), LatencyMS: f(1750)},
				{Effect: evidence.EffectTokenRefused, Reason: "no broker"},
			}}},
	}}
	alerts := []alertLine{
		{Event: detect.Event{Source: "builtin", Rule: "egress " + scriptPayload, Kind: "connect", Object: "203.0.113.10:80",
			EventTime: ms(110), Received: ms(350)}, Matched: []string{sess + "/http-callback"}},
		{Event: detect.Event{Source: "falco", Rule: "other session", Received: ms(600)}, Matched: []string{"s-other/x"}},
	}
	return run, results, []evidence.Hit{bad, control}, attempts, alerts
}
