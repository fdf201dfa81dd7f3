package lab

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/gatehouse-dev/gatehouse/internal/hostenv"
)

// AccountingTable is the lab's packet accounting in every session
// namespace ("inet gatehouse_acct"). It only counts (policy accept), so an
// assume-breach takedown spares it: it is the harness's instrument, not a
// control of the sandbox, and without it the retried attempts would lose
// their kernel-side proof of attempt.
const AccountingTable = "inet " + acctTable

// Tables lists the nftables tables in a session's namespace ("inet NAME"),
// read from outside the sandbox: the harness's own view of whether root in
// the guest changed the egress ruleset.
func (l *Lab) Tables(ctx context.Context, session string) ([]string, error) {
	l.mu.Lock()
	a, ok := l.sessions[session]
	l.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("lab: tables: no session %q", session)
	}
	out, err := hostenv.Command(ctx, "nsenter", "--net="+NetnsPath(a.netns), "nft", "list", "tables").Output()
	if err != nil {
		return nil, fmt.Errorf("lab: tables of %s: %w", session, err)
	}
	return parseTables(string(out)), nil
}

// parseTables reads `nft list tables` ("table inet NAME" lines).
func parseTables(s string) []string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && f[0] == "table" {
			out = append(out, f[1]+" "+f[2])
		}
	}
	sort.Strings(out)
	return out
}
