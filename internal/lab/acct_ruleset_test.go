package lab

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/namedns"
)

// The table loaded through netlink must be the one acctRuleset describes:
// nft lists both identically, so the takedown and every reader of `nft list
// ruleset` see what they saw when nft loaded the text.
func TestAccountingTableAsNftWritesIt(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces")
	}
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skip("needs the nft command")
	}
	ctx := context.Background()
	dests := DefaultAddrs().acctDests()
	list := func(name string) string {
		out, err := exec.CommandContext(ctx, "nsenter", "--net="+NetnsPath(name), "nft", "list", "ruleset").CombinedOutput()
		if err != nil {
			t.Fatalf("nft list ruleset in %s: %v: %s", name, err, out)
		}
		return string(out)
	}
	mk := func(suffix string) string {
		name := fmt.Sprintf("ghtest-acct%d-%s", os.Getpid(), suffix)
		if err := namedns.Add(name, nil); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := namedns.Delete(name); err != nil {
				t.Error(err)
			}
		})
		return name
	}
	byNft, byNetlink := mk("nft"), mk("nl")
	cmd := exec.CommandContext(ctx, "nsenter", "--net="+NetnsPath(byNft), "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(acctRuleset(dests))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nft -f: %v: %s", err, bytes.TrimSpace(out))
	}
	if err := addAccounting(NetnsPath(byNetlink), dests); err != nil {
		t.Fatal(err)
	}
	want, got := list(byNft), list(byNetlink)
	if got != want {
		t.Errorf("nft lists the netlink table as\n%s\nwant (nft's own)\n%s", got, want)
	}
	if !strings.Contains(got, "meta l4proto { tcp, udp } th dport 53") {
		t.Errorf("loopback resolver rule missing:\n%s", got)
	}
	counts, err := readCounters(NetnsPath(byNetlink))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := checkCounters(counts, dests); err != nil {
		t.Error(err)
	}
	if _, ok := counts[LoopbackResolverDest]; !ok {
		t.Errorf("no %s counter: %v", LoopbackResolverDest, counts)
	}
	// Strict: a namespace without the table reads as an error.
	empty := mk("empty")
	counts, err = readCounters(NetnsPath(empty))
	if err == nil {
		if _, err = checkCounters(counts, dests); err == nil {
			t.Error("a namespace with no accounting table read as counters")
		}
	}
}
