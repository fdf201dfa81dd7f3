package wire_test

import (
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// Searches and host checks carry a list of findings: a larger excerpt cap
// than other kinds, and the "partial" outcome.
func TestDecodeFindingsReports(t *testing.T) {
	plan := wire.Plan{Steps: []wire.Step{
		{ID: "f", Kind: wire.KindFind, Target: "@mounts"},
		{ID: "h", Kind: wire.KindHunt, Target: "env"},
		{ID: "c", Kind: wire.KindHostCheck, Target: "mounts"},
		{ID: "n", Kind: wire.KindHTTP, Target: "http://203.0.113.10/"},
	}}
	rep := func(id, kind, target, outcome string, excerpt int) string {
		r := goodReport(id)
		r.Kind, r.Target, r.Outcome, r.Excerpt = kind, target, outcome, strings.Repeat("x", excerpt)
		return reportLine(t, r)
	}
	tests := []struct {
		name string
		line string
		ok   bool
	}{
		{"find at the findings cap", rep("f", wire.KindFind, "@mounts", wire.OutcomeCompleted, wire.MaxFindingsLen), true},
		{"find over the findings cap", rep("f", wire.KindFind, "@mounts", wire.OutcomeCompleted, wire.MaxFindingsLen+1), false},
		{"partial hunt", rep("h", wire.KindHunt, "env", wire.OutcomePartial, 10), true},
		{"host check at the findings cap", rep("c", wire.KindHostCheck, "mounts", wire.OutcomePartial, wire.MaxFindingsLen), true},
		{"http keeps the small cap", rep("n", wire.KindHTTP, "http://203.0.113.10/", wire.OutcomeCompleted, wire.MaxExcerptLen+1), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reps, problems, err := wire.Decode(strings.NewReader(tt.line), plan, wire.DefaultLimits())
			if err != nil || (len(reps) == 1) != tt.ok {
				t.Errorf("accepted %d reports, problems %q, err %v; want accepted=%v", len(reps), problems, err, tt.ok)
			}
		})
	}
}

// The caps keep the worst report line (every byte of target, excerpt and
// error escaped as \u00XX) under Decode's line limit.
func TestFindingsReportLineFitsTheLineLimit(t *testing.T) {
	r := goodReport("f")
	r.Kind, r.Outcome = wire.KindFind, wire.OutcomePartial
	r.Target = strings.Repeat("\x01", 4096)
	r.Excerpt = strings.Repeat("\x01", wire.MaxFindingsLen)
	r.Error = strings.Repeat("\x01", wire.MaxErrorLen)
	if n, max := len(reportLine(t, r)), wire.DefaultLimits().MaxLine; n >= max {
		t.Errorf("worst report line is %d bytes, the limit is %d", n, max)
	}
}
