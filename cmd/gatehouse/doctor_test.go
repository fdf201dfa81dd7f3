package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/doctor"
)

// On this machine (the CI's kind), the doctor says a bwrap run can work,
// exits 0, and its JSON follows the documented schema.
func TestDoctorOnThisMachine(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the doctor reports a non-root machine as not ready, which is this test's point only as root")
	}
	var text, js bytes.Buffer
	if code := run(context.Background(), []string{"doctor"}, &text, &js); code != exitOK {
		t.Fatalf("doctor exit %d, want 0\n%s%s", code, text.String(), js.String())
	}
	if !strings.Contains(text.String(), "bwrap runs: ready") {
		t.Errorf("text report does not say bwrap runs are ready:\n%s", text.String())
	}
	js.Reset()
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"doctor", "--output", "json"}, &js, &stderr); code != exitOK {
		t.Fatalf("doctor --output json exit %d\n%s", code, stderr.String())
	}
	var r struct {
		Schema     string `json:"schema"`
		BwrapReady *bool  `json:"bwrap_ready"`
		Checks     []struct {
			Name     string   `json:"name"`
			Status   string   `json:"status"`
			Found    string   `json:"found"`
			Fix      string   `json:"fix"`
			NeededBy []string `json:"needed_by"`
		} `json:"checks"`
	}
	dec := json.NewDecoder(&js)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("doctor JSON does not match the documented schema: %v", err)
	}
	if r.Schema != doctor.Schema || r.BwrapReady == nil || !*r.BwrapReady {
		t.Fatalf("schema %q, bwrap_ready %v", r.Schema, r.BwrapReady)
	}
	seen := map[string]string{}
	for _, c := range r.Checks {
		seen[c.Name] = c.Status
		if c.Name == "" || len(c.NeededBy) == 0 || (c.Status != "ok") != (c.Fix != "") {
			t.Errorf("check %+v: needs a name, needed_by, and a fix exactly when not ok", c)
		}
	}
	for _, name := range []string{"root", "user-namespaces", "network-namespaces", "cgroup-v2", "bubblewrap", "nftables", "iproute2", "nsenter"} {
		if seen[name] != "ok" {
			t.Errorf("%s: %q on a machine whose bwrap runs work", name, seen[name])
		}
	}
}

// A machine without bubblewrap: exit 1, and the line says what to install.
func TestDoctorExitsOneWhenBwrapCannotRun(t *testing.T) {
	p := doctor.System()
	look := p.LookPath
	p.LookPath = func(f string) (string, error) {
		if f == "bwrap" {
			return "", errors.New("not found")
		}
		return look(f)
	}
	p.Monitor = func(context.Context) error { return nil } // not what this test is about
	var out, stderr bytes.Buffer
	err := doctorWith(context.Background(), nil, p, &out, &stderr)
	if code := report(err, &stderr); code != exitViolation {
		t.Fatalf("exit %d, want %d\n%s", code, exitViolation, out.String())
	}
	if !strings.Contains(out.String(), "apt-get install bubblewrap") {
		t.Errorf("no install line for bubblewrap:\n%s", out.String())
	}
	if code := run(context.Background(), []string{"doctor", "--output", "yaml"}, &out, &stderr); code != exitUsage {
		t.Errorf("--output yaml: exit %d, want %d", code, exitUsage)
	}
}
