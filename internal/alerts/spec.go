package alerts

import (
	"errors"
	"fmt"
	"strings"
)

// ErrSpec is wrapped by every error about an --alerts spec's shape.
var ErrSpec = errors.New("alerts spec")

// Spec is one --alerts value: FORMAT:PATH, e.g. falco:/var/log/falco.jsonl,
// tetragon:/var/log/tetragon/tetragon.log, audit:/var/log/audit/audit.log,
// ocsf:/var/log/findings.jsonl (one finding per line).
type Spec struct {
	Format string
	Path   string
}

func (s Spec) String() string { return s.Format + ":" + s.Path }

// ParseSpec reads FORMAT:PATH. It checks the format; the file is checked
// when a source is made from it (Tail, Import).
func ParseSpec(v string) (Spec, error) {
	format, path, ok := strings.Cut(v, ":")
	if !ok || format == "" {
		return Spec{}, fmt.Errorf("%w %q: want FORMAT:PATH (%s, %s, %s or %s)", ErrSpec, v, FormatFalco, FormatTetragon, FormatAudit, FormatOCSF)
	}
	format = strings.ToLower(format)
	if _, err := ParserFor(format); err != nil {
		return Spec{}, fmt.Errorf("%w %q: %w", ErrSpec, v, err)
	}
	if path == "" {
		return Spec{}, fmt.Errorf("%w %q: no path after %s:", ErrSpec, v, format)
	}
	return Spec{Format: format, Path: path}, nil
}

// Tail makes the source following the spec's file from its end.
func (s Spec) Tail() (*File, error) { return Tail(s.Format, s.Path) }

// Import makes the source reading the spec's file whole, after the fact.
func (s Spec) Import() (*File, error) { return Import(s.Format, s.Path) }

// Open parses an --alerts value and returns the tail it names: the
// source a run uses. A missing file is an error (errors.Is fs.ErrNotExist).
func Open(v string) (*File, error) {
	s, err := ParseSpec(v)
	if err != nil {
		return nil, err
	}
	return s.Tail()
}
