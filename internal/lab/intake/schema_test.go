package intake_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/lab/intake"
)

func body(t *testing.T, mod func(m map[string]any)) []byte {
	t.Helper()
	m := map[string]any{"report_id": "p1", "run_id": "r1", "tenant_id": "t1", "severity": "high",
		"summary": "s", "findings": []string{"f"}, "reproduction": "steps"}
	if mod != nil {
		mod(m)
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseResult(t *testing.T) {
	many := make([]string, intake.MaxFindings+1)
	for i := range many {
		many[i] = "x"
	}
	for _, tc := range []struct {
		name  string
		mod   func(map[string]any)
		field string // "" means valid
	}{
		{"valid", nil, ""},
		{"valid at every limit", func(m map[string]any) {
			m["summary"] = strings.Repeat("s", intake.MaxSummary)
			m["findings"] = many[1:]
			m["reproduction"] = strings.Repeat("r", intake.MaxReproduction)
		}, ""},
		{"extra field", func(m map[string]any) { m["callback_url"] = "http://x" }, "callback_url"},
		{"summary too long", func(m map[string]any) { m["summary"] = strings.Repeat("s", intake.MaxSummary+1) }, "summary"},
		{"summary missing", func(m map[string]any) { delete(m, "summary") }, "summary"},
		{"too many findings", func(m map[string]any) { m["findings"] = many }, "findings"},
		{"finding too long", func(m map[string]any) { m["findings"] = []string{strings.Repeat("f", intake.MaxFinding+1)} }, "findings[0]"},
		{"findings not strings", func(m map[string]any) { m["findings"] = []int{1} }, "findings"},
		{"reproduction too long", func(m map[string]any) { m["reproduction"] = strings.Repeat("r", intake.MaxReproduction+1) }, "reproduction"},
		{"severity not in enum", func(m map[string]any) { m["severity"] = "urgent" }, "severity"},
		{"severity a number", func(m map[string]any) { m["severity"] = 3 }, "severity"},
		{"report missing", func(m map[string]any) { delete(m, "report_id") }, "report_id"},
		{"tenant null", func(m map[string]any) { m["tenant_id"] = nil }, "tenant_id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := intake.ParseResult(body(t, tc.mod), false)
			var se *intake.SchemaError
			switch {
			case tc.field == "" && err != nil:
				t.Fatalf("refused a valid result: %v", err)
			case tc.field != "" && (!errors.As(err, &se) || se.Field != tc.field || !errors.Is(err, intake.ErrSchema)):
				t.Fatalf("err %v, want a schema error on %s", err, tc.field)
			}
		})
	}
	for _, b := range []string{"", "[]", "null", "{", `"x"`} {
		if _, _, err := intake.ParseResult([]byte(b), false); !errors.Is(err, intake.ErrSchema) {
			t.Errorf("%q: err %v, want a schema error", b, err)
		}
	}
}
