package wire_test

import (
	"bytes"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// FuzzDecode feeds arbitrary probe output to Decode with small limits, so
// the limits themselves are exercised. Seeds live in testdata/fuzz/FuzzDecode.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(reportLine(f, goodReport("a")) + reportLine(f, goodReport("b"))))
	lim := wire.Limits{MaxBytes: 2048, MaxLine: 400, MaxReports: 1}
	f.Fuzz(func(t *testing.T, data []byte) {
		reps, problems, err := wire.Decode(bytes.NewReader(data), decodePlan, lim)
		if err != nil {
			t.Fatalf("Decode failed on in-memory input: %v", err)
		}
		if len(reps) > lim.MaxReports {
			t.Fatalf("%d reports, limit %d", len(reps), lim.MaxReports)
		}
		if len(problems) > 101 {
			t.Fatalf("%d problems", len(problems))
		}
		for _, p := range problems {
			if len(p) > 400 {
				t.Fatalf("problem of %d bytes", len(p))
			}
		}
		seen := map[string]bool{}
		for _, r := range reps {
			if r.ID != "a" && r.ID != "b" || seen[r.ID] {
				t.Fatalf("report id %q accepted (seen %v)", r.ID, seen)
			}
			seen[r.ID] = true
			if len(r.Excerpt) > wire.MaxExcerptLen || len(r.Error) > wire.MaxErrorLen {
				t.Fatalf("field over cap: excerpt %d, error %d", len(r.Excerpt), len(r.Error))
			}
		}
		if len(data) == 0 && (len(reps) != 0 || len(problems) != 0) {
			t.Fatalf("empty input gave %v %v", reps, problems)
		}
	})
}
