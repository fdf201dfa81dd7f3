package gate_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/evidence/bundle"
	"github.com/gatehouse-dev/gatehouse/evidence/gate"
	"github.com/gatehouse-dev/gatehouse/evidence/index"
)

func onPath(path string, rs []evidence.Result) []evidence.Result {
	var out []evidence.Result
	for _, r := range rs {
		if r.Path == path {
			out = append(out, r)
		}
	}
	return out
}

func failed(rs []evidence.Result) []evidence.Result {
	return with(rs, 0, func(r *evidence.Result) { r.Verdict = evidence.Fail })
}

// Per (gate, path), the newest run that has it decides: the shards of a
// group decide together, an older pass never outvotes a newer failure.
func TestDecidePerGateAndPath(t *testing.T) {
	req := gate.Request{PolicyDigest: policy, ImageDigest: image, Require: []string{"egress", "metadata", "secrets"},
		MaxAge: 24 * time.Hour, Now: now}
	cases := []struct {
		name     string
		req      func(r *gate.Request)
		rows     []index.Run
		wantCode gate.Code // "" means pass
		wantMsg  string
		wantRuns string // deciding runs, newest first
	}{
		{"three shards together pass", nil, []index.Run{
			runRow("s1", policy, image, 3*time.Hour, results("egress")),
			runRow("s2", policy, image, 2*time.Hour, results("metadata")),
			runRow("s3", policy, image, time.Hour, results("secrets"))}, "", "pass: runs s3, s2, s1", "s3 s2 s1"},
		{"the two paths of a gate from two runs", nil, []index.Run{
			runRow("a", policy, image, 2*time.Hour, append(results("metadata", "secrets"), onPath("normal", results("egress"))...)),
			runRow("b", policy, image, time.Hour, onPath("assume-breach", results("egress")))}, "", "pass: runs b, a", "b a"},
		{"a missing shard names its gate and path", nil, []index.Run{
			runRow("s1", policy, image, 3*time.Hour, results("egress")),
			runRow("s3", policy, image, time.Hour, results("secrets"))},
			gate.GateMissing, "gate metadata has no result on path normal (none of 2 runs of this policy and image has it; newest run s3)", "s3 s1"},
		{"a failed shard refuses", nil, []index.Run{
			runRow("s1", policy, image, 3*time.Hour, results("egress")),
			runRow("s2", policy, image, 2*time.Hour, failed(results("metadata"))),
			runRow("s3", policy, image, time.Hour, results("secrets"))},
			gate.GateFail, "gate metadata FAILED on path normal: scenario \"blocks\" (run s2)", "s3 s2 s1"},
		{"an older whole pass does not outvote a newer shard's failure", nil, []index.Run{
			runRow("whole", policy, image, 5*time.Hour, results("egress", "metadata", "secrets")),
			runRow("s2", policy, image, 2*time.Hour, failed(results("metadata")))},
			gate.GateFail, "gate metadata FAILED on path normal", "s2 whole"},
		{"a newer shard's pass replaces an older failure of its gates only", nil, []index.Run{
			runRow("whole", policy, image, 5*time.Hour, failed(results("egress", "metadata", "secrets"))),
			runRow("s2", policy, image, 2*time.Hour, results("metadata", "secrets"))},
			gate.GateFail, "gate egress FAILED on path normal: scenario \"blocks\" (run whole)", "s2 whole"},
		{"a re-run shard decides its gates", nil, []index.Run{
			runRow("s1", policy, image, 3*time.Hour, results("egress", "metadata")),
			runRow("s2", policy, image, 3*time.Hour, failed(results("secrets"))),
			runRow("s2-retry", policy, image, time.Hour, results("secrets"))}, "", "pass: runs s2-retry, s1", "s2-retry s1"},
		{"a shard of another image does not count", nil, []index.Run{
			runRow("s1", policy, image, 3*time.Hour, results("egress", "metadata")),
			runRow("s2", policy, "sha256:image-b", time.Hour, results("secrets"))},
			gate.GateMissing, "gate secrets has no result on path normal (run s1)", "s1"},
		{"one deciding shard too old", nil, []index.Run{
			runRow("s1", policy, image, 30*time.Hour, results("egress")),
			runRow("s2", policy, image, time.Hour, results("metadata", "secrets"))},
			gate.TooOld, "run s1, ended 2026-03-01T06:00:00Z, deciding egress/normal, egress/assume-breach) is 30h0m0s old", "s2 s1"},
		{"default required gates are the group's", func(r *gate.Request) { r.Require = nil }, []index.Run{
			runRow("s1", policy, image, 3*time.Hour, results("egress")),
			runRow("s2", policy, image, time.Hour, onPath("normal", results("metadata")))},
			gate.GateMissing, "gate metadata has no result on path assume-breach", "s2 s1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := req
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
			var ids []string
			for _, run := range d.Runs {
				ids = append(ids, run.ID)
			}
			if got := strings.Join(ids, " "); got != tc.wantRuns {
				t.Errorf("deciding runs %q, want %q", got, tc.wantRuns)
			}
		})
	}
}

// Every deciding run is re-verified: one shard whose bundle does not verify
// refuses the release and is named.
func TestConfirmAllShards(t *testing.T) {
	req := gate.Request{PolicyDigest: policy, ImageDigest: image, Require: []string{"egress", "metadata"}, Now: now}
	rows := []index.Run{
		runRow("s1", policy, image, 2*time.Hour, results("egress")),
		runRow("s2", policy, image, time.Hour, results("metadata")),
	}
	d := gate.Decide(req, rows)
	if !d.Pass || len(d.Runs) != 2 || len(d.Decided) != 4 {
		t.Fatalf("decision %s with %d runs, %v", d.Reason(), len(d.Runs), d.Decided)
	}
	signed := map[string]*bundle.Verified{}
	for _, r := range rows {
		rs := results("egress")
		if r.ID == "s2" {
			rs = results("metadata")
		}
		signed[r.ID] = &bundle.Verified{Run: evidence.Run{ID: r.ID, PolicyDigest: policy, ImageDigest: image, End: r.Ended}, Results: rs}
	}
	ok := func(run index.Run) (*bundle.Verified, error) { return signed[run.ID], nil }
	if got := gate.ConfirmAll(req, d, ok); !got.Pass || len(got.Runs) != 2 {
		t.Fatalf("both shards verify: %s", got.Reason())
	}
	var asked []string
	bad := func(run index.Run) (*bundle.Verified, error) {
		asked = append(asked, run.ID)
		if run.ID == "s1" {
			return nil, &bundle.Error{Kind: bundle.ErrDigest, File: "results.json"}
		}
		return signed[run.ID], nil
	}
	got := gate.ConfirmAll(req, d, bad)
	if got.Pass || got.Refusals[0].Code != gate.BadSignature || !strings.Contains(got.Reason(), "bundle of run s1 at /ev/s1 does not verify") {
		t.Fatalf("one shard does not verify: %s", got.Reason())
	}
	if fmt.Sprint(asked) != "[s2 s1]" {
		t.Errorf("verified %v, want every deciding run", asked)
	}
	// A shard's signed results FAIL where its index row said PASS.
	signed["s2"].Results = failed(signed["s2"].Results)
	if got := gate.ConfirmAll(req, d, ok); got.Pass || got.Refusals[0].Code != gate.GateFail {
		t.Fatalf("edited index row: %s", got.Reason())
	}
}
