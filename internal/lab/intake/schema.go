package intake

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"unicode/utf8"
)

// Limits of the result schema. A result is bounded in every dimension, so
// that what an agent sends back cannot carry more than a triage result.
const (
	MaxSummary      = 4 << 10  // bytes of summary
	MaxFindings     = 50       // items in findings
	MaxFinding      = 1 << 10  // bytes of one finding
	MaxReproduction = 8 << 10  // bytes of reproduction
	MaxIDLen        = 128      // bytes of report_id, run_id, tenant_id
	MaxResultBody   = 64 << 10 // bytes of a whole result request
	MaxEvidenceBody = 64 << 10 // bytes of one evidence attachment
	MaxEvidenceName = 128      // bytes of an attachment's name
	// MaxAttachments and MaxAttachmentBytes bound what one report holds:
	// one more attachment is refused with 409, one that would pass the
	// bytes with 413. A triage result needs a few small files; a flood of
	// 64 KiB bodies must not grow the service (or the evidence) without
	// bound.
	MaxAttachments     = 32
	MaxAttachmentBytes = 1 << 20
)

// Severities are the values severity may take.
var Severities = []string{"none", "low", "medium", "high", "critical"}

// Result is a triage result as the schema allows it. The identifying
// fields must equal the token's claims: the service does not take a run,
// report or tenant from anywhere but the token, and refuses a result that
// says otherwise.
type Result struct {
	ReportID     string   `json:"report_id"`
	RunID        string   `json:"run_id"`
	TenantID     string   `json:"tenant_id"`
	Severity     string   `json:"severity"`
	Summary      string   `json:"summary"`
	Findings     []string `json:"findings,omitempty"`
	Reproduction string   `json:"reproduction,omitempty"`
}

// ErrSchema wraps every schema refusal; SchemaError says which field.
var ErrSchema = errors.New("intake: result does not fit the schema")

// SchemaError names the field that broke the schema and why.
type SchemaError struct {
	Field  string
	Reason string
}

func (e *SchemaError) Error() string {
	return fmt.Sprintf("intake: result field %q: %s", e.Field, e.Reason)
}

func (e *SchemaError) Unwrap() error { return ErrSchema }

// resultFields are the top-level fields the schema knows.
var resultFields = map[string]bool{"report_id": true, "run_id": true, "tenant_id": true,
	"severity": true, "summary": true, "findings": true, "reproduction": true}

// ParseResult decodes and checks a result. Unknown fields are refused
// (the contract: rejected, never stripped); when allowExtra is set (the
// broken variant), they are returned in extra instead.
func ParseResult(body []byte, allowExtra bool) (r Result, extra map[string]json.RawMessage, err error) {
	if len(body) > MaxResultBody {
		return Result{}, nil, &SchemaError{"", fmt.Sprintf("body larger than %d bytes", MaxResultBody)}
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil || raw == nil {
		return Result{}, nil, &SchemaError{"", "not a JSON object"}
	}
	var unknown []string
	for k, v := range raw {
		if !resultFields[k] {
			unknown = append(unknown, k)
			if extra == nil {
				extra = map[string]json.RawMessage{}
			}
			extra[k] = v
		}
	}
	if len(unknown) > 0 && !allowExtra {
		sort.Strings(unknown)
		return Result{}, nil, &SchemaError{unknown[0], "not in the schema (extra fields are rejected)"}
	}
	if err := decodeKnown(raw, &r); err != nil {
		return Result{}, nil, err
	}
	if err := r.Check(); err != nil {
		return Result{}, nil, err
	}
	return r, extra, nil
}

// decodeKnown decodes each known field by itself, so that a wrong type is
// named by field.
func decodeKnown(raw map[string]json.RawMessage, r *Result) error {
	str := map[string]*string{"report_id": &r.ReportID, "run_id": &r.RunID, "tenant_id": &r.TenantID,
		"severity": &r.Severity, "summary": &r.Summary, "reproduction": &r.Reproduction}
	for k, p := range str {
		if v, ok := raw[k]; ok {
			if err := strict(v, p); err != nil {
				return &SchemaError{k, "must be a string"}
			}
		}
	}
	if v, ok := raw["findings"]; ok {
		if err := strict(v, &r.Findings); err != nil {
			return &SchemaError{"findings", "must be an array of strings"}
		}
	}
	return nil
}

func strict(b json.RawMessage, v any) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		return errors.New("null")
	}
	return json.Unmarshal(b, v)
}

// Check applies the schema's required fields, enums and sizes.
func (r Result) Check() error {
	for _, f := range []struct{ name, v string }{{"report_id", r.ReportID}, {"run_id", r.RunID}, {"tenant_id", r.TenantID}} {
		if f.v == "" {
			return &SchemaError{f.name, "required"}
		}
		if len(f.v) > MaxIDLen {
			return &SchemaError{f.name, fmt.Sprintf("longer than %d bytes", MaxIDLen)}
		}
	}
	if !oneOf(r.Severity, Severities) {
		return &SchemaError{"severity", fmt.Sprintf("must be one of %v", Severities)}
	}
	if r.Summary == "" {
		return &SchemaError{"summary", "required"}
	}
	if err := bounded("summary", r.Summary, MaxSummary); err != nil {
		return err
	}
	if len(r.Findings) > MaxFindings {
		return &SchemaError{"findings", fmt.Sprintf("more than %d items", MaxFindings)}
	}
	for i, f := range r.Findings {
		if err := bounded(fmt.Sprintf("findings[%d]", i), f, MaxFinding); err != nil {
			return err
		}
	}
	return bounded("reproduction", r.Reproduction, MaxReproduction)
}

func bounded(field, v string, max int) error {
	if len(v) > max {
		return &SchemaError{field, fmt.Sprintf("longer than %d bytes", max)}
	}
	if !utf8.ValidString(v) {
		return &SchemaError{field, "not valid UTF-8"}
	}
	return nil
}

func oneOf(v string, list []string) bool {
	for _, s := range list {
		if v == s {
			return true
		}
	}
	return false
}
