package bwrap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"

	"gatehouse/targets/profile"
)

// table is one nftables table a ruleset declares: family and name.
type table struct{ family, name string }

var tableDecl = regexp.MustCompile(`(?m)^\s*(?:add\s+)?table\s+(\w+)\s+(\w+)`)

func declaredTables(rules []byte) []table {
	var out []table
	for _, m := range tableDecl.FindAllSubmatch(rules, -1) {
		out = append(out, table{string(m[1]), string(m[2])})
	}
	return out
}

// applyEgress loads the profile's ruleset in the session namespace and reads
// every table it declares back, so a ruleset that did not take fails Start.
func applyEgress(ctx context.Context, netns string, st *stage, p *profile.Profile) ([]table, error) {
	if netns == "" {
		return nil, errors.New("egress: no session namespace to apply it in")
	}
	data, _ := p.File(p.Egress)
	tables := declaredTables(data)
	if len(tables) == 0 {
		return nil, fmt.Errorf("egress: %s declares no table, so it cannot be verified", p.Egress)
	}
	file, err := st.policyFile(p.Egress, data)
	if err != nil {
		return nil, err
	}
	if _, err := nft(ctx, netns, "-f", file); err != nil {
		return nil, fmt.Errorf("egress: apply %s: %w", p.Egress, err)
	}
	for _, t := range tables {
		if _, err := nft(ctx, netns, "list", "table", t.family, t.name); err != nil {
			return tables, fmt.Errorf("egress: verify table %s %s: %w", t.family, t.name, err)
		}
	}
	return tables, nil
}

// flushEgress deletes the tables the session added; a namespace the harness
// already removed has nothing left to flush.
func flushEgress(ctx context.Context, netns string, tables []table) error {
	if netns == "" || len(tables) == 0 {
		return nil
	}
	if _, err := os.Stat(netns); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	var errs []error
	for _, t := range tables {
		if _, err := nft(ctx, netns, "delete", "table", t.family, t.name); err != nil && !strings.Contains(err.Error(), "No such file") {
			errs = append(errs, fmt.Errorf("egress: delete table %s %s: %w", t.family, t.name, err))
		}
	}
	return errors.Join(errs...)
}

// nft runs nft in a network namespace (nsenter, not `ip netns exec`, which
// remounts /sys).
func nft(ctx context.Context, netns string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "nsenter", append([]string{"--net=" + netns, "nft"}, args...)...)
	cmd.Env = hostEnv
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("nft %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}
