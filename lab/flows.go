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
	"os/exec"
	"strconv"
	"strings"
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
	cmd := exec.CommandContext(ctx, "nsenter", "--net="+NetnsPath(l.name), "nft", "-f", "-")
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
	out, err := exec.CommandContext(ctx, "nsenter", "--net="+NetnsPath(a.netns), "nft", "-j", "list", "table", "inet", acctTable).Output()
	if err != nil {
		return ev, fmt.Errorf("lab: flows: the accounting table of %s cannot be read: %w", session, err)
	}
	sets, err := parseSets(out, "emitted4", "emitted6", "echo4", "echo6")
	if err != nil {
		return ev, fmt.Errorf("lab: flows of %s: %w", session, err)
	}
	for _, e := range sets {
		f, ok := e.flow(0)
		if !ok {
			return ev, fmt.Errorf("lab: flows of %s: unreadable element %v", session, e.key)
		}
		ev.Emitted[f] += e.packets
	}
	out, err = exec.CommandContext(ctx, "nsenter", "--net="+NetnsPath(l.name), "nft", "-j", "list", "table", "inet", arrivalsTable).Output()
	if err != nil {
		return ev, fmt.Errorf("lab: flows: the lab's arrival records cannot be read: %w", err)
	}
	sets, err = parseSets(out, "flows4", "flows6", "echo4", "echo6")
	if err != nil {
		return ev, fmt.Errorf("lab: flows: arrivals: %w", err)
	}
	if len(sets) > arrivalsSize/2 {
		return ev, fmt.Errorf("lab: flows: the lab's arrival records hold %d flows, too close to their %d to be sure none was lost", len(sets), arrivalsSize)
	}
	for _, e := range sets {
		src, err := netip.ParseAddr(fmt.Sprint(e.key[0]))
		if err != nil || (src != a.v4 && src != a.v6) {
			continue
		}
		f, ok := e.flow(1)
		if !ok {
			return ev, fmt.Errorf("lab: flows: arrivals: unreadable element %v", e.key)
		}
		ev.Arrived[f] = true
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
	out, err := exec.CommandContext(ctx, "tc", "-j", "-n", a.netns, "qdisc", "show", "dev", a.peerVeth).Output()
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

// setElem is one element of a dynamic set: its key's parts and counter.
type setElem struct {
	key     []any
	packets uint64
}

// flow reads a key's parts from i on: addr . proto . port, or addr alone
// (an echo set's).
func (e setElem) flow(i int) (Flow, bool) {
	if len(e.key) <= i {
		return Flow{}, false
	}
	addr, err := netip.ParseAddr(fmt.Sprint(e.key[i]))
	if err != nil {
		return Flow{}, false
	}
	if len(e.key) == i+1 {
		return Flow{Addr: addr, Proto: "icmp"}, true
	}
	if len(e.key) != i+3 {
		return Flow{}, false
	}
	proto, _ := e.key[i+1].(string)
	port, ok := e.key[i+2].(float64)
	if (proto != "tcp" && proto != "udp") || !ok || port < 0 || port > 65535 {
		return Flow{}, false
	}
	return Flow{Addr: addr, Proto: proto, Port: uint16(port)}, true
}

// parseSets reads the elements of the named sets from `nft -j list table`;
// each set must be there.
func parseSets(js []byte, names ...string) ([]setElem, error) {
	var doc struct {
		Nftables []map[string]json.RawMessage `json:"nftables"`
	}
	if err := json.Unmarshal(js, &doc); err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = false
	}
	var out []setElem
	for _, item := range doc.Nftables {
		raw, ok := item["set"]
		if !ok {
			continue
		}
		var s struct {
			Name string            `json:"name"`
			Elem []json.RawMessage `json:"elem"`
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		if _, ok := want[s.Name]; !ok {
			continue
		}
		want[s.Name] = true
		for _, er := range s.Elem {
			e, err := parseElem(er)
			if err != nil {
				return nil, fmt.Errorf("set %s: %w", s.Name, err)
			}
			out = append(out, e)
		}
	}
	for n, seen := range want {
		if !seen {
			return nil, fmt.Errorf("set %s is missing", n)
		}
	}
	return out, nil
}

// parseElem reads one element: a bare value, or {"elem": {"val": V,
// "counter": {...}}}, where V is a value or {"concat": [...]}.
func parseElem(raw json.RawMessage) (setElem, error) {
	var wrapped struct {
		Elem *struct {
			Val     json.RawMessage `json:"val"`
			Counter *struct {
				Packets uint64 `json:"packets"`
			} `json:"counter"`
		} `json:"elem"`
	}
	val := raw
	var e setElem
	if json.Unmarshal(raw, &wrapped) == nil && wrapped.Elem != nil {
		val = wrapped.Elem.Val
		if wrapped.Elem.Counter != nil {
			e.packets = wrapped.Elem.Counter.Packets
		}
	}
	var concat struct {
		Concat []any `json:"concat"`
	}
	if json.Unmarshal(val, &concat) == nil && concat.Concat != nil {
		e.key = concat.Concat
		return e, nil
	}
	var one any
	if err := json.Unmarshal(val, &one); err != nil {
		return e, err
	}
	if _, ok := one.(string); !ok {
		return e, fmt.Errorf("element %s is neither a value nor a concatenation", val)
	}
	e.key = []any{one}
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
