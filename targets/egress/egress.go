// Package egress applies a profile's nftables egress ruleset inside a
// session's network namespace and removes it again. Any target whose
// sessions live in a namespace the harness prepared uses it, so the same
// policy file means the same thing for every target.
package egress

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
)

// Table is one nftables table a ruleset declares.
type Table struct{ Family, Name string }

var tableDecl = regexp.MustCompile(`(?m)^\s*(?:add\s+)?table\s+(\w+)\s+(\w+)`)

// Tables lists the tables a ruleset declares.
func Tables(rules []byte) []Table {
	var out []Table
	for _, m := range tableDecl.FindAllSubmatch(rules, -1) {
		out = append(out, Table{string(m[1]), string(m[2])})
	}
	return out
}

// Applied is a ruleset loaded in one namespace.
type Applied struct {
	Netns  string
	Tables []Table
}

// Apply loads rules (named name in messages) into the namespace at netns
// and lists every declared table back, so a ruleset that did not take
// fails here rather than passing gates by accident.
func Apply(ctx context.Context, netns, name string, rules []byte) (*Applied, error) {
	if netns == "" {
		return nil, fmt.Errorf("egress: %s: no session namespace to apply it in", name)
	}
	tables := Tables(rules)
	if len(tables) == 0 {
		return nil, fmt.Errorf("egress: %s declares no table, so it cannot be verified", name)
	}
	a := &Applied{Netns: netns, Tables: tables}
	if _, err := nft(ctx, netns, bytes.NewReader(rules), "-f", "-"); err != nil {
		_ = a.Flush(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("egress: apply %s: %w", name, err)
	}
	for _, t := range tables {
		if _, err := nft(ctx, netns, nil, "list", "table", t.Family, t.Name); err != nil {
			_ = a.Flush(context.WithoutCancel(ctx))
			return nil, fmt.Errorf("egress: verify table %s %s: %w", t.Family, t.Name, err)
		}
	}
	return a, nil
}

// Ruleset is what nft lists in the namespace now, for the evidence.
func (a *Applied) Ruleset(ctx context.Context) (string, error) {
	return List(ctx, a.Netns)
}

// List is the whole ruleset in force in a namespace, whoever loaded it.
func List(ctx context.Context, netns string) (string, error) {
	return nft(ctx, netns, nil, "list", "ruleset")
}

// Flush deletes the tables; a namespace already removed has nothing left.
func (a *Applied) Flush(ctx context.Context) error {
	if a == nil {
		return nil
	}
	if _, err := os.Stat(a.Netns); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	var errs []error
	for _, t := range a.Tables {
		if _, err := nft(ctx, a.Netns, nil, "delete", "table", t.Family, t.Name); err != nil && !strings.Contains(err.Error(), "No such file") {
			errs = append(errs, fmt.Errorf("egress: delete table %s %s: %w", t.Family, t.Name, err))
		}
	}
	return errors.Join(errs...)
}

// hostEnv keeps the harness's own variables away from nft.
var hostEnv = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}

// nft runs nft in a namespace (nsenter, not `ip netns exec`, which remounts /sys).
func nft(ctx context.Context, netns string, stdin *bytes.Reader, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "nsenter", append([]string{"--net=" + netns, "nft"}, args...)...)
	cmd.Env = hostEnv
	if stdin != nil {
		cmd.Stdin = stdin
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("nft %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}
