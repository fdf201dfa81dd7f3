package lab

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
)

// nsRE matches the namespaces a lab makes: gh-<id> and gh-<id>-<session>.
var nsRE = regexp.MustCompile(`^gh-[0-9a-f]{4,6}(-[a-z0-9][a-z0-9-]{0,31})?$`)

// List returns the lab and session namespaces present on this machine,
// whichever process made them.
func List(ctx context.Context) ([]string, error) {
	names, err := namespaces()
	if err != nil {
		return nil, fmt.Errorf("lab: list: %w", err)
	}
	var out []string
	for _, n := range names {
		if nsRE.MatchString(n) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out, nil
}

// Cleanup removes every gh-* namespace left behind, e.g. by a crashed run.
// It also removes those of a lab still running in another process, so it
// is for `gatehouse lab down`, not for use while runs are in progress.
func Cleanup(ctx context.Context) error {
	if err := cleanup(ctx, func(string) bool { return true }); err != nil {
		return fmt.Errorf("lab: cleanup: %w", err)
	}
	return nil
}

// cleanup removes the lab namespaces that match, sessions first: deleting a
// session namespace takes its veth pair with it.
func cleanup(ctx context.Context, match func(name string) bool) error {
	names, err := List(ctx)
	if err != nil {
		return err
	}
	// Longer names (sessions, gh-<id>-<s>) sort after their lab; delete in
	// reverse so every session goes before its lab.
	var errs []error
	for i := len(names) - 1; i >= 0; i-- {
		if !match(names[i]) {
			continue
		}
		if err := deleteNetns(names[i]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
