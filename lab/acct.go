package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// Every session namespace gets an accounting table that counts, per lab
// destination, the packets the sandbox's kernel emitted. It runs before any
// egress policy (priority -400) and only counts (policy accept), so it
// changes nothing the sandbox can do, but it gives a proof of attempt that
// is the kernel's word, not the probe's: a probe that says it tried and was
// blocked while nothing was counted toward that address is lying.
const acctTable = "gatehouse_acct"

// acctDest is one destination the accounting table counts.
type acctDest struct{ Name, Family, Addr string }

// acctDests are the destinations counted, by the name steps use. The
// public-looking addresses can be overridden, so the list is per lab; the
// names are not.
func (a Addrs) acctDests() []acctDest {
	return []acctDest{
		{"callback4", "ip", CallbackV4},
		{"callback6", "ip6", CallbackV6},
		{"callback4_public", "ip", a.Public.CallbackV4},
		{"callback6_public", "ip6", a.Public.CallbackV6},
		{"inference", "ip", InferenceV4},
		{"intake", "ip", IntakeV4},
		{"resolver", "ip", ResolverV4},
		{"authority", "ip", AuthorityV4},
		{"authority_public", "ip", a.Public.AuthorityV4},
		{"metadata4", "ip", MetadataV4},
		{"metadata6", "ip6", MetadataV6},
		{"wireserver", "ip", WireServerV4},
		{"alibaba", "ip", AlibabaV4},
	}
}

// DestOf names the accounting counter for an address of a lab with the
// default addresses ("" if none).
func DestOf(addr string) string { return DefaultAddrs().DestOf(addr) }

// DestOf names the accounting counter for one of these lab addresses (""
// if none).
func (a Addrs) DestOf(addr string) string {
	for _, d := range a.acctDests() {
		if d.Addr == addr {
			return d.Name
		}
	}
	return ""
}

// LoopbackResolverDest counts DNS to a resolver on the sandbox's own
// loopback (a filtering stub): a profile whose nameserver is 127.0.0.53
// sends its lookups there, not to the lab's resolver.
const LoopbackResolverDest = "resolver_loopback"

func acctRuleset(dests []acctDest) string {
	var b strings.Builder
	fmt.Fprintf(&b, "table inet %s {\n", acctTable)
	for _, d := range dests {
		fmt.Fprintf(&b, "\tcounter %s { }\n", d.Name)
	}
	fmt.Fprintf(&b, "\tcounter %s { }\n", LoopbackResolverDest)
	b.WriteString(emittedSets)
	b.WriteString("\tchain out {\n\t\ttype filter hook output priority -400; policy accept;\n")
	b.WriteString(emittedRules)
	for _, d := range dests {
		fmt.Fprintf(&b, "\t\t%s daddr %s counter name %s\n", d.Family, d.Addr, d.Name)
	}
	fmt.Fprintf(&b, "\t\tip daddr 127.0.0.0/8 meta l4proto { tcp, udp } th dport 53 counter name %s\n", LoopbackResolverDest)
	fmt.Fprintf(&b, "\t\tip6 daddr ::1 meta l4proto { tcp, udp } th dport 53 counter name %s\n", LoopbackResolverDest)
	b.WriteString("\t}\n}\n")
	return b.String()
}

func addAccounting(ctx context.Context, netns string, dests []acctDest) error {
	cmd := exec.CommandContext(ctx, "nsenter", "--net="+netns, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(acctRuleset(dests))
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("accounting table: %v: %s", err, bytes.TrimSpace(out))
	}
	return nil
}

// Emitted returns, per destination, how many packets the session's kernel
// has sent toward it so far. An error means the accounting table is gone
// (a sandbox with the power to flush it, or a profile that flushed the
// whole ruleset): no kernel-side proof of attempt can then be had.
func (l *Lab) Emitted(ctx context.Context, session string) (map[string]uint64, error) {
	l.mu.Lock()
	a, ok := l.sessions[session]
	l.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("lab: emitted: no session %q", session)
	}
	out, err := exec.CommandContext(ctx, "nsenter", "--net="+NetnsPath(a.netns), "nft", "-j", "list", "counters", "table", "inet", acctTable).Output()
	if err != nil {
		return nil, fmt.Errorf("lab: emitted: the accounting table of %s cannot be read: %w", session, err)
	}
	return parseCounters(out, l.addrs.acctDests())
}

func parseCounters(js []byte, dests []acctDest) (map[string]uint64, error) {
	var doc struct {
		Nftables []map[string]json.RawMessage `json:"nftables"`
	}
	if err := json.Unmarshal(js, &doc); err != nil {
		return nil, fmt.Errorf("lab: emitted: %w", err)
	}
	got := map[string]uint64{}
	for _, item := range doc.Nftables {
		raw, ok := item["counter"]
		if !ok {
			continue
		}
		var c struct {
			Name    string `json:"name"`
			Packets uint64 `json:"packets"`
		}
		if err := json.Unmarshal(raw, &c); err != nil {
			return nil, fmt.Errorf("lab: emitted: %w", err)
		}
		got[c.Name] = c.Packets
	}
	for _, d := range dests {
		if _, ok := got[d.Name]; !ok {
			return nil, errors.New("lab: emitted: the accounting table lacks counter " + d.Name)
		}
	}
	return got, nil
}
