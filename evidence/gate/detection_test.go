package gate_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/evidence/gate"
	"github.com/gatehouse-dev/gatehouse/evidence/index"
)

func ms(v float64) *float64 { return &v }

// detected gives every result of rs a measured detection of one connect
// attempt with the given latency (nil: imported, not measured).
func detected(rs []evidence.Result, latency *float64) []evidence.Result {
	out := append([]evidence.Result(nil), rs...)
	for i := range out {
		out[i].Detection = &evidence.Detection{Measured: true, Sources: []string{"builtin"}, Attempts: []evidence.DetectionAttempt{
			{ID: "http", Kind: "connect", Object: "203.0.113.10:80", Observable: true, Detected: &evidence.Detected{Source: "builtin", Rule: "egress", LatencyMS: latency}},
			{ID: "icmp", Observable: false, Reason: "no observable object for a icmp attempt"},
		}}
	}
	return out
}

func TestRequireDetection(t *testing.T) {
	base := results("external-callback", "dns-exfiltration")
	req := gate.Request{PolicyDigest: policy, ImageDigest: image, Require: []string{"external-callback", "dns-exfiltration"},
		RequireDetection: []string{"external-callback"}, MaxDetectionLatency: 2 * time.Second, Now: now}
	cases := []struct {
		name     string
		rs       []evidence.Result
		req      func(*gate.Request)
		wantCode gate.Code // "" = pass
		wantMsg  string
	}{
		{"detected in time passes", detected(base, ms(40)), nil, "", ""},
		{"not measured is refused", base, nil, gate.DetectionNotMeasured, "detection was not measured"},
		{"a missed observable attempt is refused", with(detected(base, ms(40)), 0, func(r *evidence.Result) {
			r.Detection.Attempts[0].Detected, r.Detection.Attempts[0].Reason = nil, "no detector's event matched"
		}), nil, gate.DetectionMissed, "attempt http (connect 203.0.113.10:80) was not detected"},
		{"detected too late is refused", detected(base, ms(2500)), nil, gate.DetectionTooSlow, "after 2.5s, later than --max-detection-latency 2s"},
		{"latency not measured cannot meet a latency bound", detected(base, nil), nil, gate.DetectionTooSlow, "latency was not measured"},
		{"latency not measured is fine without a bound", detected(base, nil), func(r *gate.Request) { r.MaxDetectionLatency = 0 }, "", ""},
		{"nothing observable shows no detection", with(with(detected(base, ms(1)), 0, func(r *evidence.Result) {
			r.Detection.Attempts = r.Detection.Attempts[1:]
		}), 1, func(r *evidence.Result) { r.Detection.Attempts = r.Detection.Attempts[1:] }), nil, gate.DetectionMissed, "no attempt was observable"},
		{"a gate not required for detection is not checked", with(detected(base, ms(40)), 2, func(r *evidence.Result) { r.Detection = nil }), nil, "", ""},
		{"a required detection gate with no result is refused", detected(results("dns-exfiltration"), ms(1)), func(r *gate.Request) { r.Require = []string{"dns-exfiltration"} }, gate.GateMissing, "to show detection"},
		{"detection never hides a failed verdict", with(detected(base, ms(40)), 0, func(r *evidence.Result) { r.Verdict = evidence.Fail }), nil, gate.GateFail, "FAILED"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := req
			if tc.req != nil {
				tc.req(&r)
			}
			d := gate.Decide(r, []index.Run{runRow("r1", policy, image, time.Hour, tc.rs)})
			if tc.wantCode == "" {
				if !d.Pass {
					t.Fatalf("want pass, got %s", d.Reason())
				}
				return
			}
			if d.Pass {
				t.Fatalf("want refusal %s, got pass", tc.wantCode)
			}
			for _, rf := range d.Refusals {
				if rf.Code == tc.wantCode && strings.Contains(rf.Message, tc.wantMsg) {
					return
				}
			}
			t.Fatalf("want %s with %q, got %s", tc.wantCode, tc.wantMsg, d.Reason())
		})
	}
}

// The index keeps the detection block, so a decision from the index sees
// what the signed results say.
func TestIndexKeepsDetection(t *testing.T) {
	ctx := context.Background()
	ix, err := index.Open(ctx, filepath.Join(t.TempDir(), index.DefaultName))
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	rs := detected(results("external-callback"), ms(40))
	rs[1].Detection = nil
	if err := ix.Record(ctx, runRow("r1", policy, image, time.Hour, rs)); err != nil {
		t.Fatal(err)
	}
	rows, err := ix.Candidates(ctx, policy)
	if err != nil || len(rows) != 1 || len(rows[0].Results) != 2 {
		t.Fatalf("candidates %+v %v", rows, err)
	}
	got := rows[0].Results
	if got[0].Detection == nil || got[0].Detection.Attempts[0].Detected.LatencyMS == nil || *got[0].Detection.Attempts[0].Detected.LatencyMS != 40 || got[1].Detection != nil {
		t.Fatalf("detection not kept: %+v / %+v", got[0].Detection, got[1].Detection)
	}
	req := gate.Request{PolicyDigest: policy, ImageDigest: image, RequireDetection: []string{"external-callback"}, Now: now}
	if d := gate.Decide(req, rows); d.Pass || d.Refusals[0].Code != gate.DetectionNotMeasured {
		t.Fatalf("want the path without detection refused, got %s", d.Reason())
	}
}
