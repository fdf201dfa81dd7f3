package lab_test

import (
	"context"
	"encoding/json"
	"net/netip"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/lab"
)

// The kernel's flow records tell a dropped connect from one that reached
// the lab, and Holds names what could keep a packet on the way.
func TestFlowsTellBlockedFromArrived(t *testing.T) {
	needLab(t)
	l := upLab(t)
	nw := attach(t, l, "flows")
	ctx := context.Background()
	// The session's egress drops TCP to the callback's port 9000 only.
	nft := exec.Command("nsenter", "--net="+nw.NetnsPath, "nft", "-f", "-")
	nft.Stdin = strings.NewReader("table inet egress {\n chain out {\n  type filter hook output priority 0; policy accept;\n  ip daddr " +
		lab.CallbackV4 + " tcp dport 9000 drop\n }\n}\n")
	if out, err := nft.CombinedOutput(); err != nil {
		t.Fatalf("egress rules: %v: %s", err, out)
	}
	blocked := lab.Flow{Addr: netip.MustParseAddr(lab.CallbackV4), Proto: "tcp", Port: 9000}
	reached := lab.Flow{Addr: netip.MustParseAddr(lab.CallbackV4), Proto: "tcp", Port: 80}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	go func() {
		if c, err := dial(cctx, nw, "tcp", lab.CallbackV4+":9000"); err == nil {
			c.Close()
		}
	}()
	c, err := dial(ctx, nw, "tcp", lab.CallbackV4+":80")
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	var ev lab.FlowEvidence
	for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if ev, err = l.Flows(ctx, "flows"); err != nil {
			t.Fatal(err)
		}
		if ev.Connecting[blocked] == 1 && ev.Emitted[blocked] >= 1 && ev.Arrived[reached] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no blocked connect and arrived flow on record: %+v", ev)
		}
	}
	if ev.Arrived[blocked] {
		t.Errorf("a dropped connect is on record as arrived: %+v", ev)
	}
	if ev.Emitted[reached] < 1 || ev.Connecting[reached] != 0 {
		t.Errorf("the answered connect: emitted %d, connecting %d", ev.Emitted[reached], ev.Connecting[reached])
	}
	holds, err := l.Holds(ctx, "flows")
	if err != nil || len(holds) != 0 {
		t.Fatalf("holds on a plain session: %v, %v", holds, err)
	}
	// A queueing discipline on the link could keep a packet that left.
	links, err := exec.Command("ip", "-j", "-n", nw.NetnsName, "link", "show").Output()
	if err != nil {
		t.Fatal(err)
	}
	var ls []struct {
		Name string `json:"ifname"`
	}
	if err := json.Unmarshal(links, &ls); err != nil {
		t.Fatal(err)
	}
	peer := ""
	for _, x := range ls {
		if x.Name != "lo" {
			peer = x.Name
		}
	}
	if out, err := exec.Command("tc", "-n", nw.NetnsName, "qdisc", "add", "dev", peer, "root", "tbf", "rate", "1mbit", "burst", "32kbit", "latency", "400ms").CombinedOutput(); err != nil {
		t.Fatalf("tbf: %v: %s", err, out)
	}
	if out, err := exec.Command("ip", "-n", nw.NetnsName, "link", "add", "gh-x0", "type", "veth", "peer", "name", "gh-x1").CombinedOutput(); err != nil {
		t.Fatalf("extra link: %v: %s", err, out)
	}
	holds, err = l.Holds(ctx, "flows")
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(holds, "; ")
	for _, want := range []string{"queueing discipline tbf", "interface gh-x0", "interface gh-x1"} {
		if !strings.Contains(got, want) {
			t.Errorf("holds %q lack %q", got, want)
		}
	}
	if _, err := l.Flows(ctx, "nobody"); err == nil {
		t.Error("Flows of an unknown session succeeded")
	}
	// Root in the guest that flushes the ruleset takes the records: an
	// error, never an empty record that would read as "nothing sent".
	if out, err := exec.Command("nsenter", "--net="+nw.NetnsPath, "nft", "flush", "ruleset").CombinedOutput(); err != nil {
		t.Fatalf("flush: %v: %s", err, out)
	}
	if _, err := l.Flows(ctx, "flows"); err == nil {
		t.Error("Flows read a session whose accounting table is gone")
	}
}
