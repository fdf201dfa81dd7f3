package wire_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

var decodePlan = wire.Plan{Steps: []wire.Step{
	{ID: "a", Kind: wire.KindHTTP, Target: "http://203.0.113.10/"},
	{ID: "b", Kind: wire.KindTCP, Target: "203.0.113.10:9"},
}}

func reportLine(t testing.TB, r wire.Report) string {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + "\n"
}

func goodReport(id string) wire.Report {
	r := wire.Report{ID: id, Outcome: wire.OutcomeCompleted, Start: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), DurationMS: 1.5}
	for _, s := range decodePlan.Steps {
		if s.ID == id {
			r.Kind, r.Target = s.Kind, s.Target
		}
	}
	return r
}

func TestDecode(t *testing.T) {
	a, b := reportLine(t, goodReport("a")), reportLine(t, goodReport("b"))
	lying := goodReport("b")
	lying.Outcome = wire.OutcomeDenied
	lying.Error = "blocked by policy"
	long := goodReport("a")
	long.Excerpt = strings.Repeat("x", wire.MaxExcerptLen+1)
	wrongKind := goodReport("a")
	wrongKind.Kind = wire.KindTCP
	badOutcome := goodReport("a")
	badOutcome.Outcome = "blocked"
	windowed := goodReport("a")
	windowed.ActiveFrom, windowed.ActiveTo = windowed.Start, windowed.Start.Add(time.Second)
	halfWindow := goodReport("a")
	halfWindow.ActiveFrom = halfWindow.Start
	backwards := goodReport("a")
	backwards.ActiveFrom, backwards.ActiveTo = backwards.Start.Add(time.Second), backwards.Start

	tests := []struct {
		name     string
		in       string
		lim      wire.Limits
		wantIDs  string // accepted report IDs, in order
		problems int
		contains string // a problem must contain this
	}{
		{name: "two good reports", in: a + b, wantIDs: "ab"},
		{name: "empty output", in: "", wantIDs: ""},
		{name: "blank lines and CRLF are tolerated", in: "\n" + strings.TrimSuffix(a, "\n") + "\r\n\n" + b, wantIDs: "ab"},
		{name: "last line without newline", in: a + strings.TrimSuffix(b, "\n"), wantIDs: "ab"},
		{name: "a lying blocked report is simply decoded", in: reportLine(t, lying), wantIDs: "b"},
		{name: "malformed json", in: `{"id":"a",` + "\n" + b, wantIDs: "b", problems: 1, contains: "line 1"},
		{name: "unknown field", in: strings.Replace(a, `{"id"`, `{"verdict":"pass","id"`, 1), problems: 1, contains: "unknown field"},
		{name: "differently cased key", in: strings.Replace(a, `"outcome"`, `"Outcome"`, 1), problems: 1, contains: "unknown field"},
		{name: "duplicate key", in: strings.Replace(a, `{"id":"a"`, `{"id":"b","id":"a"`, 1), problems: 1, contains: "duplicate field"},
		{name: "trailing data", in: strings.TrimSuffix(a, "\n") + "{}\n", problems: 1, contains: "trailing"},
		{name: "json array", in: "[1,2]\n", problems: 1, contains: "not a JSON object"},
		{name: "null", in: "null\n", problems: 1},
		{name: "unknown id", in: strings.Replace(a, `"id":"a"`, `"id":"zz"`, 1), problems: 1, contains: "not in the plan"},
		{name: "duplicate id keeps the first", in: a + reportLine(t, lying) + strings.Replace(b, `"outcome":"completed"`, `"outcome":"error"`, 1), wantIDs: "ab", problems: 1, contains: "duplicate report"},
		{name: "kind differs from plan", in: reportLine(t, wrongKind), problems: 1, contains: "kind"},
		{name: "unknown outcome", in: reportLine(t, badOutcome), problems: 1, contains: "unknown outcome"},
		{name: "an active window is decoded", in: reportLine(t, windowed), wantIDs: "a"},
		{name: "half an active window", in: reportLine(t, halfWindow), problems: 1, contains: "both ends"},
		{name: "an active window that ends before it starts", in: reportLine(t, backwards), problems: 1, contains: "ends before"},
		{name: "excerpt over cap", in: reportLine(t, long), problems: 1, contains: "excerpt"},
		{name: "wrong type", in: strings.Replace(a, `"duration_ms":1.5`, `"duration_ms":"1.5"`, 1), problems: 1, contains: "malformed report"},
		{name: "binary garbage", in: "\x00\xff\xfe\x7f{\x01}\n" + a, wantIDs: "a", problems: 1, contains: "UTF-8"},
		{name: "huge line", in: strings.Repeat("A", 300) + "\n" + a, lim: wire.Limits{MaxLine: 200}, wantIDs: "a", problems: 1, contains: "longer than 200"},
		{name: "huge line without newline", in: a + strings.Repeat("{", 5000), lim: wire.Limits{MaxLine: 1000}, wantIDs: "a", problems: 1, contains: "longer than"},
		{name: "huge total", in: a + b + strings.Repeat("\n", 10), lim: wire.Limits{MaxBytes: int64(len(a) + 5)}, wantIDs: "a", problems: 1, contains: "exceeds"},
		{name: "report cap", in: a + b, lim: wire.Limits{MaxReports: 1}, wantIDs: "a", problems: 1, contains: "more than 1 reports"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reps, problems, err := wire.Decode(strings.NewReader(tt.in), decodePlan, tt.lim)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			var ids strings.Builder
			for _, r := range reps {
				ids.WriteString(r.ID)
			}
			if ids.String() != tt.wantIDs {
				t.Errorf("accepted %q, want %q (problems %q)", ids.String(), tt.wantIDs, problems)
			}
			if len(problems) != tt.problems {
				t.Errorf("got %d problems %q, want %d", len(problems), problems, tt.problems)
			}
			if tt.contains != "" && !strings.Contains(strings.Join(problems, "|"), tt.contains) {
				t.Errorf("problems %q do not mention %q", problems, tt.contains)
			}
		})
	}
}

func TestDecodeLyingReportKeepsItsClaim(t *testing.T) {
	lying := goodReport("a")
	lying.Outcome, lying.Status = wire.OutcomeDenied, 403
	reps, _, err := wire.Decode(strings.NewReader(reportLine(t, lying)), decodePlan, wire.DefaultLimits())
	if err != nil || len(reps) != 1 {
		t.Fatalf("Decode = %v, %v", reps, err)
	}
	if reps[0].Outcome != wire.OutcomeDenied || reps[0].Status != 403 {
		t.Errorf("report changed in decoding: %+v", reps[0])
	}
}

func TestDecodeProblemsAreBounded(t *testing.T) {
	in := strings.Repeat("garbage\n", 1000)
	_, problems, err := wire.Decode(strings.NewReader(in), decodePlan, wire.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) > 101 || !strings.Contains(problems[len(problems)-1], "more problems") {
		t.Errorf("got %d problems, last %q", len(problems), problems[len(problems)-1])
	}
}

type failReader struct{ data *bytes.Reader }

func (f failReader) Read(p []byte) (int, error) {
	if f.data.Len() == 0 {
		return 0, errBoom
	}
	return f.data.Read(p)
}

var errBoom = errors.New("pipe broke")

func TestDecodeReadErrorKeepsReports(t *testing.T) {
	r := failReader{bytes.NewReader([]byte(reportLine(t, goodReport("a"))))}
	reps, _, err := wire.Decode(r, decodePlan, wire.DefaultLimits())
	if err == nil || len(reps) != 1 {
		t.Fatalf("Decode = %d reports, err %v; want 1 report and an error", len(reps), err)
	}
}

func TestCapWriter(t *testing.T) {
	w := wire.NewCapWriter(5)
	for _, s := range []string{"abc", "defg", "hij"} {
		if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	if got := string(w.Bytes()); got != "abcde" || !w.Truncated() || w.Dropped() != 5 {
		t.Errorf("kept %q truncated=%v dropped=%d", got, w.Truncated(), w.Dropped())
	}
	small := wire.NewCapWriter(10)
	_, _ = small.Write([]byte("ok"))
	if small.Truncated() || string(small.Bytes()) != "ok" {
		t.Errorf("small write: %q truncated=%v", small.Bytes(), small.Truncated())
	}
}
