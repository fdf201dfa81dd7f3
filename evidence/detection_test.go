package evidence

import "testing"

func TestDetectionSummaryAndCell(t *testing.T) {
	l := func(v float64) *float64 { return &v }
	as := []DetectionAttempt{
		{ID: "a", Observable: true, Detected: &Detected{Source: "builtin", LatencyMS: l(40)}},
		{ID: "b", Observable: true, Detected: &Detected{Source: "builtin", LatencyMS: l(10)}},
		{ID: "c", Observable: true, Detected: &Detected{Source: "falco"}}, // imported: no latency
		{ID: "d", Observable: true},
		{ID: "e", Observable: false, Reason: "no observable object"},
	}
	s := Summarize(as)
	if s.Attempts != 5 || s.Observable != 4 || s.Detected != 3 || s.P50MS == nil || *s.P50MS != 10 || *s.P95MS != 40 {
		t.Fatalf("summary %+v", s)
	}
	r := Result{Detection: &Detection{Measured: true, Attempts: as}}
	if got := DetectionCell(r); got != "3/4 p50 10ms" {
		t.Errorf("cell %q", got)
	}
	if got := DetectionCell(Result{}, Result{Detection: &Detection{Reason: NotMeasured}}); got != "not measured" {
		t.Errorf("cell without detectors %q", got)
	}
}

func TestPreventionPerAttempt(t *testing.T) {
	as := []DetectionAttempt{
		{ID: "http", Kind: "connect", Object: "203.0.113.10:80"},
		{ID: "tcp", Kind: "connect", Object: "203.0.113.10:9000"},
		{ID: "dns", Kind: "dns", Object: "x.oob.gatehouse.test"},
	}
	hit := Hit{Endpoint: "callback", Dst: "203.0.113.10:80"}
	got := Prevention(Fail, []Hit{hit}, as)
	if got[0] == nil || *got[0] || got[1] == nil || !*got[1] || got[2] == nil || !*got[2] {
		t.Errorf("FAIL with one tied hit: %v %v %v", got[0], got[1], got[2])
	}
	untied := Prevention(Fail, []Hit{{Endpoint: "callback", Dst: "203.0.113.10:443"}}, as)
	for i, p := range untied {
		if p != nil {
			t.Errorf("attempt %d: a FAIL with an untied hit cannot say it was prevented: %v", i, *p)
		}
	}
	for i, p := range Prevention(Pass, nil, as) {
		if p == nil || !*p {
			t.Errorf("PASS: attempt %d not prevented", i)
		}
	}
	for i, p := range Prevention(Inconclusive, nil, as) {
		if p != nil {
			t.Errorf("INCONCLUSIVE: attempt %d says %v", i, *p)
		}
	}
	dns := Prevention(Fail, []Hit{{Endpoint: "dns-authority", Summary: "A X.OOB.gatehouse.test."}}, as)
	if dns[2] == nil || *dns[2] {
		t.Errorf("dns hit not tied: %v", dns[2])
	}
}
