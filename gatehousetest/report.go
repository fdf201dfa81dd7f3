package gatehousetest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/targets"
)

// paths are the two paths every gate is tried on.
var paths = []string{string(targets.PathNormal), string(targets.PathBreach)}

// maxHits bounds the proving hits quoted per failure; the trace has all.
const maxHits = 6

// report makes gate/path subtests of t from the results. A gate and path
// the run gave no verdict for fails: nothing proven is never a pass.
func report(t *testing.T, gates []string, results []evidence.Result, inconclusiveSkips bool, dir string) {
	t.Helper()
	byKey := map[string][]evidence.Result{}
	for _, r := range results {
		byKey[r.Gate+"/"+r.Path] = append(byKey[r.Gate+"/"+r.Path], r)
	}
	for _, g := range gates {
		t.Run(g, func(t *testing.T) {
			for _, p := range paths {
				rs := byKey[g+"/"+p]
				t.Run(p, func(t *testing.T) {
					if len(rs) == 0 {
						t.Fatalf("no verdict for %s on the %s path (run folder %s)", g, p, dir)
					}
					for _, r := range rs {
						judge(t, r, inconclusiveSkips)
					}
				})
			}
		})
	}
}

// judge turns one verdict into the subtest's outcome.
func judge(t *testing.T, r evidence.Result, inconclusiveSkips bool) {
	t.Helper()
	reason := evidence.Redact(r.Reason)
	switch r.Verdict {
	case evidence.Pass:
		t.Logf("PASS: %s", reason)
	case evidence.Fail:
		t.Errorf("FAIL (%s, session %s): %s%s", r.Scenario, r.Session, reason, hits(r))
	case evidence.Inconclusive:
		if inconclusiveSkips {
			t.Skipf("INCONCLUSIVE (%s): %s", r.Scenario, reason)
		}
		t.Errorf("INCONCLUSIVE (%s): %s", r.Scenario, reason)
	default:
		t.Errorf("unknown verdict %q (%s): %s", r.Verdict, r.Scenario, reason)
	}
}

// hits is the proving evidence of a FAIL, one line each, canaries redacted.
func hits(r evidence.Result) string {
	var b strings.Builder
	for i, h := range r.Hits {
		if i == maxHits {
			fmt.Fprintf(&b, "\n\t… %d more in %s", len(r.Hits)-i, evidence.HitsTrace)
			break
		}
		fmt.Fprintf(&b, "\n\thit: %s got %s from %s: %s", h.Endpoint, h.Proto, h.Src, evidence.Redact(h.Summary))
	}
	for _, c := range r.Crossings {
		fmt.Fprintf(&b, "\n\tcrossing: session %s's value seen by session %s (%s at %s)", c.Owner, c.SeenBy, c.Attempt, evidence.Redact(c.Where))
	}
	for i, f := range r.Findings {
		if i == maxHits {
			fmt.Fprintf(&b, "\n\t… %d more findings in results.json", len(r.Findings)-i)
			break
		}
		fmt.Fprintf(&b, "\n\tfinding: %s", evidence.Redact(f))
	}
	return b.String()
}
