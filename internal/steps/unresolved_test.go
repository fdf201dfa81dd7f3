package steps

import (
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/detect"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// An attempt named by a lab literal whose name did not resolve in the
// sandbox made no connect: it is not observable (it would take another
// attempt's event to the same address). An address, a legacy address or a
// name that resolved stays observable.
func TestUnresolvedNameIsNotObservable(t *testing.T) {
	lookupErr := `Get "http://metadata.google.internal/x": dial tcp: lookup metadata.google.internal on 203.0.113.53:53: write udp 198.51.100.6:60086->203.0.113.53:53: write: operation not permitted`
	for _, tt := range []struct {
		name       string
		st         wire.Step
		rep        wire.Report
		observable bool
	}{
		{"name, lookup refused", wire.Step{Kind: wire.KindHTTP, Target: "http://metadata.google.internal/x"}, wire.Report{Outcome: "denied", Error: lookupErr}, false},
		{"name, connect timed out", wire.Step{Kind: wire.KindHTTP, Target: "http://metadata.google.internal/x"}, wire.Report{Outcome: "timeout", Error: `Get "http://metadata.google.internal/x": context deadline exceeded`}, true},
		{"address", wire.Step{Kind: wire.KindHTTP, Target: "http://169.254.169.254/x"}, wire.Report{Outcome: "timeout", Error: "context deadline exceeded"}, true},
		{"legacy address", wire.Step{Kind: wire.KindHTTP, Target: "http://2852039166/x"}, wire.Report{Outcome: "denied", Error: "lookup 2852039166 refused"}, true},
		{"tcp name, lookup refused", wire.Step{Kind: wire.KindTCP, Target: "metadata.gatehouse.test:80"}, wire.Report{Outcome: "denied", Error: "dial tcp: lookup metadata.gatehouse.test on 203.0.113.53:53: no such host"}, false},
	} {
		kind, obj, why := observable(tt.st)
		if kind != detect.KindConnect || obj != "169.254.169.254:80" {
			t.Fatalf("%s: observable %q %q %q, want a connect to 169.254.169.254:80", tt.name, kind, obj, why)
		}
		why = unresolved(tt.st, tt.rep)
		if got := why == ""; got != tt.observable {
			t.Errorf("%s: observable %v (%q), want %v", tt.name, got, why, tt.observable)
		}
		if !tt.observable && !strings.Contains(why, "did not resolve") {
			t.Errorf("%s: reason %q", tt.name, why)
		}
	}
}

// A search of a path the sandbox does not have opened nothing: not
// observable. Any other outcome (found, denied, a read error) stays
// observable.
func TestMissingPathIsNotObservable(t *testing.T) {
	for _, tt := range []struct {
		rep        wire.Report
		observable bool
	}{
		{wire.Report{Outcome: "completed", Error: "nothing to search: no such file or directory"}, false},
		{wire.Report{Outcome: "completed"}, true},
		{wire.Report{Outcome: "denied", Error: "open /root: permission denied"}, true},
		{wire.Report{Outcome: "error", Error: "read /etc/x: no such file or directory"}, true},
	} {
		why := notThere("/root", tt.rep)
		if got := why == ""; got != tt.observable {
			t.Errorf("%+v: observable %v (%q), want %v", tt.rep, got, why, tt.observable)
		}
	}
}
