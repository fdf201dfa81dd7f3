package steps

import (
	"reflect"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

// TestOutsideProcesses: the facts a target reports become the processes
// host-access compares; errors are reasons, never namespaces, and the
// probe's own view (ns.*) is not taken.
func TestOutsideProcesses(t *testing.T) {
	facts := map[string]string{
		"outside.ns.pid": "pid:[1]", "outside.ns.net": "net:[2]", "outside.role": "gVisor sentry", "outside.pid": "10",
		"outside.cmdline":      "runsc-sandbox boot c1",
		"outside.gofer.ns.net": "net:[3]", "outside.gofer.role": "gVisor gofer", "outside.gofer.pid": "11",
		"outside.gofer.ns.bogus": "x:[9]", // not a namespace kind
		"outside.stub-12.error":  "gone",
		"outside.init.ns.error":  "unreadable",
		"ns.pid":                 "pid:[4026531836]", // the probe's word
	}
	got, unread := outsideProcesses(facts)
	want := []evidence.HostProcess{
		{Role: "gVisor sentry", PID: 10, Cmdline: "runsc-sandbox boot c1", Namespaces: map[string]string{"pid": "pid:[1]", "net": "net:[2]"}},
		{Role: "gVisor gofer", PID: 11, Namespaces: map[string]string{"net": "net:[3]"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("processes:\n got %+v\nwant %+v", got, want)
	}
	if w := []string{"init: unreadable", "stub-12: gone"}; !reflect.DeepEqual(unread, w) {
		t.Errorf("unread = %q, want %q", unread, w)
	}
	// A target that read nothing gives only its reason.
	got, unread = outsideProcesses(map[string]string{"outside.ns.error": "remote daemon"})
	if len(got) != 0 || !reflect.DeepEqual(unread, []string{"remote daemon"}) {
		t.Errorf("nothing read: got %+v, unread %q", got, unread)
	}
}

// TestWithEngine: the engine's namespaces join the host side once each,
// and only the kinds compared.
func TestWithEngine(t *testing.T) {
	host := []evidence.HostNamespace{{Label: "harness pid", Link: "pid:[1]"}, {Label: "lab net", Link: "net:[2]"}}
	got := withEngine(host, map[string]string{"engine.ns.pid": "pid:[1]", "engine.ns.net": "net:[3]", "engine.ns.uts": "uts:[4]", "outside.ns.net": "net:[5]"})
	want := append(host, evidence.HostNamespace{Label: "engine net", Link: "net:[3]"})
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}
