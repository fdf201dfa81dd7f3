package profile

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"

	"gopkg.in/yaml.v3"

	"github.com/gatehouse-dev/gatehouse/internal/targets/egress"
)

// ErrCannotCheck means a check could not run on this machine (nft missing,
// no privilege for a scratch namespace): a run must not start on a profile
// nothing vouched for, since it would fail the same way in every session.
var ErrCannotCheck = egress.ErrCannotCheck

// Check does, before a run starts, what Load leaves out because it needs
// this machine or because the targets refuse it only at session start:
//   - the egress ruleset is given to `nft -c` in a network namespace that
//     exists only while nft runs (nothing to clean up, nothing committed);
//     a refusal names the ruleset's own file and line;
//   - what the target's kind refuses at every session start, if it is a
//     Checker (bwrap: namespaces that disagree with `network`);
//   - limits.stop_command's program exists here and is executable.
//
// Errors are *Error; one wrapping ErrCannotCheck means the check itself
// could not run here.
func (p *Profile) Check(ctx context.Context) error {
	v, err := p.lines()
	if err != nil {
		return err
	}
	if err := v.namespaces(); err != nil {
		return err
	}
	if argv := p.Limits.StopCommand; len(argv) > 0 {
		if _, err := exec.LookPath(argv[0]); err != nil {
			return v.fail("limits.stop_command", fmt.Errorf("%q cannot be run here: %v", argv[0], errors.Unwrap(err)))
		}
	}
	if p.Egress == "" {
		return nil
	}
	err = egress.Check(ctx, p.files[p.Egress])
	var re *egress.RulesetError
	if errors.As(err, &re) {
		return &Error{File: filepath.Join(filepath.Dir(p.source), p.Egress), Line: re.Line, Field: "egress", Err: re}
	}
	if err != nil {
		return v.fail("egress", err)
	}
	return nil
}

// lines is a validator over the profile's own bytes, to name lines.
func (p *Profile) lines() (*validator, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(p.files[p.main], &root); err != nil {
		return nil, &Error{File: p.source, Err: err}
	}
	return &validator{p: p, root: &root, file: p.source}, nil
}

// namespaces asks the profile's kind, if it is a Checker, what its target
// would refuse at every session start (bwrap: namespaces that contradict
// `network`).
func (v *validator) namespaces() error {
	if c, ok := v.p.kind.(Checker); ok {
		return c.Check(&Loading{v})
	}
	return nil
}
