// Package contract holds a results-intake service to the intake contract
// (docs/intake.md): a Contract maps the abstract operations and result
// fields to a service's own routes and names, and Run makes the checks
// against a live service, each a named verdict with the requests and
// responses that proved it. The reference service (internal/lab/intake) passes
// every check; each of its broken variants fails exactly one.
package contract

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gatehouse-dev/gatehouse/internal/lab/intake"
)

// Operation is one abstract operation as a service spells it: a method and
// a path template. Templates may use {tenant}, {run}, {report} and (for
// attach-evidence) {name}, which are filled in path-escaped; a query
// string is allowed.
type Operation struct {
	Method string `yaml:"method" json:"method"`
	Path   string `yaml:"path" json:"path"`
}

// Fields names the result's fields in the service's JSON. Report, Run and
// Tenant may be empty when the service takes them only from the path or
// the token; Severity and Summary are required.
type Fields struct {
	Report       string `yaml:"report" json:"report"`
	Run          string `yaml:"run" json:"run"`
	Tenant       string `yaml:"tenant" json:"tenant"`
	Severity     string `yaml:"severity" json:"severity"`
	Summary      string `yaml:"summary" json:"summary"`
	Findings     string `yaml:"findings" json:"findings"`
	Reproduction string `yaml:"reproduction" json:"reproduction"`
}

// Contract is what a contract file says. ExtraFields is "reject" (the
// default: an extra field makes the write fail, and nothing is stored) or
// "strip" (the write may succeed, the extra field is never stored).
type Contract struct {
	Operations  map[string]Operation `yaml:"operations" json:"operations"`
	Fields      Fields               `yaml:"fields" json:"fields"`
	ExtraFields string               `yaml:"extra_fields" json:"extra_fields"`
	// SummaryMax is the largest summary the service accepts, in bytes; the
	// oversize check sends one byte more.
	SummaryMax int `yaml:"summary_max" json:"summary_max"`
	// Severity is a severity value the service accepts (default "low").
	Severity string `yaml:"severity_value" json:"severity_value"`
}

// Ops are the abstract operations, in the order a contract lists them.
var Ops = []string{intake.OpRead, intake.OpAttach, intake.OpSubmit, intake.OpFinalise}

// Reference is the reference service's own contract.
func Reference() Contract {
	return Contract{
		Operations: map[string]Operation{
			intake.OpRead:     {http.MethodGet, intake.PathReport},
			intake.OpAttach:   {http.MethodPost, intake.PathEvidence + "?name={name}"},
			intake.OpSubmit:   {http.MethodPut, intake.PathResult},
			intake.OpFinalise: {http.MethodPost, intake.PathFinalise},
		},
		Fields: Fields{Report: "report_id", Run: "run_id", Tenant: "tenant_id", Severity: "severity",
			Summary: "summary", Findings: "findings", Reproduction: "reproduction"},
		ExtraFields: "reject",
		SummaryMax:  intake.MaxSummary,
		Severity:    "low",
	}
}

// ErrContract wraps every problem with a contract file.
var ErrContract = errors.New("contract: invalid")

// Load reads a contract file (YAML). Unknown keys are refused, so a typo
// cannot silently leave an operation to its default.
func Load(path string) (Contract, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Contract{}, fmt.Errorf("contract: %w", err)
	}
	return Parse(b)
}

// Parse reads a contract from YAML bytes and validates it.
func Parse(b []byte) (Contract, error) {
	var c Contract
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		return Contract{}, fmt.Errorf("%w: %v", ErrContract, err)
	}
	if c.ExtraFields == "" {
		c.ExtraFields = "reject"
	}
	if c.Severity == "" {
		c.Severity = "low"
	}
	return c, c.Validate()
}

// Validate checks that every operation is mapped and the required fields
// are named.
func (c Contract) Validate() error {
	for _, op := range Ops {
		o, ok := c.Operations[op]
		if !ok || o.Method == "" || !strings.HasPrefix(o.Path, "/") {
			return fmt.Errorf("%w: operation %s needs a method and a path starting with /", ErrContract, op)
		}
	}
	for op := range c.Operations {
		if !contains(Ops, op) {
			return fmt.Errorf("%w: unknown operation %q (known: %s)", ErrContract, op, strings.Join(Ops, ", "))
		}
	}
	if c.Fields.Severity == "" || c.Fields.Summary == "" {
		return fmt.Errorf("%w: fields.severity and fields.summary are required", ErrContract)
	}
	if c.ExtraFields != "reject" && c.ExtraFields != "strip" {
		return fmt.Errorf("%w: extra_fields is %q, want reject or strip", ErrContract, c.ExtraFields)
	}
	if c.SummaryMax <= 0 {
		return fmt.Errorf("%w: summary_max must be a positive number of bytes", ErrContract)
	}
	return nil
}

// names reports whether the contract can aim a request at another value of
// key ("tenant", "run", "report"): the path or the result names it.
func (c Contract) names(key string) bool {
	field := map[string]string{"tenant": c.Fields.Tenant, "run": c.Fields.Run, "report": c.Fields.Report}[key]
	return field != "" || strings.Contains(c.Operations[intake.OpSubmit].Path, "{"+key+"}")
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
