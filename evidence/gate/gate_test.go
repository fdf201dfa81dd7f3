package gate_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/evidence/bundle"
	"github.com/gatehouse-dev/gatehouse/evidence/gate"
	"github.com/gatehouse-dev/gatehouse/evidence/index"
)

var now = time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)

const (
	policy = "sha256:policy-a"
	image  = "sha256:image-a"
)

// results gives each gate a PASS with control on both paths; tweak edits them.
func results(gates ...string) []evidence.Result {
	var out []evidence.Result
	for _, g := range gates {
		for _, p := range gate.Paths {
			out = append(out, evidence.Result{Gate: g, Scenario: "blocks", Path: p, Verdict: evidence.Pass, Control: true})
		}
	}
	return out
}

func runRow(id, pol, img string, age time.Duration, rs []evidence.Result) index.Run {
	r := evidence.Run{ID: id, PolicyDigest: pol, ImageDigest: img, Start: now.Add(-age - time.Minute), End: now.Add(-age)}
	return index.FromRun("/ev/"+id, r, rs, "PASSED", "sha256:k", now)
}

func with(rs []evidence.Result, i int, f func(*evidence.Result)) []evidence.Result {
	out := append([]evidence.Result(nil), rs...)
	f(&out[i])
	return out
}

func TestDecide(t *testing.T) {
	good := results("egress", "metadata")
	req := gate.Request{PolicyDigest: policy, ImageDigest: image, Require: []string{"egress", "metadata"},
		MaxAge: 24 * time.Hour, Now: now}
	cases := []struct {
		name     string
		req      func(r *gate.Request)
		rows     []index.Run
		wantCode gate.Code // "" means pass
		wantMsg  string
	}{
		{"right config passes", nil, []index.Run{runRow("r1", policy, image, time.Hour, good)}, "", "pass: run r1"},
		{"newest of several decides", nil, []index.Run{
			runRow("old", policy, image, 3*time.Hour, with(good, 0, func(r *evidence.Result) { r.Verdict = evidence.Fail })),
			runRow("new", policy, image, time.Hour, good)}, "", "pass: run new"},
		{"newer failure beats older pass", nil, []index.Run{
			runRow("old", policy, image, 3*time.Hour, good),
			runRow("new", policy, image, time.Hour, with(good, 1, func(r *evidence.Result) { r.Verdict = evidence.Fail }))},
			gate.GateFail, "gate egress FAILED on path assume-breach"},
		{"no evidence at all", nil, nil, gate.NoEvidence, "no verified evidence for policy sha256:policy-a"},
		{"policy mismatch", nil, []index.Run{runRow("r1", "sha256:policy-b", image, time.Hour, good)},
			gate.NoEvidence, "only for other policies, e.g. sha256:policy-b"},
		{"image mismatch", nil, []index.Run{runRow("r1", policy, "sha256:image-b", time.Hour, good)},
			gate.ImageMismatch, "image mismatch: evidence for policy sha256:policy-a is for sha256:image-b, not sha256:image-a"},
		{"image required when evidence names one", func(r *gate.Request) { r.ImageDigest = "" },
			[]index.Run{runRow("r1", policy, image, time.Hour, good)}, gate.ImageRequired, "names image sha256:image-a: give --image"},
		{"FAIL", nil, []index.Run{runRow("r1", policy, image, time.Hour,
			with(good, 2, func(r *evidence.Result) { r.Verdict = evidence.Fail }))},
			gate.GateFail, `gate metadata FAILED on path normal: scenario "blocks"`},
		{"INCONCLUSIVE", nil, []index.Run{runRow("r1", policy, image, time.Hour,
			with(good, 3, func(r *evidence.Result) { r.Verdict = evidence.Inconclusive }))},
			gate.GateInconclusive, "gate metadata is INCONCLUSIVE on path assume-breach"},
		{"pass without positive control", nil, []index.Run{runRow("r1", policy, image, time.Hour,
			with(good, 0, func(r *evidence.Result) { r.Control = false }))},
			gate.GateInconclusive, "positive control did not work"},
		{"required gate missing", func(r *gate.Request) { r.Require = append(r.Require, "secrets") },
			[]index.Run{runRow("r1", policy, image, time.Hour, good)}, gate.GateMissing, "gate secrets has no result on path normal"},
		{"gate missing on one path", nil, []index.Run{runRow("r1", policy, image, time.Hour, good[:3])},
			gate.GateMissing, "gate metadata has no result on path assume-breach"},
		{"too old", nil, []index.Run{runRow("r1", policy, image, 49*time.Hour, good)},
			gate.TooOld, "is 49h0m0s old, more than --max-age 24h0m0s"},
		{"no results at all", func(r *gate.Request) { r.Require = nil },
			[]index.Run{runRow("r1", policy, image, time.Hour, nil)}, gate.GateMissing, "has no gate results"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := req
			r.Require = append([]string(nil), req.Require...)
			if tc.req != nil {
				tc.req(&r)
			}
			d := gate.Decide(r, tc.rows)
			if tc.wantCode == "" {
				if !d.Pass || len(d.Refusals) > 0 {
					t.Fatalf("refused: %s", d.Reason())
				}
			} else if d.Pass || len(d.Refusals) == 0 || d.Refusals[0].Code != tc.wantCode {
				t.Fatalf("got %s %v, want code %s", d.Reason(), d.Refusals, tc.wantCode)
			}
			if !strings.Contains(d.Reason(), tc.wantMsg) {
				t.Fatalf("reason %q does not say %q", d.Reason(), tc.wantMsg)
			}
		})
	}
}

func TestConfirm(t *testing.T) {
	req := gate.Request{PolicyDigest: policy, ImageDigest: image, Now: now}
	good := results("egress")
	d := gate.Decide(req, []index.Run{runRow("r1", policy, image, time.Hour, good)})
	if !d.Pass {
		t.Fatal(d.Reason())
	}
	signedRun := evidence.Run{ID: "r1", PolicyDigest: policy, ImageDigest: image, End: now.Add(-time.Hour)}
	verr := &bundle.Error{Kind: bundle.ErrSignature, File: bundle.TestResultFile}
	cases := []struct {
		name     string
		v        *bundle.Verified
		verr     error
		wantCode gate.Code
	}{
		{"verified bundle agrees", &bundle.Verified{Run: signedRun, Results: good}, nil, ""},
		{"bad signature", nil, verr, gate.BadSignature},
		{"index row edited: signed bundle is another run",
			&bundle.Verified{Run: evidence.Run{ID: "r2", PolicyDigest: policy, ImageDigest: image}, Results: good}, nil, gate.EvidenceMismatch},
		{"index verdicts edited: signed results FAIL",
			&bundle.Verified{Run: signedRun, Results: with(good, 0, func(r *evidence.Result) { r.Verdict = evidence.Fail })}, nil, gate.GateFail},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := gate.Confirm(req, d, tc.v, tc.verr)
			if tc.wantCode == "" {
				if !got.Pass {
					t.Fatal(got.Reason())
				}
				return
			}
			if got.Pass || got.Refusals[0].Code != tc.wantCode {
				t.Fatalf("got %s, want %s", got.Reason(), tc.wantCode)
			}
			if tc.wantCode == gate.BadSignature && !errors.Is(tc.verr, bundle.ErrSignature) {
				t.Fatal("test error lost its kind")
			}
		})
	}
}
