package probe_test

import (
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/probe"
)

// Searches and host checks carry a list of findings: a larger excerpt cap
// than other kinds, and the "partial" outcome.
func TestDecodeFindingsReports(t *testing.T) {
	plan := probe.Plan{Steps: []probe.Step{
		{ID: "f", Kind: probe.KindFind, Target: "@mounts"},
		{ID: "h", Kind: probe.KindHunt, Target: "env"},
		{ID: "c", Kind: probe.KindHostCheck, Target: "mounts"},
		{ID: "n", Kind: probe.KindHTTP, Target: "http://203.0.113.10/"},
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
		{"find at the findings cap", rep("f", probe.KindFind, "@mounts", probe.OutcomeCompleted, probe.MaxFindingsLen), true},
		{"find over the findings cap", rep("f", probe.KindFind, "@mounts", probe.OutcomeCompleted, probe.MaxFindingsLen+1), false},
		{"partial hunt", rep("h", probe.KindHunt, "env", probe.OutcomePartial, 10), true},
		{"host check at the findings cap", rep("c", probe.KindHostCheck, "mounts", probe.OutcomePartial, probe.MaxFindingsLen), true},
		{"http keeps the small cap", rep("n", probe.KindHTTP, "http://203.0.113.10/", probe.OutcomeCompleted, probe.MaxExcerptLen+1), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reps, problems, err := probe.Decode(strings.NewReader(tt.line), plan, probe.DefaultLimits())
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
	r.Kind, r.Outcome = probe.KindFind, probe.OutcomePartial
	r.Target = strings.Repeat("\x01", 4096)
	r.Excerpt = strings.Repeat("\x01", probe.MaxFindingsLen)
	r.Error = strings.Repeat("\x01", probe.MaxErrorLen)
	if n, max := len(reportLine(t, r)), probe.DefaultLimits().MaxLine; n >= max {
		t.Errorf("worst report line is %d bytes, the limit is %d", n, max)
	}
}

// The mounts check lists the root's device:inode for the harness.
func TestHostCheckMountsListsDeviceAndInode(t *testing.T) {
	reps := runPlan(t, 3000, probe.Step{ID: "m", Kind: probe.KindHostCheck, Target: "mounts"})
	root, err := probe.StatID("/")
	if err != nil {
		t.Fatal(err)
	}
	r := reps["m"]
	if r.Outcome != probe.OutcomeCompleted && r.Outcome != probe.OutcomePartial {
		t.Fatalf("mounts: %s (%s)", r.Outcome, r.Error)
	}
	if !strings.HasPrefix(r.Excerpt, "ok: ") || !strings.Contains(r.Excerpt, "\nmnt "+root.String()+" /\n") {
		t.Errorf("mounts excerpt lacks the ok line or the root's line %q: %q", root, r.Excerpt)
	}
}
