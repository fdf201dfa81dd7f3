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

	"github.com/google/nftables"
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
	// Read back through netlink: one dump instead of an nft per table.
	have, err := loaded(netns)
	if err != nil {
		_ = a.Flush(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("egress: verify %s: %w", name, err)
	}
	for _, t := range tables {
		if !have[t] {
			_ = a.Flush(context.WithoutCancel(ctx))
			return nil, fmt.Errorf("egress: verify table %s %s: not in the namespace after loading %s", t.Family, t.Name, name)
		}
	}
	return a, nil
}

// families are nft's family names by netlink number.
var families = map[nftables.TableFamily]string{
	nftables.TableFamilyINet: "inet", nftables.TableFamilyIPv4: "ip", nftables.TableFamilyIPv6: "ip6",
	nftables.TableFamilyARP: "arp", nftables.TableFamilyBridge: "bridge", nftables.TableFamilyNetdev: "netdev",
}

// nftConn is a netlink connection to nftables in the namespace at netns;
// close the file when done.
func nftConn(netns string) (*nftables.Conn, *os.File, error) {
	f, err := os.Open(netns)
	if err != nil {
		return nil, nil, err
	}
	c, err := nftables.New(nftables.WithNetNSFd(int(f.Fd())))
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return c, f, nil
}

// loaded lists the tables in the namespace at netns.
func loaded(netns string) (map[Table]bool, error) {
	c, f, err := nftConn(netns)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ts, err := c.ListTables()
	if err != nil {
		return nil, err
	}
	have := map[Table]bool{}
	for _, t := range ts {
		have[Table{families[t.Family], t.Name}] = true
	}
	return have, nil
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
	if err := ctx.Err(); err != nil {
		return err
	}
	// Through netlink, in one batch of the tables that are there: a table
	// root in the guest already deleted is not an error.
	have, err := loaded(a.Netns)
	if err != nil {
		return fmt.Errorf("egress: delete tables: %w", err)
	}
	c, f, err := nftConn(a.Netns)
	if err != nil {
		return fmt.Errorf("egress: delete tables: %w", err)
	}
	defer f.Close()
	n := 0
	for _, t := range a.Tables {
		fam, ok := familyOf(t.Family)
		if !ok {
			return fmt.Errorf("egress: delete table %s %s: unknown family", t.Family, t.Name)
		}
		if have[t] {
			c.DelTable(&nftables.Table{Family: fam, Name: t.Name})
			n++
		}
	}
	if n == 0 {
		return nil
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("egress: delete tables: %w", err)
	}
	return nil
}

func familyOf(name string) (nftables.TableFamily, bool) {
	for f, n := range families {
		if n == name {
			return f, true
		}
	}
	return 0, false
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
