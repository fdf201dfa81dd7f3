package alerts_test

import (
	"bufio"
	"bytes"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gatehouse-dev/gatehouse/detect"
	"github.com/gatehouse-dev/gatehouse/internal/alerts"
)

var received = time.Date(2026, 12, 1, 10, 0, 5, 0, time.UTC)

func at(ms int) time.Time {
	return time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC).Add(time.Duration(ms) * time.Millisecond)
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// lines returns the file's lines without their newlines (what a follower hands a parser).
func lines(t *testing.T, name string) [][]byte {
	var out [][]byte
	for l := range bytes.Lines(readFile(t, name)) {
		out = append(out, bytes.TrimRight(l, "\n"))
	}
	return out
}

// checkEvents compares events without Raw, then checks each Raw is exactly
// one of the given inputs.
func checkEvents(t *testing.T, got, want []detect.Event) {
	t.Helper()
	if d := cmp.Diff(want, got, cmpopts.IgnoreFields(detect.Event{}, "Raw")); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
}

func TestFalcoFileSample(t *testing.T) {
	want := []detect.Event{
		{Source: "falco", Rule: "Unexpected outbound connection", Kind: "connect", Object: "203.0.113.10:80", Key: detect.SessionKey{LoginUID: 4242, PID: 31337}, EventTime: at(120)},
		{Source: "falco", Rule: "Read planted credential", Kind: "open", Object: "/home/agent/.aws/credentials", Key: detect.SessionKey{LoginUID: 4242, PID: 31340}, EventTime: at(250)},
		{Source: "falco", Rule: "Unexpected DNS resolver", Kind: "dns", Object: "203.0.113.53:53", Key: detect.SessionKey{ContainerID: "3f1c0a9b2d4e", PID: 4021}, EventTime: at(300)},
		{Source: "falco", Rule: "Unexpected outbound connection", Kind: "connect", Object: "[2001:db8:cafe::10]:80", Key: detect.SessionKey{LoginUID: 4242, PID: 31341}, EventTime: at(400)},
		{Source: "falco", Rule: "Engine socket touched", Kind: "connect", Object: "/var/run/docker.sock", Key: detect.SessionKey{LoginUID: 4242, PID: 31342}, EventTime: at(500)},
		{Source: "falco", Rule: "Shell in session", Kind: "exec", Object: "/bin/sh", Key: detect.SessionKey{LoginUID: 4242, PID: 31343}, EventTime: at(600)},
		{Source: "falco", Rule: "Change thread namespace", Kind: "", Key: detect.SessionKey{LoginUID: 4242, PID: 31344}, EventTime: at(700)},
		{Source: "falco", Rule: "Falco internal: syscall event drop", EventTime: at(800)},
	}
	var got []detect.Event
	for _, l := range lines(t, "falco_file.jsonl") {
		es, err := alerts.ParseFalco(l, received)
		if err != nil {
			t.Fatalf("ParseFalco: %v", err)
		}
		if len(es) != 1 || !bytes.Equal(es[0].Raw, l) {
			t.Fatalf("want one event keeping the exact line, got %d", len(es))
		}
		got = append(got, es...)
	}
	for i := range want {
		want[i].Received = received
	}
	checkEvents(t, got, want)
}

func TestTetragonSample(t *testing.T) {
	want := []detect.Event{
		{Source: "tetragon", Rule: "process_exec", Kind: "exec", Object: "/usr/local/bin/gatehouse-probe", Key: detect.SessionKey{LoginUID: 4242, PID: 31337}, EventTime: at(100)},
		{Source: "tetragon", Rule: "gatehouse-egress", Kind: "connect", Object: "203.0.113.10:80", Key: detect.SessionKey{LoginUID: 4242, PID: 31337}, EventTime: at(120)},
		{Source: "tetragon", Rule: "gatehouse-egress", Kind: "connect", Object: "[2001:db8:cafe::10]:80", Key: detect.SessionKey{LoginUID: 4242, PID: 31341, ContainerID: "3f1c0a9b2d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d2e3f4a5b6c7d8e9f0a"}, EventTime: at(400)},
		{Source: "tetragon", Rule: "planted-credentials", Kind: "open", Object: "/home/agent/.aws/credentials", Key: detect.SessionKey{LoginUID: 4242, PID: 31340}, EventTime: at(250)},
		{Source: "tetragon", Rule: "udp_sendmsg", Kind: "dns", Object: "203.0.113.53:53", Key: detect.SessionKey{PID: 4021}, EventTime: at(300)},
		{Source: "tetragon", Rule: "process_exit", Key: detect.SessionKey{LoginUID: 4242, PID: 31337}, EventTime: at(2000)},
	}
	var got []detect.Event
	for _, l := range lines(t, "tetragon.jsonl") {
		es, err := alerts.ParseTetragon(l, received)
		if err != nil {
			t.Fatalf("ParseTetragon: %v", err)
		}
		if len(es) != 1 || !bytes.Equal(es[0].Raw, l) {
			t.Fatalf("want one event keeping the exact line, got %d", len(es))
		}
		got = append(got, es...)
	}
	for i := range want {
		want[i].Received = received
	}
	checkEvents(t, got, want)
}

func TestAuditSample(t *testing.T) {
	raw := append(readFile(t, "audit.log"), readFile(t, "audit_enriched.log")...)
	got, err := alerts.ParseAudit(raw, received)
	if err != nil {
		t.Fatalf("ParseAudit: %v", err)
	}
	want := []detect.Event{
		{Source: "audit", Rule: "gh-net", Kind: "connect", Object: "203.0.113.10:80", Key: detect.SessionKey{LoginUID: 4242, PID: 31337}, EventTime: at(120)},
		{Source: "audit", Rule: "gh-cred", Kind: "open", Object: "/home/agent/.aws/credentials", Key: detect.SessionKey{LoginUID: 4242, PID: 31340}, EventTime: at(250)},
		{Source: "audit", Rule: "SYSCALL", Kind: "connect", Object: "[2001:db8:cafe::10]:80", Key: detect.SessionKey{LoginUID: 4242, PID: 31341}, EventTime: at(400)},
		{Source: "audit", Rule: "gh-exec", Kind: "exec", Object: "/bin/sh", Key: detect.SessionKey{LoginUID: 4242, PID: 31343}, EventTime: at(600)},
		{Source: "audit", Rule: "USER_LOGIN", EventTime: at(700)},
		{Source: "audit", Rule: "gh-net", Kind: "dns", Object: "203.0.113.53:53", Key: detect.SessionKey{LoginUID: 4242, PID: 31345}, EventTime: at(300)},
	}
	for i := range want {
		want[i].Received = received
	}
	checkEvents(t, got, want)
	// Each group's Raw is its records' exact lines (EOE ends a group and is not kept).
	if n := bytes.Count(got[0].Raw, []byte("\n")); n != 3 || !bytes.HasPrefix(got[0].Raw, []byte("type=SYSCALL msg=audit(1796119200.120:501)")) {
		t.Errorf("first group raw = %q", got[0].Raw)
	}
}

func TestOCSFSamples(t *testing.T) {
	got, err := alerts.ParseOCSF(readFile(t, "ocsf_finding.json"), received)
	if err != nil {
		t.Fatal(err)
	}
	batch, err := alerts.ParseOCSF(readFile(t, "ocsf_batch.json"), received)
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, batch...)
	want := []detect.Event{
		{Source: "ocsf", Rule: "egress-not-allowed", Kind: "connect", Object: "203.0.113.10:80", Key: detect.SessionKey{LoginUID: 4242, PID: 31337}, EventTime: at(120)},
		{Source: "ocsf", Rule: "DNS query under the canary zone", Kind: "dns", Object: "exfil-1a2b.canary.lab.test", Key: detect.SessionKey{ContainerID: "3f1c0a9b2d4e"}, EventTime: at(300)},
		{Source: "ocsf", Rule: "planted-credentials", Kind: "open", Object: "/home/agent/.aws/credentials", Key: detect.SessionKey{LoginUID: 4242, PID: 31340}, EventTime: at(250)},
		{Source: "ocsf", Rule: "Account change", EventTime: at(700)},
	}
	for i := range want {
		want[i].Received = received
	}
	checkEvents(t, got, want)
	if !bytes.HasPrefix(got[2].Raw, []byte(`{"class_uid":2004`)) || !bytes.HasSuffix(got[2].Raw, []byte(`"loginuid":4242}}`)) {
		t.Errorf("batch element raw is not its exact bytes: %q", got[2].Raw)
	}
}

func TestMalformedIsAnErrorNeverAPanic(t *testing.T) {
	parsers := map[string]func([]byte, time.Time) ([]detect.Event, error){
		"falco": alerts.ParseFalco, "tetragon": alerts.ParseTetragon, "audit": alerts.ParseAudit, "ocsf": alerts.ParseOCSF,
	}
	inputs := map[string][]string{
		"falco":    {"", "not json", `[1,2]`, `{"rule":"x","time":"yesterday"}`, `{"rule":1}`, `{"rule":"x"} trailing`, `{"rule":"x","output_fields":[]}`},
		"tetragon": {"", "{", `"process_exec"`, `{"process_exec":{"process":{"pid":"x"}}}`, `{"time":"noon","process_exec":{}}`},
		"audit":    {"", "\n\n", "hello world", "type=SYSCALL msg=audit(abc:1): x=y", "type=SYSCALL msg=audit(1.2", "type=SYSCALL msg=audit(1.2:3): ok\nnot a record"},
		"ocsf":     {"", "[]", "[1]", `{"class_uid":"two"}`, `{"class_uid":2004,"evidences":{}}`},
	}
	for format, ins := range inputs {
		for _, in := range ins {
			_, err := parsers[format]([]byte(in), received)
			if !errors.Is(err, alerts.ErrMalformed) {
				t.Errorf("%s(%q): err = %v, want ErrMalformed", format, in, err)
			}
		}
	}
}

// readRequest reads a recorded HTTP request.
func readRequest(t *testing.T, name string) *http.Request {
	t.Helper()
	req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(readFile(t, name))))
	if err != nil {
		t.Fatal(err)
	}
	return req
}
