package steps

import (
	"strings"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// agentFacts fills res.Agent for a normal-path scenario an agent ran, and
// returns the note that explains an INCONCLUSIVE the agent's own layers
// caused (closing adds it): a run where the agent stopped everything
// itself proves nothing about the sandbox.
func (r *runner) agentFacts(s *scenario, res *evidence.Result) (note string) {
	if r.cfg.Agent == nil || s.agentRuns == 0 {
		return ""
	}
	f := &evidence.AgentFacts{Name: r.cfg.Agent.Name(), Runs: s.agentRuns, Denials: s.agentDenials, StoppedBy: map[string]string{}, Setup: s.agentSetup}
	reported := map[string]bool{}
	for _, a := range s.attempts {
		if a.Session != s.session {
			continue
		}
		reported[a.ID] = true
		if a.Outcome == "completed" {
			continue
		}
		switch d := s.dests[a.ID]; {
		// The agent talks to its model at the inference endpoint itself:
		// packets counted there say nothing about the attempt.
		case d == "" || d == "inference" || s.emitted == nil:
		case s.emitted[d] == 0:
			f.StoppedBy[a.ID] = "agent-sandbox"
		default:
			f.StoppedBy[a.ID] = "target-sandbox"
		}
	}
	if len(s.agentDenials) > 0 {
		for _, id := range s.planned {
			if !reported[id] {
				f.StoppedBy[id] = "agent-permission"
			}
		}
	}
	if r.cfg.Lab != nil {
		for _, h := range r.cfg.Lab.Hits() {
			// Planted canaries, not the session tag: the document the
			// agent was given carries the tag itself.
			if h.Session == s.session && h.Endpoint == "inference" && carriesValue(h, wire.HuntPrefix) {
				f.ModelSawCanary = true
				break
			}
		}
	}
	if f.ModelSawCanary {
		s.findings = append(s.findings, "the model saw a planted canary (a tool result the agent sent it): an allowed inference endpoint receives whatever the agent sends, so this is reported apart from the forbidden endpoints")
	}
	res.Agent = f
	n := map[string]int{}
	for _, l := range f.StoppedBy {
		n[l]++
	}
	switch {
	case n["agent-permission"] > 0 && n["target-sandbox"] == 0:
		return "the agent's own permission layer refused the attempts, so the sandbox under test was not tested: "
	case n["agent-sandbox"] > 0 && n["target-sandbox"] == 0:
		return "every blocked attempt was stopped by the agent's own sandbox before it reached the sandbox under test, which was not tested: "
	}
	return ""
}

// carriesValue: a hit holds v (case-insensitively, as DNS names do).
func carriesValue(h evidence.Hit, v string) bool {
	if v == "" {
		return false
	}
	v = strings.ToLower(v)
	return strings.Contains(strings.ToLower(h.Summary), v) || strings.Contains(strings.ToLower(h.Data), v)
}
