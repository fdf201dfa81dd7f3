package fake_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/detect"
	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
	"github.com/gatehouse-dev/gatehouse/targets"
	"github.com/gatehouse-dev/gatehouse/targets/fake"
)

// heard is a fake.Lab that keeps what arrives.
type heard struct {
	mu   sync.Mutex
	hits []evidence.Hit
}

func (h *heard) Add(hit evidence.Hit) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.hits = append(h.hits, hit)
}

var plan = wire.Plan{Session: "s1", Steps: []wire.Step{
	{ID: "positive-control", Kind: wire.KindHTTP, Target: "http://inference.lab/", Headers: map[string]string{"X-Gatehouse-Control": "tok"}},
	{ID: "tcp", Kind: wire.KindTCP, Target: "203.0.113.10:9000"},
	{ID: "dns", Kind: wire.KindDNS, Target: "x.canary.test"},
	{ID: "imds", Kind: wire.KindHTTP, Target: "http://169.254.169.254/latest/"},
	{ID: "proxy", Kind: wire.KindProxy, Target: "http://203.0.113.10/"},
}}

func start(t *testing.T, tgt *fake.Target) *fake.Session {
	t.Helper()
	sess, err := tgt.Start(context.Background(), targets.Spec{Name: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	return sess.(*fake.Session)
}

// probe runs the plan through the session's probe and decodes its reports.
func probe(t *testing.T, s *fake.Session, p wire.Plan) []wire.Report {
	t.Helper()
	in, _ := json.Marshal(p)
	var out bytes.Buffer
	res, err := s.Exec(context.Background(), targets.Command{Args: []string{wire.SandboxPath, "run"}, Stdin: bytes.NewReader(in), Stdout: &out})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("probe run: exit %d, %v", res.ExitCode, err)
	}
	return decode(t, out.Bytes())
}

func decode(t *testing.T, b []byte) []wire.Report {
	t.Helper()
	var reps []wire.Report
	for dec := json.NewDecoder(bytes.NewReader(b)); dec.More(); {
		var r wire.Report
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("report: %v\n%s", err, b)
		}
		reps = append(reps, r)
	}
	return reps
}

func TestZeroValueLetsNothingOut(t *testing.T) {
	tgt := &fake.Target{}
	s := start(t, tgt)
	reps := probe(t, s, plan)
	if len(reps) != len(plan.Steps) {
		t.Fatalf("%d reports for %d steps", len(reps), len(plan.Steps))
	}
	for i, r := range reps {
		want := wire.OutcomeTimeout
		if plan.Steps[i].Kind == wire.KindProxy {
			want = wire.OutcomeNoProxy
		}
		if r.ID != plan.Steps[i].ID || r.Outcome != want || r.Start.IsZero() || r.ActiveFrom.IsZero() || r.ActiveTo.Before(r.ActiveFrom) {
			t.Errorf("report %+v: want %s with its start and window", r, want)
		}
	}
	if tgt.Name() != "fake" || s.N() != 1 || s.Spec().Name != "s1" {
		t.Errorf("name %q, n %d, spec %+v", tgt.Name(), s.N(), s.Spec())
	}
	if cfg, err := s.Inspect(context.Background()); err != nil || cfg.Target != "fake" || cfg.Runtime != "fake" {
		t.Errorf("inspect %+v, %v", cfg, err)
	}
	if _, err := s.SessionKeys(context.Background()); !errors.Is(err, targets.ErrUnsupported) {
		t.Errorf("session keys: %v, want ErrUnsupported", err)
	}
	if _, err := s.Processes(context.Background()); !errors.Is(err, targets.ErrUnsupported) {
		t.Errorf("processes: %v, want ErrUnsupported", err)
	}
	if err := s.Stop(context.Background()); err != nil {
		t.Errorf("stop: %v", err)
	}
	if res, _ := s.Exec(context.Background(), targets.Command{Args: []string{"sh", "-c", "true"}}); res.ExitCode != 127 {
		t.Errorf("a command that is not the probe: exit %d, want 127", res.ExitCode)
	}
	if s2 := start(t, tgt); s2.N() != 2 {
		t.Errorf("second session: n %d, want 2", s2.N())
	}
}

func TestDeliverTellsTheLab(t *testing.T) {
	lab := &heard{}
	s := start(t, &fake.Target{Lab: lab, Deliver: func(st wire.Step) bool { return st.Kind != wire.KindProxy }})
	reps := probe(t, s, plan)
	want := []string{"inference", "callback", "dns-authority", "metadata-aws"}
	if len(lab.hits) != len(want) {
		t.Fatalf("hits %+v, want %v", lab.hits, want)
	}
	for i, h := range lab.hits {
		if h.Endpoint != want[i] || h.Session != "s1" || h.Proto != plan.Steps[i].Kind || h.Summary != plan.Steps[i].Target || h.Time.IsZero() {
			t.Errorf("hit %d: %+v, want at %s", i, h, want[i])
		}
	}
	if lab.hits[0].Data != "tok" {
		t.Errorf("the control's hit carries %q, want its header value", lab.hits[0].Data)
	}
	if reps[0].Outcome != wire.OutcomeTimeout {
		t.Errorf("without Answer a delivered attempt is still reported blocked: %+v", reps[0])
	}
}

func TestAnswerIsTheProbesWord(t *testing.T) {
	answer := func(s *fake.Session, st wire.Step) wire.Report {
		return wire.Report{ID: "lies", Outcome: wire.OutcomeCompleted, Excerpt: s.Spec().Name + " " + st.ID}
	}
	for _, noWindows := range []bool{false, true} {
		s := start(t, &fake.Target{Answer: answer, NoWindows: noWindows})
		for i, r := range probe(t, s, plan) {
			if r.ID != plan.Steps[i].ID || r.Kind != plan.Steps[i].Kind || r.Outcome != wire.OutcomeCompleted || r.Excerpt != "s1 "+r.ID || r.Start.IsZero() {
				t.Errorf("report %+v: want the answer with the step's own ID, kind and start", r)
			}
			if got := !r.ActiveFrom.IsZero(); got == noWindows {
				t.Errorf("NoWindows %v: window %v–%v", noWindows, r.ActiveFrom, r.ActiveTo)
			}
		}
	}
}

func TestOutputReplacesTheReports(t *testing.T) {
	lab := &heard{}
	s := start(t, &fake.Target{Lab: lab, Deliver: func(wire.Step) bool { return true },
		Output: func(p wire.Plan, w io.Writer) error {
			_, err := fmt.Fprintf(w, "garbage for %d steps\n", len(p.Steps))
			return err
		}})
	var out bytes.Buffer
	in, _ := json.Marshal(plan)
	if _, err := s.Exec(context.Background(), targets.Command{Args: []string{wire.SandboxPath, "run"}, Stdin: bytes.NewReader(in), Stdout: &out}); err != nil {
		t.Fatal(err)
	}
	if out.String() != "garbage for 5 steps\n" || len(lab.hits) != 5 {
		t.Errorf("printed %q with %d hits, want Output's words and every step heard", out.String(), len(lab.hits))
	}
}

// ExecFunc sees every command first; what it leaves to the probe, the
// probe plays, including a plan from a copied-in file whose reports go to
// a file `show` prints.
func TestExecFuncAndTheProbesFiles(t *testing.T) {
	ran := 0
	s := start(t, &fake.Target{ExecFunc: func(ctx context.Context, s *fake.Session, c targets.Command) (targets.Result, error) {
		if c.Args[0] == "agent" {
			ran++
			return s.Probe(ctx, targets.Command{Args: []string{wire.SandboxPath, "run", "--plan", "/p.json", "--out", "/out"}})
		}
		return s.Probe(ctx, c)
	}})
	in, _ := json.Marshal(plan)
	if err := s.CopyIn(context.Background(), "/p.json", bytes.NewReader(in), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, ok := s.File("/p.json"); !ok || !bytes.Equal(b, in) {
		t.Fatalf("File gives %q, %v", b, ok)
	}
	show := func() (int, []byte) {
		var out bytes.Buffer
		res, err := s.Exec(context.Background(), targets.Command{Args: []string{wire.SandboxPath, "show", "/out"}, Stdout: &out})
		if err != nil {
			t.Fatal(err)
		}
		return res.ExitCode, out.Bytes()
	}
	if code, _ := show(); code != 1 {
		t.Errorf("show of a file not there: exit %d, want 1", code)
	}
	for range 2 {
		if res, err := s.Exec(context.Background(), targets.Command{Args: []string{"agent"}}); err != nil || res.ExitCode != 0 {
			t.Fatalf("agent: exit %d, %v", res.ExitCode, err)
		}
	}
	code, out := show()
	if reps := decode(t, out); code != 0 || ran != 2 || len(reps) != len(plan.Steps) {
		t.Errorf("show: exit %d, %d reports after %d runs: want one run's reports (a second replaces the first)", code, len(reps), ran)
	}
}

func TestHoldStaysUntilItsInputEnds(t *testing.T) {
	s := start(t, &fake.Target{})
	r, w := io.Pipe()
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() {
		_, err := s.Exec(context.Background(), targets.Command{Args: []string{wire.SandboxPath, "hold", "v"}, Stdin: r, Stdout: &out})
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("hold ended with its input still open: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	_ = w.Close()
	if err := <-done; err != nil || !strings.HasPrefix(out.String(), wire.HoldReady+" ") {
		t.Errorf("hold: %v, printed %q", err, out.String())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r2, _ := io.Pipe()
	if _, err := s.Exec(ctx, targets.Command{Args: []string{wire.SandboxPath, "hold", "v"}, Stdin: r2, Stdout: io.Discard}); !errors.Is(err, context.Canceled) {
		t.Errorf("hold after its context ended: %v", err)
	}
}

func TestAbilitiesTheTargetGives(t *testing.T) {
	stopErr := errors.New("runtime wedged")
	s := start(t, &fake.Target{
		KeysFunc: func(_ context.Context, s *fake.Session) ([]detect.SessionKey, error) {
			return []detect.SessionKey{{CgroupID: uint64(1000 + s.N())}}, nil
		},
		ProcessesFunc: func(context.Context, *fake.Session) ([]int, error) { return []int{4242}, nil },
		StopFunc:      func(context.Context, *fake.Session) error { return stopErr },
	})
	if keys, err := s.SessionKeys(context.Background()); err != nil || len(keys) != 1 || keys[0].CgroupID != 1001 {
		t.Errorf("keys %+v, %v", keys, err)
	}
	if pids, err := s.Processes(context.Background()); err != nil || len(pids) != 1 || pids[0] != 4242 {
		t.Errorf("processes %v, %v", pids, err)
	}
	if err := s.Stop(context.Background()); !errors.Is(err, stopErr) {
		t.Errorf("stop: %v", err)
	}
}

func TestStartFuncReplacesTheSessions(t *testing.T) {
	refused := errors.New("starts nothing")
	var seen []string
	tgt := &fake.Target{NameFunc: func() string { return "recording" }, StartFunc: func(_ context.Context, spec targets.Spec) (targets.Session, error) {
		seen = append(seen, spec.Name)
		return nil, refused
	}}
	if _, err := tgt.Start(context.Background(), targets.Spec{Name: "s1"}); !errors.Is(err, refused) || len(seen) != 1 || tgt.Name() != "recording" {
		t.Errorf("start: %v, seen %v, name %q", err, seen, tgt.Name())
	}
}

// A sandbox that lets only the positive control out, as a team's step
// test would start it: the lab hears the control, the probe reports.
func ExampleTarget() {
	lab := &heard{}
	tgt := &fake.Target{Lab: lab, Deliver: func(st wire.Step) bool { return st.ID == "positive-control" }}
	sess, _ := tgt.Start(context.Background(), targets.Spec{Name: "s1"})
	in, _ := json.Marshal(plan)
	var out bytes.Buffer
	_, _ = sess.Exec(context.Background(), targets.Command{Args: []string{wire.SandboxPath, "run"}, Stdin: bytes.NewReader(in), Stdout: &out})
	for _, h := range lab.hits {
		fmt.Println("heard:", h.Endpoint, h.Session)
	}
	for dec := json.NewDecoder(&out); dec.More(); {
		var r wire.Report
		_ = dec.Decode(&r)
		fmt.Println("reported:", r.ID, r.Outcome)
	}
	// Output:
	// heard: inference s1
	// reported: positive-control timeout
	// reported: tcp timeout
	// reported: dns timeout
	// reported: imds timeout
	// reported: proxy no-proxy
}
