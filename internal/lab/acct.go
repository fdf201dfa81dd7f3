package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
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

// addAccounting loads the accounting table (acctRuleset, written as
// nftables bytecode) into the namespace at netns, in one batch: the table
// appears whole or not at all. `nft list ruleset` shows it exactly as
// acctRuleset reads.
func addAccounting(netns string, dests []acctDest) error {
	c, f, err := nftIn(netns)
	if err != nil {
		return fmt.Errorf("accounting table in %s: %w", netns, err)
	}
	defer f.Close()
	if err := acctBatch(c, dests); err != nil {
		return fmt.Errorf("accounting table in %s: %w", netns, err)
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("accounting table in %s: load: %w", netns, err)
	}
	return nil
}

// acctBatch queues the accounting table on c: what nft makes of
// acctRuleset, expression for expression.
func acctBatch(c *nftables.Conn, dests []acctDest) error {
	t := c.AddTable(&nftables.Table{Name: acctTable, Family: nftables.TableFamilyINet})
	for _, d := range dests {
		c.AddObj(&nftables.NamedObj{Table: t, Name: d.Name, Type: nftables.ObjTypeCounter, Obj: &expr.Counter{}})
	}
	c.AddObj(&nftables.NamedObj{Table: t, Name: LoopbackResolverDest, Type: nftables.ObjTypeCounter, Obj: &expr.Counter{}})
	accept := nftables.ChainPolicyAccept
	ch := c.AddChain(&nftables.Chain{
		Name: "out", Table: t, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookOutput, Priority: nftables.ChainPriorityRef(-400), Policy: &accept,
	})
	if err := flowSets(c, t, ch); err != nil {
		return fmt.Errorf("flow sets: %w", err)
	}
	counter := func(name string) expr.Any { return &expr.Objref{Type: int(nftables.ObjTypeCounter), Name: name} }
	for _, d := range dests {
		m, err := daddrIs(d.Family, d.Addr)
		if err != nil {
			return fmt.Errorf("destination %s: %w", d.Name, err)
		}
		c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: append(m, counter(d.Name))})
	}
	// DNS to the sandbox's own loopback: daddr, then l4proto in the
	// anonymous set { tcp, udp }, then th dport 53. Set IDs are chosen here
	// (unique within this batch) so the library's shared counter is not used.
	for i, fam := range []struct {
		family byte
		daddr  []expr.Any
	}{
		// 127.0.0.0/8: nft compares the first byte only, so do we.
		{unix.NFPROTO_IPV4, []expr.Any{
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 16, Len: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{127}},
		}},
		{unix.NFPROTO_IPV6, []expr.Any{
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 24, Len: 16},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: net.IPv6loopback.To16()},
		}},
	} {
		set := &nftables.Set{Table: t, ID: uint32(i + 1), Name: "__set%d", Anonymous: true, Constant: true, KeyType: nftables.TypeInetProto}
		if err := c.AddSet(set, []nftables.SetElement{{Key: []byte{unix.IPPROTO_TCP}}, {Key: []byte{unix.IPPROTO_UDP}}}); err != nil {
			return fmt.Errorf("loopback resolver set: %w", err)
		}
		ex := []expr.Any{
			&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{fam.family}},
		}
		ex = append(ex, fam.daddr...)
		ex = append(ex,
			&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
			&expr.Lookup{SourceRegister: 1, SetName: set.Name, SetID: set.ID},
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{0, 53}},
			counter(LoopbackResolverDest),
		)
		c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: ex})
	}
	return nil
}

// daddrIs matches packets of family ("ip" or "ip6") sent to addr, as nft
// compiles "ip daddr A" / "ip6 daddr A" in an inet table.
func daddrIs(family, addr string) ([]expr.Any, error) {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return nil, err
	}
	var proto byte
	var off uint32
	var b []byte
	switch {
	case family == "ip" && a.Is4():
		proto, off, b = unix.NFPROTO_IPV4, 16, a.AsSlice()
	case family == "ip6" && a.Is6() && !a.Is4In6():
		proto, off, b = unix.NFPROTO_IPV6, 24, a.AsSlice()
	default:
		return nil, fmt.Errorf("address %s is not of family %s", addr, family)
	}
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{proto}},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: uint32(len(b))},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: b},
	}, nil
}

// Emitted returns, per destination, how many packets the session's kernel
// has sent toward it so far. An error means the accounting table is gone
// (a sandbox with the power to flush it, or a profile that flushed the
// whole ruleset): no kernel-side proof of attempt can then be had. It is
// one netlink dump of the table's objects, cheap enough to poll.
func (l *Lab) Emitted(ctx context.Context, session string) (map[string]uint64, error) {
	l.mu.Lock()
	a, ok := l.sessions[session]
	l.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("lab: emitted: no session %q", session)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("lab: emitted: %w", err)
	}
	got, err := readCounters(NetnsPath(a.netns))
	if err != nil {
		return nil, fmt.Errorf("lab: emitted: the accounting table of %s cannot be read: %w", session, err)
	}
	return checkCounters(got, l.addrs.acctDests())
}

// nftIn is a netlink connection to nftables in the namespace at netns;
// the caller closes the file when done.
func nftIn(netns string) (*nftables.Conn, *os.File, error) {
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

// readCounters dumps the counters of the accounting table in the namespace
// at netns, by name.
func readCounters(netns string) (map[string]uint64, error) {
	c, f, err := nftIn(netns)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	objs, err := c.GetObjects(&nftables.Table{Name: acctTable, Family: nftables.TableFamilyINet})
	if err != nil {
		return nil, err
	}
	got := map[string]uint64{}
	for _, o := range objs {
		if co, ok := o.(*nftables.CounterObj); ok {
			got[co.Name] = co.Packets
		}
	}
	return got, nil
}

// checkCounters refuses a reading that lacks any destination's counter
// (a table that is gone reads as no counters at all).
func checkCounters(got map[string]uint64, dests []acctDest) (map[string]uint64, error) {
	for _, d := range dests {
		if _, ok := got[d.Name]; !ok {
			return nil, errors.New("lab: emitted: the accounting table lacks counter " + d.Name)
		}
	}
	return got, nil
}
