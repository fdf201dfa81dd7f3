package lab

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/internal/hostenv"
)

// Flow evidence lets the harness settle a blocked attempt without waiting
// out its timeout. The lab is on this host, so two records, both kept by
// the kernel, say what became of each packet a session's sandbox sent:
//
//   - emitted, in the session's accounting table (before any egress
//     policy): per flow, the packets that open one (a TCP SYN, a UDP
//     datagram, an ICMP echo request);
//   - arrived, in the lab namespace (before anything else there): per
//     source and flow, whether any packet of it reached the lab.
//
// A flow emitted and not arrived was stopped between the two, unless
// something on the way can hold a packet (a queueing discipline, a
// userspace queue, another interface): Holds names those, and a caller
// must not settle while there is one. With the kernel's socket table (a TCP
// connect still in SYN_SENT) these make "it left the sandbox's sender and
// nothing arrived" a fact rather than a timeout's guess.

// Flow is where a packet aimed: an address, a protocol ("tcp", "udp" or
// "icmp" for echo requests) and, for tcp and udp, the port.
type Flow struct {
	Addr  netip.Addr
	Proto string
	Port  uint16
}

func (f Flow) String() string {
	if f.Proto == "icmp" {
		return "icmp " + f.Addr.String()
	}
	return f.Proto + " " + netip.AddrPortFrom(f.Addr, f.Port).String()
}

// FlowEvidence is one reading of a session's flow records.
type FlowEvidence struct {
	// Emitted counts, per flow, the opening packets the session's kernel
	// emitted (each try of a TCP connect is one SYN).
	Emitted map[Flow]uint64
	// Arrived holds the flows of which a packet from the session reached
	// the lab.
	Arrived map[Flow]bool
	// Connecting counts, per flow, the session namespace's TCP sockets in
	// SYN_SENT: connects that have had no answer.
	Connecting map[Flow]int
}

const (
	emittedSets = `	set emitted4 { type ipv4_addr . inet_proto . inet_service; flags dynamic; size 16384; counter; }
	set emitted6 { type ipv6_addr . inet_proto . inet_service; flags dynamic; size 16384; counter; }
	set echo4 { type ipv4_addr; flags dynamic; size 16384; counter; }
	set echo6 { type ipv6_addr; flags dynamic; size 16384; counter; }
`
	emittedRules = `		tcp flags & (syn | ack) == syn update @emitted4 { ip daddr . meta l4proto . th dport }
		tcp flags & (syn | ack) == syn update @emitted6 { ip6 daddr . meta l4proto . th dport }
		meta l4proto udp update @emitted4 { ip daddr . meta l4proto . th dport }
		meta l4proto udp update @emitted6 { ip6 daddr . meta l4proto . th dport }
		icmp type echo-request update @echo4 { ip daddr }
		icmpv6 type echo-request update @echo6 { ip6 daddr }
`
	arrivalsTable = "gatehouse_arrivals"
	arrivalsSize  = 65536
)

// arrivalsRuleset records, in the lab namespace, every flow that reaches
// it, by source. Entries expire after ten minutes, far longer than an
// attempt's life; a set close to full is a hold (Holds), never a silence.
func arrivalsRuleset() string {
	set := func(name, typ string) string {
		return fmt.Sprintf("\tset %s { type %s; flags dynamic,timeout; timeout 10m; size %d; }\n", name, typ, arrivalsSize)
	}
	return "table inet " + arrivalsTable + " {\n" +
		set("flows4", "ipv4_addr . ipv4_addr . inet_proto . inet_service") +
		set("flows6", "ipv6_addr . ipv6_addr . inet_proto . inet_service") +
		set("echo4", "ipv4_addr . ipv4_addr") +
		set("echo6", "ipv6_addr . ipv6_addr") +
		"\tchain pre {\n\t\ttype filter hook prerouting priority -400; policy accept;\n" +
		"\t\tmeta l4proto { tcp, udp } update @flows4 { ip saddr . ip daddr . meta l4proto . th dport }\n" +
		"\t\tmeta l4proto { tcp, udp } update @flows6 { ip6 saddr . ip6 daddr . meta l4proto . th dport }\n" +
		"\t\ticmp type echo-request update @echo4 { ip saddr . ip daddr }\n" +
		"\t\ticmpv6 type echo-request update @echo6 { ip6 saddr . ip6 daddr }\n" +
		"\t}\n}\n"
}

func (l *Lab) addArrivals(ctx context.Context) error {
	cmd := hostenv.Command(ctx, "nsenter", "--net="+NetnsPath(l.name), "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(arrivalsRuleset())
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("arrival records: %v: %s", err, bytes.TrimSpace(out))
	}
	return nil
}

// Flows reads a session's flow evidence. An error means some of it cannot
// be had (the accounting table flushed by root in the guest, say): nothing
// can then be settled on it.
func (l *Lab) Flows(ctx context.Context, session string) (FlowEvidence, error) {
	l.mu.Lock()
	a, ok := l.sessions[session]
	l.mu.Unlock()
	if !ok {
		return FlowEvidence{}, fmt.Errorf("lab: flows: no session %q", session)
	}
	ev := FlowEvidence{Emitted: map[Flow]uint64{}, Arrived: map[Flow]bool{}, Connecting: map[Flow]int{}}
	if err := ctx.Err(); err != nil {
		return ev, fmt.Errorf("lab: flows: %w", err)
	}
	emitted, err := readSets(NetnsPath(a.netns), acctTable, map[string]keyLayout{
		"emitted4": {4, true}, "emitted6": {16, true}, "echo4": {4, false}, "echo6": {16, false}}, !withSource)
	if err != nil {
		return ev, fmt.Errorf("lab: flows: the accounting table of %s cannot be read: %w", session, err)
	}
	for _, e := range emitted {
		ev.Emitted[e.flow] += e.packets
	}
	arrived, err := readSets(NetnsPath(l.name), arrivalsTable, map[string]keyLayout{
		"flows4": {4, true}, "flows6": {16, true}, "echo4": {4, false}, "echo6": {16, false}}, withSource)
	if err != nil {
		return ev, fmt.Errorf("lab: flows: the lab's arrival records cannot be read: %w", err)
	}
	if len(arrived) > arrivalsSize/2 {
		return ev, fmt.Errorf("lab: flows: the lab's arrival records hold %d flows, too close to their %d to be sure none was lost", len(arrived), arrivalsSize)
	}
	for _, e := range arrived {
		if e.src == a.v4 || e.src == a.v6 {
			ev.Arrived[e.flow] = true
		}
	}
	err = InNetns(NetnsPath(a.netns), func() error {
		for _, file := range []string{"/proc/thread-self/net/tcp", "/proc/thread-self/net/tcp6"} {
			b, err := os.ReadFile(file)
			if err != nil {
				return err
			}
			if err := synSent(b, ev.Connecting); err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
		}
		return nil
	})
	if err != nil {
		return ev, fmt.Errorf("lab: flows of %s: sockets: %w", session, err)
	}
	return ev, nil
}

// Holds names what, in a session's namespace, could hold a packet that
// passed the sandbox's hooks so that it reaches the lab later: an
// interface but lo and the session's link, a queueing discipline on the
// link, a netfilter userspace queue. None (and no error): every packet
// that left reached the lab at once.
func (l *Lab) Holds(ctx context.Context, session string) ([]string, error) {
	l.mu.Lock()
	a, ok := l.sessions[session]
	l.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("lab: holds: no session %q", session)
	}
	var holds []string
	err := InNetns(NetnsPath(a.netns), func() error {
		dev, err := os.ReadFile("/proc/thread-self/net/dev")
		if err != nil {
			return err
		}
		for _, name := range devNames(dev) {
			if name != "lo" && name != a.peerVeth {
				holds = append(holds, "interface "+name+" in the session namespace")
			}
		}
		q, err := os.ReadFile("/proc/thread-self/net/netfilter/nfnetlink_queue")
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		if len(bytes.TrimSpace(q)) > 0 {
			holds = append(holds, "a netfilter userspace queue in the session namespace")
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("lab: holds of %s: %w", session, err)
	}
	out, err := hostenv.Command(ctx, "tc", "-j", "-n", a.netns, "qdisc", "show", "dev", a.peerVeth).Output()
	if err != nil {
		return nil, fmt.Errorf("lab: holds of %s: qdisc: %w", session, err)
	}
	var qd []struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal(out, &qd); err != nil {
		return nil, fmt.Errorf("lab: holds of %s: qdisc: %w", session, err)
	}
	for _, q := range qd {
		if q.Kind != "noqueue" {
			holds = append(holds, "queueing discipline "+q.Kind+" on the session's link")
		}
	}
	return holds, nil
}

// keyLayout is how a set's key reads: addresses of size bytes, then (for
// tcp and udp flows) a protocol and a port, each in a 4-byte register.
type keyLayout struct {
	size  int
	ports bool
}

// withSource: the key starts with the source address.
const withSource = true

// flowElem is one element of a flow set.
type flowElem struct {
	src     netip.Addr // when the key has one
	flow    Flow
	packets uint64
}

// readSets dumps the named sets of table (family inet) in the namespace at
// netns. Every set must be there: a set root in the guest removed is an
// error, never an empty record.
func readSets(netns, table string, sets map[string]keyLayout, hasSrc bool) ([]flowElem, error) {
	c, f, err := nftIn(netns)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t := &nftables.Table{Name: table, Family: nftables.TableFamilyINet}
	var out []flowElem
	for name, lay := range sets {
		set, err := c.GetSetByName(t, name)
		if err != nil {
			return nil, fmt.Errorf("set %s: %w", name, err)
		}
		elems, err := c.GetSetElements(set)
		if err != nil {
			return nil, fmt.Errorf("set %s: %w", name, err)
		}
		for _, e := range elems {
			fe, err := decodeKey(e.Key, lay, hasSrc)
			if err != nil {
				return nil, fmt.Errorf("set %s: %w", name, err)
			}
			if e.Counter != nil {
				fe.packets = e.Counter.Packets
			}
			out = append(out, fe)
		}
	}
	return out, nil
}

// decodeKey reads a set element's key: [source] destination [proto port].
func decodeKey(k []byte, lay keyLayout, hasSrc bool) (flowElem, error) {
	want := lay.size
	if hasSrc {
		want += lay.size
	}
	if lay.ports {
		want += 8
	}
	if len(k) != want {
		return flowElem{}, fmt.Errorf("key of %d bytes, want %d", len(k), want)
	}
	var e flowElem
	addr := func() netip.Addr {
		a, _ := netip.AddrFromSlice(k[:lay.size])
		k = k[lay.size:]
		return a.Unmap()
	}
	if hasSrc {
		e.src = addr()
	}
	e.flow.Addr = addr()
	if !lay.ports {
		e.flow.Proto = "icmp"
		return e, nil
	}
	switch k[0] {
	case unix.IPPROTO_TCP:
		e.flow.Proto = "tcp"
	case unix.IPPROTO_UDP:
		e.flow.Proto = "udp"
	default:
		return flowElem{}, fmt.Errorf("protocol %d in a flow key", k[0])
	}
	e.flow.Port = uint16(k[4])<<8 | uint16(k[5])
	return e, nil
}

// synSent adds the SYN_SENT sockets of a /proc/net/tcp{,6} table to m.
func synSent(table []byte, m map[Flow]int) error {
	sc := bufio.NewScanner(bytes.NewReader(table))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	first := true
	for sc.Scan() {
		if first {
			first = false
			continue // the header
		}
		f := strings.Fields(sc.Text())
		if len(f) < 4 {
			continue
		}
		if f[3] != "02" { // TCP_SYN_SENT
			continue
		}
		addr, port, err := procAddr(f[2])
		if err != nil {
			return err
		}
		m[Flow{Addr: addr, Proto: "tcp", Port: port}]++
	}
	return sc.Err()
}

// procAddr reads a /proc/net/tcp address: hex of the address in host
// (little-endian) order, word by word, ":" and hex of the port.
func procAddr(s string) (netip.Addr, uint16, error) {
	h, p, ok := strings.Cut(s, ":")
	if !ok {
		return netip.Addr{}, 0, fmt.Errorf("address %q", s)
	}
	raw, err := hex.DecodeString(h)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return netip.Addr{}, 0, fmt.Errorf("address %q", s)
	}
	for w := 0; w < len(raw); w += 4 {
		raw[w], raw[w+1], raw[w+2], raw[w+3] = raw[w+3], raw[w+2], raw[w+1], raw[w]
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return netip.Addr{}, 0, fmt.Errorf("port %q", s)
	}
	addr, _ := netip.AddrFromSlice(raw)
	return addr.Unmap(), uint16(port), nil
}

// devNames lists the interfaces of a /proc/net/dev table.
func devNames(b []byte) []string {
	var out []string
	for i, line := range strings.Split(string(b), "\n") {
		name, _, ok := strings.Cut(line, ":")
		if i < 2 || !ok {
			continue
		}
		out = append(out, strings.TrimSpace(name))
	}
	return out
}

// Registers as nft lays out a concatenated key: the 16-byte register 1
// holds the first field; later fields follow in 4-byte registers, so an
// IPv4 address (4 bytes) is followed in register 9, an IPv6 one (16 bytes,
// the whole of register 1) in register 13 (register 2 in 16-byte terms).
const (
	reg1     = 1
	reg32At4 = 9  // the 4-byte register after a 4-byte field in register 1
	reg2     = 2  // the 16-byte register after register 1
	reg32At8 = 10 // after two 4-byte fields
	reg32Rg2 = 13 // the 4-byte register after register 2's first word
)

// flowSets queues the emitted sets and their rules on c (acctBatch): what
// nft makes of emittedSets and emittedRules, expression for expression
// (TestAccountingTableAsNftWritesIt compares the two).
func flowSets(c *nftables.Conn, t *nftables.Table, ch *nftables.Chain) error {
	v4key, err := nftables.ConcatSetType(nftables.TypeIPAddr, nftables.TypeInetProto, nftables.TypeInetService)
	if err != nil {
		return err
	}
	v6key, err := nftables.ConcatSetType(nftables.TypeIP6Addr, nftables.TypeInetProto, nftables.TypeInetService)
	if err != nil {
		return err
	}
	sets := map[string]*nftables.Set{}
	for i, s := range []struct {
		name string
		key  nftables.SetDatatype
	}{{"emitted4", v4key}, {"emitted6", v6key}, {"echo4", nftables.TypeIPAddr}, {"echo6", nftables.TypeIP6Addr}} {
		set := &nftables.Set{Table: t, ID: uint32(100 + i), Name: s.name, KeyType: s.key, Dynamic: true, Counter: true, Size: 16384}
		if err := c.AddSet(set, nil); err != nil {
			return fmt.Errorf("set %s: %w", s.name, err)
		}
		sets[s.name] = set
	}
	cmp := func(reg uint32, b ...byte) expr.Any { return &expr.Cmp{Op: expr.CmpOpEq, Register: reg, Data: b} }
	l4 := func(reg uint32) expr.Any { return &expr.Meta{Key: expr.MetaKeyL4PROTO, Register: reg} }
	nfproto := func(p byte) []expr.Any {
		return []expr.Any{&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: reg1}, cmp(reg1, p)}
	}
	daddr := func(v6 bool) expr.Any {
		if v6 {
			return &expr.Payload{DestRegister: reg1, Base: expr.PayloadBaseNetworkHeader, Offset: 24, Len: 16}
		}
		return &expr.Payload{DestRegister: reg1, Base: expr.PayloadBaseNetworkHeader, Offset: 16, Len: 4}
	}
	dport := func(reg uint32) expr.Any {
		return &expr.Payload{DestRegister: reg, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2}
	}
	update := func(set string) expr.Any {
		return &expr.Dynset{SrcRegKey: reg1, SetName: set, SetID: sets[set].ID, Operation: uint32(unix.NFT_DYNSET_OP_UPDATE)}
	}
	synOnly := []expr.Any{
		l4(reg1), cmp(reg1, unix.IPPROTO_TCP),
		&expr.Payload{DestRegister: reg1, Base: expr.PayloadBaseTransportHeader, Offset: 13, Len: 1},
		&expr.Bitwise{SourceRegister: reg1, DestRegister: reg1, Len: 1, Mask: []byte{0x12}, Xor: []byte{0}},
		cmp(reg1, 0x02),
	}
	udp := []expr.Any{l4(reg1), cmp(reg1, unix.IPPROTO_UDP)}
	var rules [][]expr.Any
	for _, first := range [][]expr.Any{synOnly, udp} {
		rules = append(rules,
			join(first, nfproto(unix.NFPROTO_IPV4), []expr.Any{daddr(false), l4(reg32At4), dport(reg32At8), update("emitted4")}),
			join(first, nfproto(unix.NFPROTO_IPV6), []expr.Any{daddr(true), l4(reg2), dport(reg32Rg2), update("emitted6")}))
	}
	icmpType := &expr.Payload{DestRegister: reg1, Base: expr.PayloadBaseTransportHeader, Offset: 0, Len: 1}
	rules = append(rules,
		join(nfproto(unix.NFPROTO_IPV4), []expr.Any{l4(reg1), cmp(reg1, unix.IPPROTO_ICMP), icmpType, cmp(reg1, 8), daddr(false), update("echo4")}),
		join(nfproto(unix.NFPROTO_IPV6), []expr.Any{l4(reg1), cmp(reg1, unix.IPPROTO_ICMPV6), icmpType, cmp(reg1, 128), daddr(true), update("echo6")}))
	for _, ex := range rules {
		c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: ex})
	}
	return nil
}

func join(parts ...[]expr.Any) []expr.Any {
	var out []expr.Any
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}
