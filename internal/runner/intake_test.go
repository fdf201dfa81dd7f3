package runner_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/lab/intake"
	"github.com/gatehouse-dev/gatehouse/internal/lab/intake/contract"
	"github.com/gatehouse-dev/gatehouse/internal/runner"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Sleep(_ context.Context, d time.Duration) error {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
	return nil
}

// The intake gate writes its run folder through the runner, as a run
// does: the verdicts the checks made, the contract as the policy with a
// digest verify recomputes, every trace there, and run.json complete.
func TestIntakeWritesARunFolder(t *testing.T) {
	clk := &clock{t: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	m, err := intake.NewMinter(intake.MinterOptions{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := intake.New(intake.Options{Key: m.PublicKey(), Now: clk.Now, Broken: intake.AcceptsOtherReport})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(svc)
	t.Cleanup(srv.Close)
	policy := []byte("# the contract\n")
	begun := ""
	res, err := runner.Intake(context.Background(), runner.IntakeSpec{Out: t.TempDir(), Target: "reference", Contract: policy,
		Options: contract.Options{BaseURL: srv.URL, Contract: contract.Reference(), Mint: contract.MinterMint(m), Sleep: clk.Sleep},
		Begin:   func(rec *evidence.Run) { begun = rec.ID }})
	if err != nil {
		t.Fatal(err)
	}
	dir, err := runner.Seal(context.Background(), res.Folder, nil)
	if err != nil {
		t.Fatal(err)
	}
	var rec evidence.Run
	var results []evidence.Result
	for name, v := range map[string]any{"run.json": &rec, "results.json": &results} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatal(err)
		}
	}
	if !rec.Complete || rec.ID != begun || rec.Target != "intake" || rec.PolicyDigest != evidence.PolicyDigest(map[string]string{"intake.yaml": evidence.SHA256(policy)}) {
		t.Errorf("run.json %+v (begun %q)", rec, begun)
	}
	if len(results) != len(contract.Checks) {
		t.Fatalf("%d results, want %d", len(results), len(contract.Checks))
	}
	fails := 0
	for _, r := range results {
		if r.Verdict == evidence.Fail {
			fails++
			if len(r.Findings) == 0 {
				t.Errorf("%s FAILed with no exchange to prove it", r.Scenario)
			}
		}
	}
	if fails == 0 {
		t.Error("a service that stores a result for another report passed every check")
	}
	for _, f := range []string{"policy/intake.yaml", "traces/intake-exchanges.jsonl", "traces/endpoint-hits.jsonl", "traces/probe-attempts.jsonl"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	if st, err := os.Stat(filepath.Join(dir, "traces/intake-exchanges.jsonl")); err == nil && st.Size() == 0 {
		t.Error("no exchange in the trace")
	}
}
