package wire_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// A report's dial notes are held to the caps: only tcp, udp and http
// attempts carry them, each a literal IP and port, MaxDialed of them.
func TestDecodeDialed(t *testing.T) {
	plan := wire.Plan{Steps: []wire.Step{
		{ID: "h", Kind: wire.KindHTTP, Target: "http://metadata.gatehouse.test/"},
		{ID: "u", Kind: wire.KindUDP, Target: "callback.lab.gatehouse.test:9001"},
		{ID: "r", Kind: wire.KindRead, Target: "/etc/hostname"},
	}}
	rep := func(id, kind, target string, answered bool, dialed ...string) string {
		r := wire.Report{ID: id, Kind: kind, Target: target, Outcome: wire.OutcomeTimeout,
			Start: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Answered: answered, Dialed: dialed}
		return reportLine(t, r)
	}
	many := make([]string, wire.MaxDialed+1)
	for i := range many {
		many[i] = fmt.Sprintf("192.0.2.%d:80", i)
	}
	tests := []struct {
		name string
		line string
		ok   bool
	}{
		{"an http attempt names where it connected", rep("h", wire.KindHTTP, "http://metadata.gatehouse.test/", true, "169.254.169.254:80", "[fd00:ec2::254]:80"), true},
		{"a udp attempt too", rep("u", wire.KindUDP, "callback.lab.gatehouse.test:9001", true, "203.0.113.10:9001"), true},
		{"answered, nothing dialed", rep("h", wire.KindHTTP, "http://metadata.gatehouse.test/", true), true},
		{"a read carries no dial notes", rep("r", wire.KindRead, "/etc/hostname", true), false},
		{"nor an address", rep("r", wire.KindRead, "/etc/hostname", false, "192.0.2.1:80"), false},
		{"a name is not an address dialed", rep("h", wire.KindHTTP, "http://metadata.gatehouse.test/", true, "metadata.gatehouse.test:80"), false},
		{"no port", rep("h", wire.KindHTTP, "http://metadata.gatehouse.test/", true, "192.0.2.1"), false},
		{"too long", rep("h", wire.KindHTTP, "http://metadata.gatehouse.test/", true, "[fd00::1%"+strings.Repeat("z", wire.MaxDialedLen)+"]:80"), false},
		{"too many", rep("h", wire.KindHTTP, "http://metadata.gatehouse.test/", true, many...), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reps, problems, err := wire.Decode(strings.NewReader(tt.line), plan, wire.DefaultLimits())
			if err != nil || (len(reps) == 1) != tt.ok {
				t.Errorf("accepted %d reports, problems %q, err %v; want accepted=%v", len(reps), problems, err, tt.ok)
			}
		})
	}
}
