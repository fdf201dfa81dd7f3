package profile

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/lab"
)

// Allow is what the allowed destination may receive (the `allow` field):
// one entry, or a list of them. A request there is inside when one entry
// permits it. Without it, what the allowed destination receives is a
// finding, never a FAIL: nothing says what the team meant.
type Allow []AllowEntry

// AllowEntry is one declaration. An absent list constrains nothing;
// max_body absent is any size.
type AllowEntry struct {
	Host    string   `yaml:"host"`
	Methods []string `yaml:"methods"`
	Paths   []string `yaml:"paths"`
	MaxBody *int64   `yaml:"max_body"`
	Ports   []int    `yaml:"ports"`
}

// The positive control the harness sends to the allowed destination: a
// declaration must permit it, or no scenario could PASS.
const (
	ControlMethod  = "POST"
	ControlPath    = "/v1/complete"
	ControlPort    = 80
	ControlMaxBody = 1024 // the control's body is smaller
)

// allowHosts are the names of the lab's one allowed destination.
var allowHosts = []string{lab.InferenceLabName, lab.InferenceName, lab.InferenceV4}

var (
	methodRE  = regexp.MustCompile(`^[A-Z]+$`)
	allowKeys = []string{"host", "methods", "paths", "max_body", "ports"}
)

// UnmarshalYAML takes one mapping or a list of them, each checked here
// (a custom decoder does not inherit the strict decoder's unknown-field
// check, so the keys are checked by hand).
func (a *Allow) UnmarshalYAML(v *yaml.Node) error {
	items := []*yaml.Node{v}
	if v.Kind == yaml.SequenceNode {
		items = v.Content
		if len(items) == 0 {
			return &Error{Line: v.Line, Field: "allow", Err: errors.New("an empty list declares nothing: remove it, or name what the allowed destination may receive")}
		}
	}
	out := Allow{}
	for i, n := range items {
		field := "allow"
		if v.Kind == yaml.SequenceNode {
			field = fmt.Sprintf("allow[%d]", i)
		}
		if n.Kind != yaml.MappingNode {
			return &Error{Line: n.Line, Field: field, Err: errors.New("want a mapping {host, methods, paths, max_body, ports}")}
		}
		for k := 0; k+1 < len(n.Content); k += 2 {
			if key := n.Content[k]; !slices.Contains(allowKeys, key.Value) {
				return &Error{Line: key.Line, Field: field + "." + key.Value, Err: fmt.Errorf("unknown field (known: %s)", strings.Join(allowKeys, ", "))}
			}
		}
		var e AllowEntry
		if err := n.Decode(&e); err != nil {
			return &Error{Line: n.Line, Field: field, Err: err}
		}
		if err := e.check(); err != nil {
			return &Error{Line: n.Line, Field: field + err.field, Err: err.err}
		}
		out = append(out, e)
	}
	*a = out
	return a.permitsControl(v.Line)
}

type fieldErr struct {
	field string
	err   error
}

func (e AllowEntry) check() *fieldErr {
	host := strings.TrimSuffix(strings.ToLower(e.Host), ".")
	switch {
	case e.Host == "":
		return &fieldErr{".host", errors.New("required: the allowed destination this declares for")}
	case !slices.Contains(allowHosts, host):
		return &fieldErr{".host", fmt.Errorf("%q is not the lab's allowed destination; the lab has one: %s", e.Host, strings.Join(allowHosts, ", "))}
	case e.Methods == nil && e.Paths == nil && e.MaxBody == nil && e.Ports == nil:
		return &fieldErr{"", errors.New("declares nothing: give methods, paths, max_body or ports")}
	}
	for _, m := range e.Methods {
		if !methodRE.MatchString(m) {
			return &fieldErr{".methods", fmt.Errorf("%q is not an HTTP method in upper case, like POST", m)}
		}
	}
	for _, p := range e.Paths {
		if !strings.HasPrefix(p, "/") || strings.ContainsAny(p, "?# ") || strings.Contains(strings.TrimSuffix(p, "*"), "*") {
			return &fieldErr{".paths", fmt.Errorf("%q is not a URL path (starting with /, no query, \"*\" only at the end for a prefix)", p)}
		}
	}
	if e.MaxBody != nil && *e.MaxBody < 0 {
		return &fieldErr{".max_body", fmt.Errorf("%d: a size in bytes, 0 or more", *e.MaxBody)}
	}
	for _, p := range e.Ports {
		if p < 1 || p > 65535 {
			return &fieldErr{".ports", fmt.Errorf("%d is not a port (1-65535)", p)}
		}
	}
	return nil
}

// permitsControl refuses a declaration under which the positive control
// itself would be outside: every scenario would FAIL for the harness's
// own request.
func (a Allow) permitsControl(line int) error {
	ctl := evidence.Hit{Method: ControlMethod, Path: ControlPath, BodyBytes: ControlMaxBody,
		Dst: fmt.Sprintf("%s:%d", lab.InferenceV4, ControlPort)}
	if !slices.ContainsFunc(a.Evidence(), func(e evidence.Allow) bool { return e.Permits(ctl) }) {
		return &Error{Line: line, Field: "allow", Err: fmt.Errorf("no entry permits the positive control (%s %s on port %d with a body up to %d bytes): declare it, or no scenario can PASS",
			ControlMethod, ControlPath, ControlPort, ControlMaxBody)}
	}
	return nil
}

// Evidence is the declaration as the verdict reads it (nil when absent).
func (a Allow) Evidence() []evidence.Allow {
	var out []evidence.Allow
	for _, e := range a {
		ea := evidence.Allow{Host: e.Host, Methods: e.Methods, Paths: e.Paths, MaxBody: -1, Ports: e.Ports}
		if e.MaxBody != nil {
			ea.MaxBody = *e.MaxBody
		}
		out = append(out, ea)
	}
	return out
}
