package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/ledger"
	"github.com/gatehouse-dev/gatehouse/internal/probe/probetest"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// writingGates are the gates whose probe writes: notes in every place
// (reusable-state), files, sockets, SysV segments and message queues in
// every shared place (cross-session), a heartbeat file (stop-signal).
const writingGates = "reusable-state,cross-session,stop-signal"

// After a run of each leaky profile, including the wrapper ones that show
// the probe the host's own folders (firejail as root writing the host's /,
// firejail without a private /tmp, srt's shared /tmp/claude, codex's
// /tmp, docker's host IPC namespace), nothing of the probe's writes is
// left on the host: no file holding one of the run's values, no file,
// socket or folder of the probe's made during the run, no entry in
// /run/netns but namespace handles, no SysV segment or message queue of
// the run; and run.json says what was taken back and that nothing was
// left. Before the harness took its probe's writes back, firejail's
// assume-breach path left gatehouse-state in the host's / and /run/netns
// and a folder named like a session namespace in /run/netns.
func TestProbeWritesLeaveNothingOnTheHost(t *testing.T) {
	needSandbox(t)
	if testing.Short() {
		t.Skip("runs every leaky profile end to end")
	}
	tests := []struct {
		name string
		path func(t *testing.T) string
	}{
		{"bwrap-leaky", shipped("bwrap-leaky.yaml", nil)},
		{"bwrap-leaky-hostnet", shipped("bwrap-leaky-hostnet.yaml", nil)},
		{"docker-leaky", shipped("docker-leaky.yaml", needDocker)},
		{"firejail-hardened", shipped("firejail-hardened.yaml", needFirejail)},
		{"firejail-leaky", func(t *testing.T) string {
			needFirejail(t)
			return filepath.Join("testdata", "profiles", "firejail-leaky.yaml")
		}},
		{"firejail-shared-tmp", firejailSharedTmp},
		{"srt-default", shipped("srt-default.yaml", needWrapper)},
		{"srt-wildcard", shipped("srt-wildcard.yaml", needWrapper)},
		{"codex-workspace-write", shipped("codex-workspace-write.yaml", needWrapper)},
		{"codex-network-direct", shipped("codex-network-direct.yaml", needWrapper)},
		{"codex-network-proxy", shipped("codex-network-proxy.yaml", needWrapper)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.path(t)
			before := scanHost(t, time.Time{}, nil)
			start := time.Now()
			r := runProfileAt(t, p, writingGates)
			if len(r.results) != 6 {
				t.Fatalf("want 6 results (3 gates x 2 paths), got %d; exit %d\nstdout:\n%s\nstderr:\n%s", len(r.results), r.code, r.stdout, r.stderr)
			}
			values := runValues(t, r.dir)
			if len(values) == 0 {
				t.Fatalf("no value of the run in its evidence (%s): nothing to look for", r.dir)
			}
			labs := labLineRE.FindAllStringSubmatch(r.stdout, -1)
			if len(labs) != 1 {
				t.Fatalf("no lab named in the output:\n%s", r.stdout)
			}
			rn := runNamesOf(t, r.dir, values)
			own := filepath.Dir(filepath.Dir(r.dir)) // this test's /tmp/TestName123
			found := scanHost(t, start.Add(-time.Second), values)
			for _, e := range found {
				if why := e.left(before, values, rn, own, labs[0][1], start, func(p string) {
					t.Logf("named like the probe's writes but not this run's (another run beside it): %s", p)
				}); why != "" {
					t.Errorf("left on the host: %s (%s)", e.path, why)
				}
			}
			checkIPC(t, r)
			if out, err := exec.Command("ip", "netns", "list").CombinedOutput(); bytes.Contains(out, []byte("Peer netns reference is invalid")) {
				t.Logf("ip netns list (another run's entry?): %s %v", out, err)
			}
			hw := r.run.HostWrites
			switch {
			case hw == nil:
				t.Error("run.json says nothing about the probe's writes on the host (host_writes)")
			case hw.Left != 0:
				t.Errorf("run.json host_writes: %d left: %q", hw.Left, hw.LeftPaths)
			default:
				t.Logf("run.json host_writes: %d taken back: %q", hw.Removed, hw.RemovedPaths)
			}
			assertNothingLeft(t, r.stdout)
		})
	}
}

func shipped(name string, need func(*testing.T)) func(*testing.T) string {
	return func(t *testing.T) string {
		if need != nil {
			need(t)
		}
		if strings.HasPrefix(name, "srt-") || strings.HasPrefix(name, "codex-") {
			needTool(t, name)
		}
		return profilePath(name)
	}
}

// needWrapper skips where the wrapper profiles cannot run (their tools
// are checked by needTool).
func needWrapper(t *testing.T) { needSandbox(t) }

// firejailSharedTmp is firejail-hardened without its private /tmp: the
// host's /tmp is the sandbox's.
func firejailSharedTmp(t *testing.T) string {
	needFirejail(t)
	y, err := os.ReadFile(profilePath("firejail-hardened.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	nft, err := os.ReadFile(profilePath("firejail-hardened.nft"))
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(string(y), "    - --private-tmp\n", "", 1)
	if changed == string(y) {
		t.Fatal("firejail-hardened.yaml no longer has --private-tmp")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "firejail-hardened.nft"), nft, 0o644); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "firejail-shared-tmp.yaml")
	if err := os.WriteFile(p, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// runValues are the values the run minted, as its evidence proves them:
// each session's canary, which its probe carries on every request it
// makes (the lab records the requests of the run's own sessions), and the
// values the judges found where they must not be (crossings: only the
// run's own sessions' values count as one). Other tokens in the evidence
// may be other runs', found on the host by a leaky sandbox's searches.
func runValues(t *testing.T, dir string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	f, err := os.Open(filepath.Join(dir, "traces", "endpoint-hits.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		var h evidence.Hit
		if json.Unmarshal(sc.Bytes(), &h) != nil || h.Session == "" {
			continue
		}
		for _, m := range sessionHeader.FindAllStringSubmatch(h.Data, -1) {
			out[m[1]] = true
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var results []evidence.Result
	if err := json.Unmarshal(b, &results); err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		for _, c := range r.Crossings {
			for _, v := range wire.Tokens([]byte(c.Value)) {
				out[v] = true
			}
		}
	}
	return out
}

var sessionHeader = regexp.MustCompile(wire.SessionHeader + `: (gh[a-z]{0,5}[0-9a-f]{16})`)

// kill -9 while the probe's notes are on the host (firejail as root
// writes the host's /): the run's ledger named each place before the plan
// was sent, and the next `lab down` takes the run's notes back.
func TestKill9ProbeWritesGoAtLabDown(t *testing.T) {
	needFirejail(t)
	needSandbox(t)
	out := t.TempDir()
	cmd := exec.Command(os.Args[0], "run", "--profile", profilePath("firejail-hardened.yaml"), "--out", out,
		"--probe", probetest.Build(t), "--gates", "reusable-state")
	cmd.Env = append(os.Environ(), asGatehouse+"=1")
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// Wait until a note of the run is in the host's / itself.
	// The note's file is /gatehouse-state-TAG, TAG the scenario's. Each
	// scenario has its own entry, and only assume-breach (root) can write
	// /: check every entry, not the last one listed (the ledger's file
	// names sort as strings, so which is last depends on the scenarios'
	// interleaving; checking the last one alone missed the note in CI).
	var noted []ledger.Entry
	inRoot := ""
	for deadline := time.Now().Add(120 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		noted = noted[:0]
		for _, e := range ledgerOf(t, cmd.Process.Pid) {
			if e.Kind == ledger.ProbeWrite && e.Write != nil && strings.HasPrefix(e.What, "/gatehouse-state-") && !strings.Contains(e.What[1:], "/") {
				noted = append(noted, e)
			}
		}
		for _, e := range noted {
			if holdsAny(e.What, noted) {
				inRoot = e.What
			}
		}
		if inRoot != "" {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("no note of the run reached the host's /gatehouse-state; its output:\n%s", stdout.String())
		}
	}
	var all []ledger.Entry
	for _, e := range ledgerOf(t, cmd.Process.Pid) {
		if e.Kind == ledger.ProbeWrite && e.Write != nil {
			all = append(all, e)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	r := gatehouse(t, t.Context(), "lab", "down")
	if r.code != exitOK {
		t.Fatalf("lab down: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "probe-write") {
		t.Errorf("lab down did not say it took back the probe's writes:\n%s", r.stdout)
	}
	if holdsAny(inRoot, noted) {
		b, _ := os.ReadFile(inRoot)
		t.Errorf("the killed run's notes are still in the host's %s after lab down: %q", inRoot, b)
	}
	// Its other places too: none holds a payload of the run, and nothing
	// of it is still listed.
	for _, e := range all {
		if holdsAny(e.What, []ledger.Entry{e}) {
			t.Errorf("left after lab down: %s", e.What)
		}
	}
	for _, e := range ledgerOf(t, cmd.Process.Pid) {
		t.Errorf("still on the dead run's ledger after lab down: %s %s", e.Kind, e.What)
	}
}

// holdsAny says whether the regular file p holds a payload of the entries.
func holdsAny(p string, es []ledger.Entry) bool {
	fi, err := os.Lstat(p)
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return false
	}
	for _, e := range es {
		if e.Write == nil {
			continue
		}
		for _, pl := range e.Write.Payloads {
			if bytes.Contains(b, []byte(pl)) {
				return true
			}
		}
	}
	return false
}
