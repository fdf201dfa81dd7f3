package probe

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// nftTable is one nftables table: family (inet, ip, ...) and name.
type nftTable struct{ Family, Name string }

func (t nftTable) String() string { return t.Family + " " + t.Name }

// nfFamilies names nftables families the way nft writes them.
var nfFamilies = map[uint8]string{
	unix.NFPROTO_INET: "inet", unix.NFPROTO_IPV4: "ip", unix.NFPROTO_IPV6: "ip6",
	unix.NFPROTO_ARP: "arp", unix.NFPROTO_BRIDGE: "bridge", unix.NFPROTO_NETDEV: "netdev",
}

func nfFamily(name string) (uint8, bool) {
	for k, v := range nfFamilies {
		if v == name {
			return k, true
		}
	}
	return 0, false
}

// nfgen is the nfgenmsg header: family, version 0, resource id (big endian).
func nfgen(family uint8, resID uint16) []byte {
	b := []byte{family, unix.NFNETLINK_V0, 0, 0}
	binary.BigEndian.PutUint16(b[2:], resID)
	return b
}

const nftMsg = unix.NFNL_SUBSYS_NFTABLES << 8

// takeDownNftables deletes every nftables table in the namespace but the
// spared ones, one batch per table so each gets its own answer. This is
// what `nft flush ruleset` does, without needing nft in the sandbox.
func takeDownNftables(s wire.Step, l *tdLog) error {
	if err := ownNamespace("net", s.Outside); err != nil {
		l.add(wire.TakedownSkipped, "%v", err)
		return err
	}
	c, err := dialNetlink(unix.NETLINK_NETFILTER)
	if errors.Is(err, syscall.EPROTONOSUPPORT) {
		// No nftables in this kernel (gVisor's own, or nf_tables absent):
		// there is no ruleset here to take down.
		l.add(wire.TakedownUnchanged, "this kernel has no netfilter netlink (%v): no nftables ruleset here", err)
		return nil
	}
	if err != nil {
		l.result("open a netfilter netlink socket", err)
		return nil
	}
	defer c.Close()
	tables, err := listNftTables(c)
	if err != nil {
		l.result("list nftables tables", err)
		return nil
	}
	spare := map[string]bool{}
	for _, t := range s.Spare {
		spare[t] = true
	}
	if len(tables) == 0 {
		l.add(wire.TakedownUnchanged, "no nftables table in this namespace")
	}
	for _, t := range tables {
		if spare[t.String()] {
			l.add(wire.TakedownSkipped, "table %s: the harness's instrument (it filters nothing), spared", t)
			continue
		}
		l.result("delete table "+t.String(), deleteNftTable(c, t))
	}
	return nil
}

func listNftTables(c *nlConn) ([]nftTable, error) {
	msgs, err := c.dump(nftMsg|unix.NFT_MSG_GETTABLE, nfgen(unix.AF_UNSPEC, 0))
	if err != nil {
		return nil, err
	}
	var out []nftTable
	for _, m := range msgs {
		if m.Header.Type != nftMsg|unix.NFT_MSG_NEWTABLE || len(m.Data) < 4 {
			continue
		}
		name := cString(nlAttrs(m.Data[4:])[unix.NFTA_TABLE_NAME])
		fam, ok := nfFamilies[m.Data[0]]
		if !ok {
			fam = fmt.Sprintf("family%d", m.Data[0])
		}
		if name != "" {
			out = append(out, nftTable{fam, name})
		}
	}
	return out, nil
}

func deleteNftTable(c *nlConn, t nftTable) error {
	fam, ok := nfFamily(t.Family)
	if !ok {
		return fmt.Errorf("unknown family %q", t.Family)
	}
	begin := &nlMsg{Type: unix.NFNL_MSG_BATCH_BEGIN, Flags: unix.NLM_F_REQUEST, Body: nfgen(unix.AF_UNSPEC, unix.NFNL_SUBSYS_NFTABLES)}
	del := &nlMsg{Type: nftMsg | unix.NFT_MSG_DELTABLE, Flags: unix.NLM_F_REQUEST | unix.NLM_F_ACK,
		Body: nlAttr(nfgen(fam, 0), unix.NFTA_TABLE_NAME, append([]byte(t.Name), 0))}
	end := &nlMsg{Type: unix.NFNL_MSG_BATCH_END, Flags: unix.NLM_F_REQUEST, Body: nfgen(unix.AF_UNSPEC, unix.NFNL_SUBSYS_NFTABLES)}
	return c.exec(del, begin, del, end)
}

// takeDownIptables flushes iptables-legacy tables. They are not nftables
// and Go has no small way to rewrite them, so this needs the sandbox's own
// iptables-legacy binary; without one the tables are reported, not touched.
// (iptables-nft rules are nftables tables: the nftables step takes them.)
func takeDownIptables(ctx context.Context, s wire.Step, l *tdLog) error {
	if err := ownNamespace("net", s.Outside); err != nil {
		l.add(wire.TakedownSkipped, "%v", err)
		return err
	}
	for _, v := range []struct{ names, bin string }{
		{"/proc/net/ip_tables_names", "iptables-legacy"}, {"/proc/net/ip6_tables_names", "ip6tables-legacy"},
	} {
		b, err := os.ReadFile(v.names)
		if err != nil {
			l.add(wire.TakedownUnchanged, "%s unreadable (%v): no legacy tables to see", v.names, err)
			continue
		}
		tables := strings.Fields(string(b))
		if len(tables) == 0 {
			l.add(wire.TakedownUnchanged, "no %s tables in this namespace", strings.TrimSuffix(v.bin, "-legacy"))
			continue
		}
		bin := findTool(v.bin)
		if bin == "" {
			l.add(wire.TakedownSkipped, "%s tables %s present, but no %s in the sandbox to flush them", strings.TrimSuffix(v.bin, "-legacy"), strings.Join(tables, ","), v.bin)
			continue
		}
		for _, t := range tables {
			l.result(fmt.Sprintf("%s -t %s -F", v.bin, t), runTool(ctx, bin, "-w", "-t", t, "-F"))
			if t == "filter" {
				for _, chain := range []string{"INPUT", "OUTPUT", "FORWARD"} {
					l.result(fmt.Sprintf("%s -P %s ACCEPT", v.bin, chain), runTool(ctx, bin, "-w", "-t", t, "-P", chain, "ACCEPT"))
				}
			}
		}
	}
	return nil
}

// findTool looks for a binary where sandboxes keep them.
func findTool(name string) string {
	for _, d := range []string{"/usr/sbin", "/sbin", "/usr/bin", "/bin"} {
		p := d + "/" + name
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

func runTool(ctx context.Context, bin string, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		msg := strings.TrimSpace(string(out))
		if strings.Contains(msg, "Permission denied") || strings.Contains(msg, "not permitted") {
			return fmt.Errorf("%s: %w", firstLineOf(msg), syscall.EPERM)
		}
		return fmt.Errorf("%v: %s", err, firstLineOf(msg))
	}
	return nil
}

func firstLineOf(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 160 {
		s = s[:160]
	}
	return s
}
