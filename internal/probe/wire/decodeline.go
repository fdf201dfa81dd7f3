package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// reportKeys are the exact JSON keys of Report. encoding/json matches keys
// case-insensitively and lets a duplicate key win silently; a strict
// decoder must not, so keys are checked on the token stream first.
var reportKeys = map[string]bool{
	"id": true, "kind": true, "target": true, "outcome": true, "error": true,
	"status": true, "bytes": true, "excerpt": true, "start": true, "duration_ms": true,
	"active_from": true, "active_to": true, "wrote": true, "made": true,
	"answered": true, "dialed": true,
}

var outcomes = map[string]bool{
	OutcomeCompleted: true, OutcomePartial: true, OutcomeRefused: true, OutcomeUnreachable: true,
	OutcomeTimeout: true, OutcomeDenied: true, OutcomeError: true, OutcomeNoProxy: true,
}

type decoder struct {
	steps    map[string]Step
	seen     map[string]bool
	lim      Limits
	reports  []Report
	problems []string
	cut      int
}

func (d *decoder) problem(p string) {
	if len(d.problems) >= maxProblems {
		d.cut++
		return
	}
	d.problems = append(d.problems, p)
}

func (d *decoder) finishProblems() []string {
	if d.cut > 0 {
		return append(d.problems, fmt.Sprintf("%d more problems not listed", d.cut))
	}
	return d.problems
}

// line decodes one line and keeps the report if it passes every check.
func (d *decoder) line(n int, line []byte) {
	if len(bytes.TrimSpace(line)) == 0 {
		return
	}
	rep, err := strictReport(line)
	if err != nil {
		d.problem(fmt.Sprintf("line %d: %v: %s", n, err, quote(line)))
		return
	}
	if err := d.check(rep); err != nil {
		d.problem(fmt.Sprintf("line %d: report %s: %v", n, quote([]byte(rep.ID)), err))
		return
	}
	if len(d.reports) >= d.lim.MaxReports {
		d.problem(fmt.Sprintf("line %d: more than %d reports, dropped", n, d.lim.MaxReports))
		return
	}
	d.seen[rep.ID] = true
	d.reports = append(d.reports, rep)
}

// check holds a decoded report to the plan and to the probe's own caps.
func (d *decoder) check(rep Report) error {
	step, ok := d.steps[rep.ID]
	switch {
	case !ok:
		return errors.New("id not in the plan")
	case d.seen[rep.ID]:
		return errors.New("duplicate report for this id")
	case rep.Kind != step.Kind:
		return fmt.Errorf("kind %s differs from the plan", quote([]byte(rep.Kind)))
	case rep.Target != step.Target:
		return errors.New("target differs from the plan")
	case !outcomes[rep.Outcome]:
		return fmt.Errorf("unknown outcome %s", quote([]byte(rep.Outcome)))
	case len(rep.Error) > MaxErrorLen:
		return fmt.Errorf("error longer than %d bytes", MaxErrorLen)
	case len(rep.Excerpt) > ExcerptCap(rep.Kind):
		return fmt.Errorf("excerpt longer than %d bytes", ExcerptCap(rep.Kind))
	case rep.Status < 0 || rep.Status > 999:
		return fmt.Errorf("status %d out of range", rep.Status)
	case rep.Bytes < 0:
		return fmt.Errorf("bytes %d < 0", rep.Bytes)
	case rep.DurationMS < 0 || rep.DurationMS > maxDurationMS:
		return fmt.Errorf("duration %v ms out of range", rep.DurationMS)
	case rep.Start.IsZero():
		return errors.New("no start time")
	case rep.ActiveFrom.IsZero() != rep.ActiveTo.IsZero():
		return errors.New("an active window needs both ends")
	case rep.ActiveTo.Before(rep.ActiveFrom):
		return errors.New("active window ends before it starts")
	}
	if err := checkDialed(rep); err != nil {
		return err
	}
	return checkWrote(rep)
}

// checkDialed holds a report's dial notes to the caps: only the kinds that
// dial carry them, each address a host:port with a literal IP.
func checkDialed(rep Report) error {
	if !rep.Answered && len(rep.Dialed) == 0 {
		return nil
	}
	if !dialKinds[rep.Kind] {
		return fmt.Errorf("a %s attempt carries dial notes", rep.Kind)
	}
	if len(rep.Dialed) > MaxDialed {
		return fmt.Errorf("more than %d addresses dialed", MaxDialed)
	}
	for _, a := range rep.Dialed {
		if len(a) > MaxDialedLen {
			return fmt.Errorf("address dialed longer than %d bytes", MaxDialedLen)
		}
		if _, err := netip.ParseAddrPort(a); err != nil {
			return fmt.Errorf("address dialed %s is not an IP and port", quote([]byte(a)))
		}
	}
	return nil
}

// dialKinds are the kinds whose reports may carry dial notes.
var dialKinds = map[string]bool{KindTCP: true, KindUDP: true, KindHTTP: true}

// checkWrote holds a report's written paths to the caps: only writing
// kinds list any, each an absolute clean path.
func checkWrote(rep Report) error {
	if len(rep.Wrote)+len(rep.Made) == 0 {
		return nil
	}
	if !wroteKinds[rep.Kind] {
		return fmt.Errorf("a %s attempt lists paths written", rep.Kind)
	}
	if len(rep.Made) > 0 && rep.Kind != KindStash {
		return fmt.Errorf("a %s attempt lists folders made", rep.Kind)
	}
	if len(rep.Wrote)+len(rep.Made) > MaxWrote {
		return fmt.Errorf("more than %d paths written", MaxWrote)
	}
	n := 0
	for _, p := range append(append([]string(nil), rep.Wrote...), rep.Made...) {
		n += len(p)
		if !filepath.IsAbs(p) || filepath.Clean(p) != p || strings.ContainsRune(p, 0) {
			return fmt.Errorf("written path %s is not a clean absolute path", quote([]byte(p)))
		}
	}
	if n > MaxWroteBytes {
		return fmt.Errorf("paths written longer than %d bytes together", MaxWroteBytes)
	}
	return nil
}

// strictReport decodes one JSON object with exactly-spelled, unique, known
// keys, valid UTF-8 and nothing after it.
func strictReport(line []byte) (Report, error) {
	if !utf8.Valid(line) {
		return Report{}, errors.New("not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return Report{}, errors.New("not a JSON object")
	}
	keys := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return Report{}, fmt.Errorf("malformed JSON: %w", err)
		}
		key, _ := tok.(string)
		switch {
		case !reportKeys[key]:
			return Report{}, fmt.Errorf("unknown field %s", quote([]byte(key)))
		case keys[key]:
			return Report{}, fmt.Errorf("duplicate field %q", key)
		}
		keys[key] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return Report{}, fmt.Errorf("malformed JSON: %w", err)
		}
	}
	if _, err := dec.Token(); err != nil {
		return Report{}, fmt.Errorf("malformed JSON: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Report{}, errors.New("trailing data after the object")
	}
	var rep Report
	strict := json.NewDecoder(bytes.NewReader(line))
	strict.DisallowUnknownFields()
	if err := strict.Decode(&rep); err != nil {
		return Report{}, fmt.Errorf("malformed report: %w", err)
	}
	return rep, nil
}
