package probe_test

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/probe"
	"github.com/gatehouse-dev/gatehouse/internal/probe/probetest"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// TestBinaryIsStatic: the probe runs in FROM-scratch images and jails
// without libc, so it must have no interpreter and no dynamic section.
func TestBinaryIsStatic(t *testing.T) {
	bin := probetest.Build(t)
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("probe has program header %v: not static", p.Type)
		}
	}
	if s := f.Section(".dynamic"); s != nil {
		t.Error("probe has a .dynamic section: not static")
	}
}

func TestBinaryRun(t *testing.T) {
	bin := probetest.Build(t)
	lab := &labServer{}
	srv := httptest.NewServer(lab)
	t.Cleanup(srv.Close)
	plan := wire.Plan{Session: "e2e", Canary: "c4n", TimeoutMS: 2000, Parallel: 2, Steps: []wire.Step{
		{ID: "hello", Kind: wire.KindHTTP, Target: srv.URL + "/hello", Headers: map[string]string{"X-Canary": "c4n"}},
		{ID: "refused", Kind: wire.KindTCP, Target: closedPort(t, "tcp")},
		{ID: "kernel", Kind: wire.KindWrite, Target: "/proc/sys/kernel/core_pattern", Payload: "|/x"},
	}}
	in, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), bin, "run")
	cmd.Stdin = bytes.NewReader(in)
	stdout := wire.NewCapWriter(wire.DefaultLimits().MaxBytes)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("probe run: %v: %s", err, stderr.String())
	}
	reps, problems, err := wire.Decode(bytes.NewReader(stdout.Bytes()), plan, wire.DefaultLimits())
	if err != nil || len(problems) > 0 || len(reps) != 3 {
		t.Fatalf("Decode: %d reports, problems %q, err %v; output %q", len(reps), problems, err, stdout.Bytes())
	}
	got := map[string]wire.Report{}
	for _, r := range reps {
		got[r.ID] = r
	}
	expect(t, got["hello"], wire.OutcomeCompleted, "hello c4n")
	expect(t, got["refused"], wire.OutcomeRefused, "")
	expect(t, got["kernel"], wire.OutcomeDenied, "")
	// The verdict comes from the endpoint's log, not from the report.
	if hits := lab.Hits(); len(hits) != 1 || hits[0] != "GET /hello canary=c4n" {
		t.Errorf("server hits %q", hits)
	}
}

func TestBinaryBadPlan(t *testing.T) {
	bin := probetest.Build(t)
	for name, in := range map[string]string{
		"unknown field": `{"steps":[],"verdict":"pass"}`,
		"duplicate id":  `{"steps":[{"id":"a","kind":"read"},{"id":"a","kind":"read"}]}`,
		"trailing":      `{"steps":[]} {}`,
		"not json":      "\x00\x01",
		"oversized":     `{"session":"` + strings.Repeat("x", wire.MaxPlanBytes) + `"}`,
	} {
		t.Run(name, func(t *testing.T) {
			cmd := exec.CommandContext(t.Context(), bin, "run")
			cmd.Stdin = strings.NewReader(in)
			out, err := cmd.Output()
			var ee *exec.ExitError
			if !asExit(err, &ee) || ee.ExitCode() != probe.ExitBadPlan || len(out) != 0 {
				t.Errorf("exit %v, stdout %q; want exit %d and no output", err, out, probe.ExitBadPlan)
			}
		})
	}
}

func TestBinaryFacts(t *testing.T) {
	bin := probetest.Build(t)
	out, err := exec.CommandContext(t.Context(), bin, "facts").Output()
	if err != nil {
		t.Fatalf("probe facts: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.DisallowUnknownFields()
	var f wire.Facts
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("decode facts: %v in %q", err, out)
	}
	if f.Namespaces["net"] == "" || len(f.Mounts) == 0 || f.Kernel == "" || f.CapEff == "" {
		t.Errorf("facts incomplete: %+v", f)
	}
}
