package wire_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

var update = flag.Bool("update", false, "rewrite the golden files of the wire format")

// goldenPlan sets every field of a plan and of a step, so that a field
// renamed, retagged or dropped changes the encoding.
func goldenPlan() wire.Plan {
	return wire.Plan{
		Session: "s1", Canary: "gh0123456789abcdef", TimeoutMS: 1500, Parallel: 4, Control: true,
		Steps: []wire.Step{{
			ID: "a1", Kind: wire.KindHTTP, Target: "http://192.0.2.10/x", Method: "PUT",
			Headers: map[string]string{"B": "2", "A": "1"}, Body: "b", Payload: "p",
			Server: "192.0.2.53:53", QType: "TXT", Binary: []byte{0, 1, 2, 0xff},
			Follow: true, UseProxy: true, Via: wire.ViaConnect, Inner: "https://x/", SNI: "x",
			Absolute: true, Again: true, Fill: 4096,
			Then:       &wire.Chain{Target: "http://192.0.2.10/t", Method: "GET", Header: "X-T", Extra: map[string]string{"k": "v"}},
			DurationMS: 2000, Escape: true, Path: "/tmp/beat", Use: []string{"http://u/"},
			Hints: []string{"/etc"}, Outside: []string{"net:[1]"}, Spare: []string{"inet gh"},
			ChangedSince: time.Date(2026, 11, 30, 11, 19, 30, 0, time.UTC),
		}, {
			ID: "a2", Kind: wire.KindDNS, Target: "x.example",
		}},
	}
}

// goldenReport sets every field of a report, times in two zones.
func goldenReport() wire.Report {
	at := time.Date(2026, 11, 30, 11, 19, 37, 123456789, time.UTC)
	return wire.Report{
		ID: "a1", Kind: wire.KindStash, Target: "/tmp/x", Outcome: wire.OutcomeCompleted,
		Error: "e", Status: 200, Bytes: 7, Excerpt: "gh0123456789abcdef /tmp/x\n",
		Start: at, DurationMS: 12.5,
		ActiveFrom: at.Add(time.Millisecond), ActiveTo: at.Add(2 * time.Millisecond).In(time.FixedZone("X", 3600)),
		Wrote: []string{"/tmp/x/f"}, Made: []string{"/tmp/x"},
	}
}

func goldenFacts() wire.Facts {
	return wire.Facts{
		UID: 1000, GID: 1000, UIDMap: "0 1000 1", GIDMap: "0 1000 1", CapEff: "0", CapBnd: "1ff",
		Seccomp: "2", NoNewPrivs: "1", Namespaces: map[string]string{"net": "net:[4026532]", "pid": "pid:[4026531]"},
		Mounts: []string{"/ ext4 rw"}, Hostname: "h", Kernel: "6.1", Addrs: []string{"10.0.0.2/24"},
		Resolv: "nameserver 10.0.0.1\n", Errors: []string{"x"},
	}
}

// goldenValues are the words of the format: kinds, outcomes, proxy ways,
// takedown controls and the fixed strings both sides match on.
func goldenValues() map[string]any {
	xsName, xsContent := wire.XSFile("gh0123456789abcdef", "/tmp")
	return map[string]any{
		"kinds": []string{wire.KindHTTP, wire.KindTCP, wire.KindUDP, wire.KindICMP, wire.KindDNS, wire.KindRead,
			wire.KindWrite, wire.KindList, wire.KindProxy, wire.KindStash, wire.KindTakedown, wire.KindHunt,
			wire.KindHostCheck, wire.KindFind, wire.KindSend, wire.KindReceive, wire.KindHeartbeat},
		"outcomes": []string{wire.OutcomeCompleted, wire.OutcomePartial, wire.OutcomeRefused, wire.OutcomeUnreachable,
			wire.OutcomeTimeout, wire.OutcomeDenied, wire.OutcomeError, wire.OutcomeNoProxy},
		"vias":     []string{wire.ViaHTTP, wire.ViaConnect, wire.ViaSOCKS5},
		"takedown": append([]string{wire.TakedownChanged, wire.TakedownRefused, wire.TakedownSkipped}, wire.TakedownControls...),
		"strings": []string{wire.SandboxPath, wire.SessionHeader, wire.AttemptHeader, wire.ActivePrefix, wire.HoldReady,
			wire.RefusePrefix, wire.HuntPrefix, xsName, xsContent, wire.XSSocket("gh0123456789abcdef"),
			wire.HeartbeatName("gh0123456789abcdef"), wire.BeatLine("gh0123456789abcdef"), wire.CredHash("v"),
			wire.HeartbeatEvery.String(), wire.MaxDuration.String()},
		"caps": []int{wire.MaxPlanBytes, wire.MaxSteps, wire.MaxErrorLen, wire.MaxExcerptLen, wire.MaxFindingsLen,
			wire.MaxWrote, wire.MaxWroteBytes, wire.MaxFill},
	}
}

// The wire format is byte for byte what it was: a plan, a report and the
// facts encode as the files in testdata/wire (written by -update from the
// code before the format moved to its own package), and the report decodes
// back, strictly, to the same value.
func TestWireFormatIsUnchanged(t *testing.T) {
	for name, v := range map[string]any{"plan.json": goldenPlan(), "report.json": goldenReport(), "facts.json": goldenFacts(), "values.json": goldenValues()} {
		got, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, '\n')
		file := filepath.Join("testdata", name)
		if *update {
			if err := os.WriteFile(file, got, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s changed:\n got %s\nwant %s", name, got, want)
		}
	}
	line, err := os.ReadFile(filepath.Join("testdata", "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	plan := wire.Plan{Steps: []wire.Step{{ID: "a1", Kind: wire.KindStash, Target: "/tmp/x"}}}
	reps, problems, err := wire.Decode(bytes.NewReader(line), plan, wire.DefaultLimits())
	if err != nil || len(problems) != 0 || len(reps) != 1 {
		t.Fatalf("decode the golden report: %v %v %v", reps, problems, err)
	}
	want := goldenReport()
	if !reps[0].Start.Equal(want.Start) || !reps[0].ActiveTo.Equal(want.ActiveTo) {
		t.Errorf("times decoded as %v, %v", reps[0].Start, reps[0].ActiveTo)
	}
	reps[0].Start, reps[0].ActiveFrom, reps[0].ActiveTo = want.Start, want.ActiveFrom, want.ActiveTo
	if !reflect.DeepEqual(reps[0], want) {
		t.Errorf("decoded %+v\nwant %+v", reps[0], want)
	}
	p, err := wire.ReadPlan(bytes.NewReader(mustRead(t, "plan.json")))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p, goldenPlan()) {
		t.Errorf("plan read back as %+v", p)
	}
}

func mustRead(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
