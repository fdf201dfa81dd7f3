package probe

import (
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// The guard every takedown passes first: a namespace the plan names as
// outside, an unreadable one, or a kind the plan names none of is refused
// (with the probe's own refusal, not the kernel's), so a probe run on the
// host or in the lab changes nothing there.
func TestOwnNamespaceRefusesWhatItCannotTellFromTheHost(t *testing.T) {
	own, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Skipf("no /proc/self/ns: %v", err)
	}
	tests := []struct {
		name    string
		outside []string
		allowed bool
	}{
		{"no outside list at all", nil, false},
		{"no namespace of this kind named", []string{"mnt:[1]"}, false},
		{"its own namespace is named as outside", []string{"net:[1]", own}, false},
		{"a different namespace is named", []string{"net:[1]"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ownNamespace("net", tt.outside)
			if tt.allowed {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), wire.RefusePrefix) || classify(err) != wire.OutcomeDenied {
				t.Fatalf("got %v (outcome %s), want the probe's own refusal", err, classify(err))
			}
		})
	}
}

// Every takedown refuses before touching anything when its namespace is
// the one the test runs in: the same path a probe run on the host takes.
// Only the guard runs here, so the test is safe as root on a shared host.
func TestEveryTakedownRefusesInTheHarnessNamespaces(t *testing.T) {
	var outside []string
	for _, k := range []string{"net", "mnt", "pid", "cgroup"} {
		l, err := os.Readlink("/proc/self/ns/" + k)
		if err != nil {
			t.Skipf("no /proc/self/ns/%s: %v", k, err)
		}
		outside = append(outside, l)
	}
	for _, c := range wire.TakedownControls {
		if c == wire.TakedownProxy {
			continue // it drops proxy variables first (harmless), then refuses to kill
		}
		t.Run(c, func(t *testing.T) {
			rep := wire.Report{}
			err := doTakedown(t.Context(), wire.Step{Kind: wire.KindTakedown, Target: c, Outside: outside}, &rep)
			if err == nil || !strings.HasPrefix(err.Error(), wire.RefusePrefix) {
				t.Fatalf("got %v, excerpt %q; want the probe's refusal", err, rep.Excerpt)
			}
			if !strings.HasPrefix(rep.Excerpt, wire.TakedownSkipped) || strings.Contains(rep.Excerpt, wire.TakedownChanged) {
				t.Fatalf("excerpt %q: want only a skipped line", rep.Excerpt)
			}
		})
	}
}

func TestProxyTakedownRefusesToKillInTheHarnessPidNamespace(t *testing.T) {
	pid, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		t.Skip(err)
	}
	t.Setenv("HTTP_PROXY", "http://127.0.0.1:3128")
	rep := wire.Report{}
	err = doTakedown(t.Context(), wire.Step{Kind: wire.KindTakedown, Target: wire.TakedownProxy, Outside: []string{pid}}, &rep)
	if err == nil || !strings.HasPrefix(err.Error(), wire.RefusePrefix) || !strings.Contains(rep.Excerpt, "kill proxy bridges") {
		t.Fatalf("got %v, excerpt %q", err, rep.Excerpt)
	}
	if _, set := os.LookupEnv("HTTP_PROXY"); set {
		t.Error("HTTP_PROXY still set in the probe's environment")
	}
}

func TestParseListenersFindsLoopbackProxyPorts(t *testing.T) {
	table := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:0C38 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1111 1 0000000000000000 100 0 0 10 0
   1: 0100007F:1F90 00000000:0000 01 00000000:00000000 00:00000000 00000000     0        0 2222 1 0000000000000000 100 0 0 10 0
   2: 0A00000A:0C38 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 3333 1 0000000000000000 100 0 0 10 0
   3: 00000000:0438 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4444 1 0000000000000000 100 0 0 10 0
   4: 0100007F:0050 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 5555 1 0000000000000000 100 0 0 10 0
`
	got := parseListeners(table, map[int]bool{3128: true, 8080: true, 1080: true})
	want := map[uint64]string{1111: "127.0.0.1:3128", 4444: "0.0.0.0:1080"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("inode %d: got %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
	v6 := "   0: 00000000000000000000000001000000:0C38 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 7777 1\n"
	if got := parseListeners(v6, map[int]bool{3128: true}); got[7777] != "[::1]:3128" {
		t.Errorf("IPv6 loopback listener: got %v", got)
	}
}

func TestRemountKeepsLockedFlagsAndStaysOnTheMountPoint(t *testing.T) {
	f := remountFlags("ro,nosuid,nodev,noexec,relatime")
	if f&unix.MS_BIND == 0 || f&unix.MS_REMOUNT == 0 {
		t.Error("a remount without MS_BIND changes the file system for every namespace")
	}
	if f&unix.MS_RDONLY != 0 {
		t.Error("the remount keeps MS_RDONLY")
	}
	for _, k := range []uintptr{unix.MS_NOSUID, unix.MS_NODEV, unix.MS_NOEXEC, unix.MS_RELATIME} {
		if f&k == 0 {
			t.Errorf("flag %#x dropped: the kernel refuses that in a user namespace", k)
		}
	}
}

func TestTakedownOutcomes(t *testing.T) {
	tests := []struct {
		name  string
		lines func(*tdLog)
		want  string
	}{
		{"a change", func(l *tdLog) { l.result("x", nil); l.result("y", syscall.EPERM) }, wire.OutcomeCompleted},
		{"all refused", func(l *tdLog) { l.result("x", syscall.EPERM); l.result("y", syscall.EROFS) }, wire.OutcomeDenied},
		{"nothing to do", func(l *tdLog) { l.add(wire.TakedownUnchanged, "none") }, wire.OutcomeCompleted},
		{"failures", func(l *tdLog) { l.result("x", errors.New("boom")) }, wire.OutcomeError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &tdLog{}
			tt.lines(l)
			if got := classify(l.err()); got != tt.want {
				t.Errorf("outcome %s, want %s", got, tt.want)
			}
		})
	}
}

func TestNetlinkAttributesRoundTrip(t *testing.T) {
	b := nlAttr(nlAttr(nil, 1, append([]byte("gatehouse_egress"), 0)), 2, []byte{0, 0, 0, 1})
	a := nlAttrs(b)
	if cString(a[1]) != "gatehouse_egress" || len(a[2]) != 4 || a[2][3] != 1 {
		t.Fatalf("got %v", a)
	}
	if len(nlAttrs([]byte{0xff, 0xff, 1})) != 0 {
		t.Error("a truncated attribute was parsed")
	}
}
