package wire_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// What a report says it wrote is held to the caps: writing kinds only,
// absolute clean paths, MaxWrote of them, MaxWroteBytes together.
func TestDecodeWrote(t *testing.T) {
	plan := wire.Plan{Steps: []wire.Step{
		{ID: "s", Kind: wire.KindStash, Target: "~/.gatehouse-state"},
		{ID: "h", Kind: wire.KindHTTP, Target: "http://203.0.113.10/"},
	}}
	rep := func(id, kind, target string, wrote ...string) string {
		r := wire.Report{ID: id, Kind: kind, Target: target, Outcome: wire.OutcomeCompleted,
			Start: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Wrote: wrote}
		return reportLine(t, r)
	}
	many := make([]string, wire.MaxWrote+1)
	for i := range many {
		many[i] = fmt.Sprintf("/tmp/%d", i)
	}
	long := []string{"/" + strings.Repeat("a", wire.MaxWroteBytes/2), "/" + strings.Repeat("b", wire.MaxWroteBytes/2)}
	tests := []struct {
		name string
		line string
		ok   bool
	}{
		{"a stash names its file", rep("s", wire.KindStash, "~/.gatehouse-state", "/home/agent/.gatehouse-state"), true},
		{"an http attempt names none", rep("h", wire.KindHTTP, "http://203.0.113.10/", "/etc/passwd"), false},
		{"relative", rep("s", wire.KindStash, "~/.gatehouse-state", "etc/passwd"), false},
		{"unclean", rep("s", wire.KindStash, "~/.gatehouse-state", "/tmp/../etc/passwd"), false},
		{"too many", rep("s", wire.KindStash, "~/.gatehouse-state", many...), false},
		{"too long together", rep("s", wire.KindStash, "~/.gatehouse-state", long...), false},
		{"an http attempt names no folder made", madeRep(t, "h", wire.KindHTTP, "http://203.0.113.10/", "/tmp"), false},
		{"a stash names the folders it made", madeRep(t, "s", wire.KindStash, "~/.gatehouse-state", "/home/agent/.cache"), true},
		{"a folder made, relative", madeRep(t, "s", wire.KindStash, "~/.gatehouse-state", "home"), false},
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

// With every field at its cap and every byte escaped, a writing
// attempt's report still fits Decode's line limit.
func TestWroteReportLineFitsTheLineLimit(t *testing.T) {
	r := wire.Report{ID: "s", Kind: wire.KindSend, Outcome: wire.OutcomeCompleted, Start: time.Now()}
	r.Target = strings.Repeat("\x01", 4096)
	r.Excerpt = strings.Repeat("\x01", wire.MaxExcerptLen)
	r.Error = strings.Repeat("\x01", wire.MaxErrorLen)
	per := wire.MaxWroteBytes / wire.MaxWrote
	for range wire.MaxWrote {
		r.Wrote = append(r.Wrote, "/"+strings.Repeat("\x01", per-1))
	}
	if n, max := len(reportLine(t, r)), wire.DefaultLimits().MaxLine; n >= max {
		t.Errorf("worst report line is %d bytes, the limit is %d", n, max)
	}
}

func madeRep(t *testing.T, id, kind, target string, made ...string) string {
	r := wire.Report{ID: id, Kind: kind, Target: target, Outcome: wire.OutcomeCompleted,
		Start: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Made: made}
	return reportLine(t, r)
}
