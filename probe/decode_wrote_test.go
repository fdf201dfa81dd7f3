package probe_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/probe"
)

// What a report says it wrote is held to the caps: writing kinds only,
// absolute clean paths, MaxWrote of them, MaxWroteBytes together.
func TestDecodeWrote(t *testing.T) {
	plan := probe.Plan{Steps: []probe.Step{
		{ID: "s", Kind: probe.KindStash, Target: "~/.gatehouse-state"},
		{ID: "h", Kind: probe.KindHTTP, Target: "http://203.0.113.10/"},
	}}
	rep := func(id, kind, target string, wrote ...string) string {
		r := probe.Report{ID: id, Kind: kind, Target: target, Outcome: probe.OutcomeCompleted,
			Start: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Wrote: wrote}
		return reportLine(t, r)
	}
	many := make([]string, probe.MaxWrote+1)
	for i := range many {
		many[i] = fmt.Sprintf("/tmp/%d", i)
	}
	long := []string{"/" + strings.Repeat("a", probe.MaxWroteBytes/2), "/" + strings.Repeat("b", probe.MaxWroteBytes/2)}
	tests := []struct {
		name string
		line string
		ok   bool
	}{
		{"a stash names its file", rep("s", probe.KindStash, "~/.gatehouse-state", "/home/agent/.gatehouse-state"), true},
		{"an http attempt names none", rep("h", probe.KindHTTP, "http://203.0.113.10/", "/etc/passwd"), false},
		{"relative", rep("s", probe.KindStash, "~/.gatehouse-state", "etc/passwd"), false},
		{"unclean", rep("s", probe.KindStash, "~/.gatehouse-state", "/tmp/../etc/passwd"), false},
		{"too many", rep("s", probe.KindStash, "~/.gatehouse-state", many...), false},
		{"too long together", rep("s", probe.KindStash, "~/.gatehouse-state", long...), false},
		{"an http attempt names no folder made", madeRep(t, "h", probe.KindHTTP, "http://203.0.113.10/", "/tmp"), false},
		{"a stash names the folders it made", madeRep(t, "s", probe.KindStash, "~/.gatehouse-state", "/home/agent/.cache"), true},
		{"a folder made, relative", madeRep(t, "s", probe.KindStash, "~/.gatehouse-state", "home"), false},
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

// With every field at its cap and every byte escaped, a writing
// attempt's report still fits Decode's line limit.
func TestWroteReportLineFitsTheLineLimit(t *testing.T) {
	r := probe.Report{ID: "s", Kind: probe.KindSend, Outcome: probe.OutcomeCompleted, Start: time.Now()}
	r.Target = strings.Repeat("\x01", 4096)
	r.Excerpt = strings.Repeat("\x01", probe.MaxExcerptLen)
	r.Error = strings.Repeat("\x01", probe.MaxErrorLen)
	per := probe.MaxWroteBytes / probe.MaxWrote
	for range probe.MaxWrote {
		r.Wrote = append(r.Wrote, "/"+strings.Repeat("\x01", per-1))
	}
	if n, max := len(reportLine(t, r)), probe.DefaultLimits().MaxLine; n >= max {
		t.Errorf("worst report line is %d bytes, the limit is %d", n, max)
	}
}

func madeRep(t *testing.T, id, kind, target string, made ...string) string {
	r := probe.Report{ID: id, Kind: kind, Target: target, Outcome: probe.OutcomeCompleted,
		Start: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Made: made}
	return reportLine(t, r)
}
