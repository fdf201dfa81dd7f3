package probe_test

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/probe"
	"github.com/gatehouse-dev/gatehouse/internal/probe/probetest"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// TestBinaryTakedownInANamespaceOfItsOwn runs the real probe, as root, in
// a network namespace this test makes (nothing else lives there, and it is
// deleted after), with an egress-like table and an accounting-like table
// in it, and reads the result from outside with nft and ip:
//   - named as outside, the namespace is left exactly as it was;
//   - not named, the probe deletes the egress table from pure Go, spares
//     the accounting table, and brings loopback up and adds its address.
func TestBinaryTakedownInANamespaceOfItsOwn(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a network namespace")
	}
	for _, tool := range []string{"ip", "nft", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	bin := probetest.Build(t)
	for _, named := range []bool{true, false} {
		t.Run(fmt.Sprintf("outside=%v", named), func(t *testing.T) {
			ns, link := scratchNetns(t)
			sh(t, "nsenter", "--net="+ns, "nft", "-f", "-", "<", `table inet gatehouse_egress {
	chain output { type filter hook output priority filter; policy drop; }
}
table inet gatehouse_acct {
	chain out { type filter hook output priority -400; policy accept; }
}`)
			// The test's own namespaces stand for the harness's; with named,
			// the scratch one is listed too, as the lab's would be.
			outside := hostLinks(t)
			if named {
				outside = append(outside, link)
			}
			var steps []wire.Step
			for _, c := range []string{wire.TakedownNftables, wire.TakedownLinks, wire.TakedownAddresses, wire.TakedownRoutes} {
				steps = append(steps, wire.Step{ID: c, Kind: wire.KindTakedown, Target: c, Outside: outside, Spare: []string{"inet gatehouse_acct"}})
			}
			reps := runIn(t, bin, ns, wire.Plan{TimeoutMS: 5000, Parallel: 1, Steps: steps})
			tables := sh(t, "nsenter", "--net="+ns, "nft", "list", "tables")
			lo := sh(t, "ip", "-n", strings.TrimPrefix(ns, "/run/netns/"), "-o", "addr", "show", "dev", "lo")
			if named {
				for id, r := range reps {
					if r.Outcome != wire.OutcomeDenied || !strings.HasPrefix(r.Error, wire.RefusePrefix) {
						t.Errorf("%s: %s (%s), want the probe's refusal", id, r.Outcome, r.Error)
					}
				}
				if !strings.Contains(tables, "gatehouse_egress") || strings.Contains(lo, probe.TakedownAddress) {
					t.Errorf("a namespace named outside was changed: tables %q, lo %q", tables, lo)
				}
				return
			}
			nft := reps[wire.TakedownNftables]
			if nft.Outcome != wire.OutcomeCompleted || !strings.Contains(nft.Excerpt, wire.TakedownChanged+"delete table inet gatehouse_egress") {
				t.Errorf("nftables: %s (%s) %q", nft.Outcome, nft.Error, nft.Excerpt)
			}
			if strings.Contains(tables, "gatehouse_egress") || !strings.Contains(tables, "gatehouse_acct") {
				t.Errorf("seen from outside, tables are %q: want the egress table gone and the accounting one kept", tables)
			}
			if r := reps[wire.TakedownLinks]; !strings.Contains(r.Excerpt, wire.TakedownChanged+"bring interface lo up") {
				t.Errorf("links: %s %q", r.Outcome, r.Excerpt)
			}
			if !strings.Contains(lo, probe.TakedownAddress+"/32") {
				t.Errorf("seen from outside, lo has %q: want %s added", lo, probe.TakedownAddress)
			}
			if r := reps[wire.TakedownRoutes]; r.Outcome != wire.OutcomeCompleted || !strings.Contains(r.Excerpt, "no interface but loopback") {
				t.Errorf("routes: %s %q", r.Outcome, r.Excerpt)
			}
		})
	}
}

// scratchNetns makes a named network namespace, deleted at cleanup, and
// returns its path and its /proc ns link form.
func scratchNetns(t *testing.T) (string, string) {
	t.Helper()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "gatehouse-td-" + hex.EncodeToString(b)
	sh(t, "ip", "netns", "add", name)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	path := "/run/netns/" + name
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return path, fmt.Sprintf("net:[%d]", st.Ino)
}

func hostLinks(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, k := range []string{"net", "mnt", "pid", "cgroup"} {
		l, err := os.Readlink("/proc/self/ns/" + k)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, l)
	}
	return out
}

// sh runs a command; "<" then a last argument feeds that as stdin.
func sh(t *testing.T, args ...string) string {
	t.Helper()
	var stdin string
	if n := len(args); n > 2 && args[n-2] == "<" {
		stdin, args = args[n-1], args[:n-2]
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func runIn(t *testing.T, bin, ns string, plan wire.Plan) map[string]wire.Report {
	t.Helper()
	in, _ := json.Marshal(plan)
	cmd := exec.Command("nsenter", "--net="+ns, bin, "run")
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("probe: %v: %s", err, stderr.String())
	}
	reps, problems, err := wire.Decode(&stdout, plan, wire.DefaultLimits())
	if err != nil || len(problems) > 0 || len(reps) != len(plan.Steps) {
		t.Fatalf("Decode: %d reports, problems %q, err %v", len(reps), problems, err)
	}
	out := map[string]wire.Report{}
	for _, r := range reps {
		out[r.ID] = r
	}
	return out
}
