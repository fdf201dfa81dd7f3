package monitor

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/gatehouse-dev/gatehouse/detect"
)

func TestBuiltinRules(t *testing.T) {
	r, err := DefaultRules()
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(BuiltinRulesYAML())
	if want := "sha256:" + hex.EncodeToString(sum[:]); r.Digest() != want {
		t.Errorf("digest %s, want %s", r.Digest(), want)
	}
	p := Params{"credentials": {"/home/agent/.aws/credentials"}}
	tests := []struct {
		o    Observation
		want string
	}{
		{Observation{Kind: detect.KindConnect, Object: "203.0.113.10:80", Dest: "203.0.113.10:80"}, "connect-outside-allowlist"},
		{Observation{Kind: detect.KindConnect, Object: "203.0.113.100:443", Dest: "203.0.113.100:443"}, ""},
		{Observation{Kind: detect.KindConnect, Object: "203.0.113.100:22", Dest: "203.0.113.100:22"}, "connect-outside-allowlist"},
		{Observation{Kind: detect.KindConnect, Object: "169.254.169.254:80", Dest: "169.254.169.254:80"}, "connect-to-cloud-metadata"},
		{Observation{Kind: detect.KindConnect, Object: "[fd00:ec2::254]:80", Dest: "[fd00:ec2::254]:80"}, "connect-to-cloud-metadata"},
		{Observation{Kind: detect.KindDNS, Object: "a.b.oob.gatehouse.test", Dest: "203.0.113.53:53"}, "dns-query-under-canary-zone"},
		{Observation{Kind: detect.KindDNS, Object: "example.com", Dest: "203.0.113.53:53"}, ""},
		{Observation{Kind: detect.KindDNS, Object: "example.com", Dest: "203.0.113.54:53"}, "dns-not-to-resolver"},
		{Observation{Kind: detect.KindDNS, Object: "notoob.gatehouse.test", Dest: "203.0.113.53:53"}, ""},
		{Observation{Kind: detect.KindOpen, Object: "/home/agent/.aws/credentials"}, "read-of-planted-credential"},
		{Observation{Kind: detect.KindOpen, Object: "/etc/hostname"}, ""},
		{Observation{Kind: detect.KindOpen, Object: "/run/docker.sock"}, "touch-of-engine-socket"},
		{Observation{Kind: detect.KindExec, Object: "/usr/bin/bash"}, "exec-of-a-shell"},
		{Observation{Kind: detect.KindExec, Object: "/bin/true"}, ""},
		{Observation{Kind: detect.KindAliveAfter, Object: "sleep"}, "process-alive-after-stop"},
		{Observation{Kind: detect.KindExit, Object: "4242"}, ""},
	}
	for _, tt := range tests {
		if got := r.Evaluate(tt.o, p); got != tt.want {
			t.Errorf("%s %s (dest %s): rule %q, want %q", tt.o.Kind, tt.o.Object, tt.o.Dest, got, tt.want)
		}
	}
	// Params replace a default: another allowed endpoint.
	o := Observation{Kind: detect.KindConnect, Object: "203.0.113.100:80", Dest: "203.0.113.100:80"}
	if got := r.Evaluate(o, Params{"allowed": {"198.51.100.1:443"}}); got != "connect-outside-allowlist" {
		t.Errorf("with another allowlist: %q", got)
	}
}

func TestParseRulesRefuses(t *testing.T) {
	for name, y := range map[string]string{
		"unknown field": "version: 1\nrules:\n  - name: x\n    kind: open\n    objekt: [a]\n",
		"bad kind":      "version: 1\nrules:\n  - name: x\n    kind: ptrace\n",
		"no name":       "version: 1\nrules:\n  - kind: open\n",
		"twice":         "version: 1\nrules:\n  - {name: x, kind: open}\n  - {name: x, kind: exec}\n",
		"undefined var": "version: 1\nrules:\n  - {name: x, kind: open, object: [$nope]}\n",
		"version":       "version: 2\nrules: []\n",
		"exit rule":     "version: 1\nrules:\n  - {name: x, kind: exit}\n",
	} {
		if _, err := ParseRules([]byte(y)); !errors.Is(err, ErrRules) {
			t.Errorf("%s: err %v, want ErrRules", name, err)
		}
	}
}

func TestDecodeRecord(t *testing.T) {
	a, err := nativeABI()
	if err != nil {
		t.Skip(err)
	}
	rec := func(nr int32, data []byte, n uint32) []byte {
		b := make([]byte, recSize)
		b[offNr] = byte(nr)
		b[offNr+1] = byte(nr >> 8)
		b[offCgroup] = 7
		b[offLen] = byte(n)
		copy(b[offData:], data)
		return b
	}
	v6 := []byte{10, 0, 0, 53, 0, 0, 0, 0, 0x20, 0x01, 0x0d, 0xb8, 0xca, 0xfe, 14: 0, 15: 0, 16: 0, 17: 0, 18: 0, 19: 0, 20: 0, 21: 0, 22: 0, 23: 0x10}
	for _, tt := range []struct {
		raw       []byte
		kind, obj string
	}{
		{rec(a.connect, []byte{2, 0, 0, 80, 203, 0, 113, 10}, 0), detect.KindConnect, "203.0.113.10:80"},
		{rec(a.connect, v6, 0), detect.KindDNS, "[2001:db8:cafe::10]:53"},
		{rec(a.connect, []byte{10, 0, 0, 80, 8: 0, 18: 0xff, 19: 0xff, 20: 198, 21: 51, 22: 100, 23: 7}, 0), detect.KindConnect, "198.51.100.7:80"},
		{rec(a.openat, []byte("/etc/passwd\x00junk"), 12), detect.KindOpen, "/etc/passwd"},
		{rec(a.execve, []byte("/bin/sh\x00"), 8), detect.KindExec, "/bin/sh"},
	} {
		r, err := parseRecord(tt.raw)
		if err != nil {
			t.Fatal(err)
		}
		o, ok := r.observation()
		if !ok || o.Kind != tt.kind || o.Object != tt.obj {
			t.Errorf("decoded %v %q %q, want %q %q", ok, o.Kind, o.Object, tt.kind, tt.obj)
		}
	}
	// Life-cycle records: an exit (object the process, the task in Call)
	// and the first syscall of a process after its cgroup's stop.
	life := func(nr uint32, fd uint32, comm string) []byte {
		b := rec(0, []byte(comm+"\x00"), 0)
		binary.LittleEndian.PutUint32(b[offNr:], nr)
		binary.LittleEndian.PutUint32(b[offFd:], fd)
		binary.LittleEndian.PutUint64(b[offPidTgid:], 4242<<32|4250)
		return b
	}
	for _, tt := range []struct {
		raw             []byte
		kind, obj, call string
	}{
		{life(recExit, 1, "sleep"), detect.KindExit, "4242", "exit of sleep tid 4250"},
		{life(recAlive, uint32(a.openat), "sleep"), detect.KindAliveAfter, "sleep", "openat"},
		{life(recAlive, 9999, "sleep"), detect.KindAliveAfter, "sleep", "syscall 9999"},
	} {
		r, err := parseRecord(tt.raw)
		if err != nil {
			t.Fatal(err)
		}
		o, ok := r.observation()
		if !ok || o.Kind != tt.kind || o.Object != tt.obj || o.Call != tt.call {
			t.Errorf("decoded %v %q %q %q, want %q %q %q", ok, o.Kind, o.Object, o.Call, tt.kind, tt.obj, tt.call)
		}
	}
	if _, err := parseRecord(make([]byte, recSize-1)); err == nil {
		t.Error("a short record decoded")
	}
	// An unreadable path is counted, not matched.
	r, _ := parseRecord(rec(a.openat, nil, 0))
	if _, ok := r.observation(); ok || !r.unreadable() {
		t.Error("an empty path was not reported unreadable")
	}
}

func FuzzParseRecord(f *testing.F) {
	f.Add(make([]byte, recSize))
	f.Fuzz(func(t *testing.T, b []byte) {
		if r, err := parseRecord(b); err == nil {
			_, _ = r.observation()
		}
	})
}
