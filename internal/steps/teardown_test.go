package steps_test

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/features"
	"github.com/gatehouse-dev/gatehouse/internal/ledger"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
	"github.com/gatehouse-dev/gatehouse/internal/steps"
	"github.com/gatehouse-dev/gatehouse/internal/steps/steptest"
	"github.com/gatehouse-dev/gatehouse/targets/fake"
)

// leaving is a fake sandbox whose teardown leaves something: with a
// lister, the processes still listed after the reap (none: nil); without
// one, a stop that fails with stopErr (nil: a clean stop).
func leaving(deliver func(wire.Step) bool, lister bool, left []int, stopErr error) *fake.Target {
	tgt := &fake.Target{Lab: &steptest.Lab{}, Deliver: deliver}
	if lister {
		tgt.ProcessesFunc = func(context.Context, *fake.Session) ([]int, error) { return left, nil }
	}
	if stopErr != nil {
		tgt.StopFunc = func(context.Context, *fake.Session) error { return stopErr }
	}
	return tgt
}

func TestTeardownFindingsReachTheResult(t *testing.T) {
	tests := []struct {
		name    string
		tgt     *fake.Target
		want    evidence.Verdict
		finding string
	}{
		{"clean teardown keeps the pass", leaving(onlyControl, true, nil, nil), evidence.Pass, ""},
		{"processes left after the reap make a pass inconclusive",
			leaving(onlyControl, true, []int{4242}, nil), evidence.Inconclusive, "process(es) still running after the reap"},
		{"a fail stands whatever the teardown left",
			leaving(func(wire.Step) bool { return true }, true, []int{4242}, nil), evidence.Fail, "process(es) still running after the reap"},
		{"a failed stop nothing can check makes a pass inconclusive",
			leaving(onlyControl, false, nil, errors.New("runtime wedged")), evidence.Inconclusive, "teardown: stop failed: runtime wedged"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := steps.Run(context.Background(), steps.Config{
				Target: tt.tgt, Network: steps.NetLab, Lab: labOf(tt.tgt), ProbePath: "/bin/true",
				Features: features.FS, Gates: []string{"external-callback"}, Settle: 1,
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Results) != 2 {
				t.Fatalf("want 2 results, got %d", len(out.Results))
			}
			for _, r := range out.Results {
				if r.Verdict != tt.want {
					t.Errorf("%s: %s (%s), want %s", r.Path, r.Verdict, r.Reason, tt.want)
				}
				if tt.finding == "" {
					if hasFinding(r.Findings, "teardown:") {
						t.Errorf("%s: teardown finding on a clean teardown: %q", r.Path, r.Findings)
					}
					continue
				}
				if !hasFinding(r.Findings, tt.finding) {
					t.Errorf("%s: findings %q lack %q", r.Path, r.Findings, tt.finding)
				}
				if tt.want == evidence.Inconclusive && !strings.Contains(r.Reason, "teardown left something behind") {
					t.Errorf("%s: reason does not say why: %s", r.Path, r.Reason)
				}
			}
			// What was left stays on the ledger for the sweep; the places
			// folder the teardown did remove does not (CI left 8 such
			// entries of this test binary's).
			for _, what := range goneOnLedger(t, "gatehouse-places-") {
				t.Errorf("the ledger still names the removed %s", what)
			}
		})
	}
}

func hasFinding(fs []string, sub string) bool {
	for _, f := range fs {
		if strings.Contains(f, sub) {
			return true
		}
	}
	return false
}

// goneOnLedger are the paths this process's ledger names, under a folder
// whose name starts with prefix, that no longer exist.
func goneOnLedger(t *testing.T, prefix string) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(ledger.Root, strconv.Itoa(os.Getpid())+"-*", "*.json"))
	var out []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // released meanwhile
		}
		var e ledger.Entry
		if err := json.Unmarshal(b, &e); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if e.Kind != ledger.Path || !strings.HasPrefix(filepath.Base(e.What), prefix) {
			continue
		}
		if _, err := os.Lstat(e.What); errors.Is(err, fs.ErrNotExist) {
			out = append(out, e.What)
		}
	}
	return out
}
