package auditmon

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/elastic/go-libaudit/v2/auparse"

	"github.com/gatehouse-dev/gatehouse/detect"
	"github.com/gatehouse-dev/gatehouse/internal/alerts"
)

func TestRuleTexts(t *testing.T) {
	tests := []struct {
		goarch string
		auid   uint32
		want   []string
		err    string
	}{
		{"amd64", 1234567890, []string{
			"-a always,exit -F arch=x86_64 -S connect -S sendto -S sendmsg -F auid=1234567890 -k gatehouse-42-connect",
			"-a always,exit -F arch=x86_64 -S open -S openat -S openat2 -S creat -F auid=1234567890 -k gatehouse-42-open",
			"-a always,exit -F arch=x86_64 -S execve -S execveat -F auid=1234567890 -k gatehouse-42-exec",
		}, ""},
		{"arm64", 7, []string{
			"-a always,exit -F arch=aarch64 -S connect -S sendto -S sendmsg -F auid=7 -k gatehouse-42-connect",
			"-a always,exit -F arch=aarch64 -S openat -S openat2 -F auid=7 -k gatehouse-42-open",
			"-a always,exit -F arch=aarch64 -S execve -S execveat -F auid=7 -k gatehouse-42-exec",
		}, ""},
		{"amd64", 0, nil, "identifies no session"},
		{"amd64", 4294967295, nil, "identifies no session"},
		{"riscv64", 7, nil, "unsupported"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%d", tt.goarch, tt.auid), func(t *testing.T) {
			got, err := ruleTexts(tt.goarch, 42, tt.auid)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want one saying %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("rules:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			// Every rule builds for its arch and its key reads back from
			// the wire format (what the sweep relies on).
			wfs, err := buildRules(got)
			if err != nil {
				t.Fatal(err)
			}
			for i, wf := range wfs {
				k, text := ruleKey(wf)
				if want := key(42, ruleNames[i]); k != want {
					t.Errorf("key read back from %q = %q, want %q", text, k, want)
				}
			}
		})
	}
}

func TestParseKey(t *testing.T) {
	tests := []struct {
		in   string
		pid  int
		what string
		ok   bool
	}{
		{"gatehouse-42-connect", 42, "connect", true},
		{"gatehouse-1-open", 1, "open", true},
		{"gatehouse-42", 0, "", false},
		{"gatehouse-x-open", 0, "", false},
		{"gatehouse-0-open", 0, "", false},
		{"gatehouse--1-open", 0, "", false},
		{"other-42-open", 0, "", false},
		{"", 0, "", false},
	}
	for _, tt := range tests {
		pid, what, ok := parseKey(tt.in)
		if pid != tt.pid || what != tt.what || ok != tt.ok {
			t.Errorf("parseKey(%q) = %d %q %v, want %d %q %v", tt.in, pid, what, ok, tt.pid, tt.what, tt.ok)
		}
	}
}

// msgs parses records as the kernel sends them (type by number, text
// from "audit(").
func msgs(t *testing.T, recs ...string) []*auparse.AuditMessage {
	t.Helper()
	var out []*auparse.AuditMessage
	for _, r := range recs {
		typ, body, _ := strings.Cut(r, " ")
		var mt auparse.AuditMessageType
		if err := mt.UnmarshalText([]byte(typ)); err != nil {
			t.Fatal(err)
		}
		m, err := auparse.Parse(mt, body)
		if err != nil {
			t.Fatalf("parse %q: %v", r, err)
		}
		out = append(out, m)
	}
	return out
}

// The records of one event, as received live, give the same kind and
// object as the same records read from an auditd log by package alerts.
func TestLiveRecordsNormaliseLikeTheLogParser(t *testing.T) {
	const stamp = "audit(1796119200.120:501): "
	sys := func(nr, key string) string {
		return "SYSCALL " + stamp + "arch=c000003e syscall=" + nr + " success=no exit=-111 a0=3 a1=c000012345 a2=10 a3=0 items=0 ppid=10 pid=4321 auid=1234567890 uid=0 gid=0 euid=0 suid=0 fsuid=0 egid=0 sgid=0 fsgid=0 tty=(none) ses=5 comm=\"probe\" exe=\"/usr/bin/probe\" subj=unconfined key=\"" + key + "\""
	}
	self := New(1)
	tests := []struct {
		name            string
		recs            []string
		kind, obj, rule string
		ok              bool
		dropped, noObj  uint64
	}{
		{"connect to a closed loopback port", []string{
			sys("42", key(self.pid, "connect")),
			"SOCKADDR " + stamp + "saddr=02000009" + "7F000001" + "0000000000000000",
			"PROCTITLE " + stamp + "proctitle=70726F6265",
		}, detect.KindConnect, "127.0.0.1:9", "connect", true, 0, 0},
		{"a send toward a resolver is dns", []string{
			sys("44", key(self.pid, "connect")),
			"SOCKADDR " + stamp + "saddr=02000035" + "C0000201" + "0000000000000000",
		}, detect.KindDNS, "192.0.2.1:53", "connect", true, 0, 0},
		{"openat of an absolute path", []string{
			sys("257", key(self.pid, "open")),
			"CWD " + stamp + "cwd=\"/root\"",
			"PATH " + stamp + "item=0 name=\"/etc/gatehouse-canary\" inode=1 dev=00:01 mode=0100644 ouid=0 ogid=0 rdev=00:00 nametype=NORMAL cap_fp=0 cap_fi=0 cap_fe=0 cap_fver=0 cap_frootid=0",
		}, detect.KindOpen, "/etc/gatehouse-canary", "open", true, 0, 0},
		{"a relative open joins the cwd", []string{
			sys("257", key(self.pid, "open")),
			"CWD " + stamp + "cwd=\"/home/agent\"",
			"PATH " + stamp + "item=0 name=\".aws/credentials\" nametype=NORMAL",
		}, detect.KindOpen, "/home/agent/.aws/credentials", "open", true, 0, 0},
		{"execve", []string{
			sys("59", key(self.pid, "exec")),
			"EXECVE " + stamp + "argc=1 a0=\"curl\"",
			"PATH " + stamp + "item=0 name=\"/usr/bin/curl\" nametype=NORMAL",
		}, detect.KindExec, "/usr/bin/curl", "exec", true, 0, 0},
		{"a send on a connected socket has no object", []string{
			sys("44", key(self.pid, "connect")),
		}, "", "", "", false, 0, 1},
		{"another process's rule is not ours", []string{
			sys("42", key(self.pid+1, "connect")),
			"SOCKADDR " + stamp + "saddr=020000097F0000010000000000000000",
		}, "", "", "", false, 0, 0},
		{"another tool's key is not ours", []string{
			sys("42", "netwatch"),
			"SOCKADDR " + stamp + "saddr=020000097F0000010000000000000000",
		}, "", "", "", false, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(1)
			now := time.Now()
			m := msgs(t, tt.recs...)
			e, ok := s.event(m, now)
			if ok != tt.ok || s.Dropped() != tt.dropped || s.NoObject() != tt.noObj {
				t.Fatalf("delivered %v (dropped %d, no object %d), want %v (%d, %d): %+v", ok, s.Dropped(), s.NoObject(), tt.ok, tt.dropped, tt.noObj, e)
			}
			if !ok {
				return
			}
			if e.Source != "audit" || e.Kind != tt.kind || e.Object != tt.obj || e.Rule != tt.rule || e.Key.LoginUID != 1234567890 || e.Key.PID != 4321 || !e.Received.Equal(now) {
				t.Errorf("event %+v, want kind %s object %s rule %s auid 1234567890 pid 4321", e, tt.kind, tt.obj, tt.rule)
			}
			if want := time.Date(2026, 12, 1, 10, 0, 0, 120e6, time.UTC); !e.EventTime.Equal(want) {
				t.Errorf("event time %v, want the record's %v", e.EventTime, want)
			}
			logged, err := alerts.ParseAudit(groupLines(m), now)
			if err != nil || len(logged) != 1 {
				t.Fatalf("the same records as a log: %v %v", logged, err)
			}
			if logged[0].Kind != e.Kind || logged[0].Object != e.Object || logged[0].Key != e.Key {
				t.Errorf("live %s %s %+v, from a log %s %s %+v", e.Kind, e.Object, e.Key, logged[0].Kind, logged[0].Object, logged[0].Key)
			}
		})
	}
}

func TestOwnerRefusal(t *testing.T) {
	if err := checkOwner(0, 10); err != nil {
		t.Errorf("no daemon: %v", err)
	}
	if err := checkOwner(10, 10); err != nil {
		t.Errorf("ourselves: %v", err)
	}
	if err := checkOwner(1<<22+12345, 10); err != nil { // above pid_max: dead
		t.Errorf("a dead daemon's pid: %v", err)
	}
	err := checkOwner(1, 10) // init is alive
	var oe *OwnedError
	if !errors.As(err, &oe) || oe.PID != 1 || !strings.Contains(err.Error(), "pid 1") || !strings.Contains(err.Error(), "stop it") {
		t.Errorf("a live daemon: %v", err)
	}
}
