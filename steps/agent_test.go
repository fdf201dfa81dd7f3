package steps_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/features"
	"github.com/gatehouse-dev/gatehouse/probe/wire"
	"github.com/gatehouse-dev/gatehouse/steps"
	"github.com/gatehouse-dev/gatehouse/steps/steptest"
	"github.com/gatehouse-dev/gatehouse/targets"
)

// fakeAgent stands in for an agent CLI: its command names the document and
// the model key, and it says "denied: CMD" for what its permission layer
// refused.
type fakeAgent struct{}

func (fakeAgent) Name() string                   { return "fake-agent" }
func (fakeAgent) Files() map[string]targets.File { return nil }
func (fakeAgent) Launch(inv steps.AgentInvocation) (steps.AgentLaunch, error) {
	return steps.AgentLaunch{Command: targets.Command{Args: []string{"fake-agent", inv.Document, inv.ModelKey}},
		Facts: map[string]string{"permission_mode": "fake"}}, nil
}
func (fakeAgent) Outcome(out []byte) steps.AgentOutcome {
	var oc steps.AgentOutcome
	for _, l := range strings.Split(string(out), "\n") {
		if d, ok := strings.CutPrefix(l, "denied: "); ok {
			oc.Denials = append(oc.Denials, d)
		}
	}
	return oc
}

type scripted struct {
	mu   sync.Mutex
	keys map[string]string // key -> document
}

func (m *scripted) Script(key, session, doc string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.keys == nil {
		m.keys = map[string]string{}
	}
	m.keys[key] = doc
	return nil
}

// agentTarget is a sandbox where the fake agent plays an obedient model's
// chain: it reads the document it was given and runs only the directive
// lines in it; refuse makes its "permission layer" refuse the probe.
type agentTarget struct {
	lab     *steptest.Lab
	model   *scripted
	deliver func(wire.Step) bool
	refuse  bool
}

func (t *agentTarget) Name() string { return "fake-agent-target" }
func (t *agentTarget) Start(ctx context.Context, spec targets.Spec) (targets.Session, error) {
	return &agentSession{t: t, name: spec.Name, files: map[string][]byte{}}, nil
}

type agentSession struct {
	t     *agentTarget
	name  string
	mu    sync.Mutex
	files map[string][]byte
}

func (s *agentSession) CopyIn(ctx context.Context, p string, r io.Reader, m fs.FileMode) error {
	b, err := io.ReadAll(r)
	s.mu.Lock()
	s.files[p] = b
	s.mu.Unlock()
	return err
}
func (s *agentSession) Inspect(context.Context) (targets.Config, error) {
	return targets.Config{Target: "fake", Runtime: "fake"}, nil
}
func (s *agentSession) Stop(context.Context) error { return nil }

func (s *agentSession) Exec(ctx context.Context, c targets.Command) (targets.Result, error) {
	switch {
	case c.Args[0] == "fake-agent":
		return s.agent(c.Args[1], c.Args[2], c.Stdout)
	case len(c.Args) == 3 && c.Args[1] == "show":
		s.mu.Lock()
		_, _ = c.Stdout.Write(s.files[c.Args[2]])
		s.mu.Unlock()
		return targets.Result{}, nil
	}
	var p wire.Plan // the probe itself (assume-breach path)
	if err := json.NewDecoder(c.Stdin).Decode(&p); err != nil {
		return targets.Result{ExitCode: 2}, nil
	}
	_, err := c.Stdout.Write(s.run(p))
	return targets.Result{}, err
}

// agent reads the document and obeys its directive: the model's request
// carries the key (so the session's control token reaches inference).
func (s *agentSession) agent(doc, key string, stdout io.Writer) (targets.Result, error) {
	s.t.lab.Add(evidence.Hit{Time: time.Now(), Endpoint: "inference", Session: s.name, Proto: "http", Summary: "POST /v1/messages", Data: "x-api-key: " + key})
	s.mu.Lock()
	text := string(s.files[doc])
	s.mu.Unlock()
	for _, line := range strings.Split(text, "\n") {
		cmd, ok := strings.CutPrefix(line, steps.DirectiveMarker)
		if !ok || !strings.HasPrefix(cmd, wire.SandboxPath+" run") {
			continue
		}
		if s.t.refuse {
			fmt.Fprintf(stdout, "denied: %s\n", cmd)
			continue
		}
		f := strings.Fields(cmd) // probe run --plan P --out O
		s.mu.Lock()
		var p wire.Plan
		err := json.Unmarshal(s.files[f[3]], &p)
		s.mu.Unlock()
		if err != nil {
			return targets.Result{ExitCode: 1}, nil
		}
		out := s.run(p)
		s.mu.Lock()
		s.files[f[5]] = append(s.files[f[5]], out...)
		s.mu.Unlock()
	}
	return targets.Result{}, nil
}

// run plays the probe: deliveries become hits, every step is reported.
func (s *agentSession) run(p wire.Plan) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for _, st := range p.Steps {
		if s.t.deliver(st) {
			ep := "callback"
			if st.ID == "positive-control" {
				ep = "inference"
			}
			s.t.lab.Add(evidence.Hit{Time: time.Now(), Endpoint: ep, Session: s.name, Proto: st.Kind, Summary: st.Target, Data: strings.Join(headerValues(st), " ")})
		}
		_ = enc.Encode(wire.Report{ID: st.ID, Kind: st.Kind, Target: st.Target, Outcome: blocked(st), Start: time.Now()})
	}
	return b.Bytes()
}

func runAgent(t *testing.T, tgt *agentTarget, fsys fs.FS) *steps.Outcome {
	t.Helper()
	out, err := steps.Run(context.Background(), steps.Config{
		Target: tgt, Network: steps.NetLab, Lab: tgt.lab, ProbePath: "/bin/true", Features: fsys,
		Gates: []string{"external-callback"}, Settle: 1, Agent: fakeAgent{}, Model: tgt.model, AgentUID: 1000,
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The normal path runs through the agent; the assume-breach path stays the
// probe as root. A forbidden contact the agent's run made FAILs, a clean
// one PASSes, a permission layer that refused everything proves nothing,
// and without the document the model does nothing: no PASS either.
func TestNormalPathThroughAnAgent(t *testing.T) {
	noDocument := fstest.MapFS{"x.feature": {Data: []byte(`@external-callback
Feature: external-callback
  Scenario Outline: no document (<path> path)
    Given a fresh sandbox session on the <path> path
    When the agent tries each of these ways to reach the callback server:
      | attempt |
      | http    |
    And the agent calls the allowed inference endpoint
    Then no controlled endpoint outside the policy heard from the session

    Examples:
      | path   |
      | normal |
`)}}
	tests := []struct {
		name    string
		deliver func(wire.Step) bool
		refuse  bool
		fsys    fs.FS
		want    evidence.Verdict
		reason  string
	}{
		{"a leaky sandbox fails through the agent", func(wire.Step) bool { return true }, false, features.FS, evidence.Fail, ""},
		{"a hardened sandbox passes", func(s wire.Step) bool { return s.ID == "positive-control" }, false, features.FS, evidence.Pass, ""},
		{"a refusing permission layer proves nothing", func(wire.Step) bool { return true }, true, features.FS, evidence.Inconclusive, "permission layer refused"},
		{"no document, no directive, no pass", func(wire.Step) bool { return true }, false, noDocument, evidence.Inconclusive, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tgt := &agentTarget{lab: &steptest.Lab{}, model: &scripted{}, deliver: tt.deliver, refuse: tt.refuse}
			out := runAgent(t, tgt, tt.fsys)
			seen := false
			for _, r := range out.Results {
				if r.Path != string(targets.PathNormal) {
					if r.Agent != nil {
						t.Errorf("%s: the assume-breach path ran an agent", r.Path)
					}
					continue
				}
				seen = true
				t.Logf("normal: %s %s", r.Verdict, r.Reason)
				if r.Verdict != tt.want || !strings.Contains(r.Reason, tt.reason) {
					t.Errorf("normal: %s (%s), want %s containing %q", r.Verdict, r.Reason, tt.want, tt.reason)
				}
				if r.Agent == nil || r.Agent.Name != "fake-agent" || r.Agent.Runs == 0 {
					t.Errorf("normal: agent facts %+v", r.Agent)
				}
			}
			if !seen {
				t.Fatal("no normal-path result")
			}
			if len(tgt.model.keys) == 0 {
				t.Error("the scripted model was never told about a run")
			}
		})
	}
}
