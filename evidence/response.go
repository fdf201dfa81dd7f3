package evidence

import (
	"fmt"
	"strings"
	"time"
)

// Response is what Gatehouse did about one session's first detection and
// when each effect was observed from outside. Like Detection it is scored
// apart from the verdict: a session stopped fast after a forbidden
// connection still FAILs the gate the connection broke.
type Response struct {
	// Mode is the response asked for: "stop" (Gatehouse revokes the
	// session's broker token and stops the session through its target) or
	// "exec:PATH" (the team's own hook, given the session's id, netns,
	// cgroup and pids).
	Mode    string          `json:"mode"`
	Session string          `json:"session"`
	Trigger ResponseTrigger `json:"trigger"`
	// Started is when the response began (the stop or the hook was
	// started), on the harness's clock.
	Started time.Time `json:"started"`
	// Effects are observed from outside; each latency is from the alert's
	// receipt to the first poll that saw the effect.
	Effects []ResponseEffect `json:"effects"`
	// PollMS is the polling resolution: each latency is at most this much
	// late.
	PollMS float64 `json:"poll_ms"`
	// KernelGoneMS is, when a monitor watches exits (the builtin one), when
	// the session's last process exited on the kernel's clock, from the
	// alert's receipt: a cross-check of the polled processes-gone.
	KernelGoneMS *float64 `json:"kernel_gone_ms,omitempty"`
	Hook         *HookRun `json:"hook,omitempty"`
	Notes        []string `json:"notes,omitempty"`
}

// ResponseTrigger is the detection the response answered.
type ResponseTrigger struct {
	Source   string    `json:"source"`
	Rule     string    `json:"rule"`
	Kind     string    `json:"kind,omitempty"`
	Object   string    `json:"object,omitempty"`
	Received time.Time `json:"received"`
}

// The effects a response is measured by.
const (
	EffectProcessesGone = "processes-gone"
	EffectEgressRefused = "egress-refused"
	EffectTokenRefused  = "token-refused"
)

// ResponseEffect is one effect: whether it was observed, when, and how
// long after the alert's receipt. Before is true when the effect held
// already before the response began (a hardened profile refuses egress
// anyway): its latency says nothing about the response.
type ResponseEffect struct {
	Effect    string    `json:"effect"`
	Observed  bool      `json:"observed"`
	At        time.Time `json:"at,omitzero"`
	LatencyMS *float64  `json:"latency_ms"`
	Before    bool      `json:"before_response,omitempty"`
	Reason    string    `json:"reason,omitempty"`
}

// HookRun is the outcome of a team's response hook.
type HookRun struct {
	Argv   []string `json:"argv"`
	Exit   int      `json:"exit"`
	Output string   `json:"output,omitempty"` // capped
	Error  string   `json:"error,omitempty"`
}

// ResponseCell is the summary table's word on a result's responses: the
// first session's effects ("gone 41ms, egress 12ms, token 0ms"; "no" for
// one not observed, "-" for one not measured), "+N" for more sessions,
// and "" when no response was made.
func ResponseCell(r Result) string {
	if len(r.Responses) == 0 {
		return ""
	}
	short := map[string]string{EffectProcessesGone: "gone", EffectEgressRefused: "egress", EffectTokenRefused: "token"}
	var parts []string
	for _, e := range r.Responses[0].Effects {
		v := "-"
		switch {
		case e.Observed && e.Before:
			v = "before"
		case e.Observed && e.LatencyMS != nil:
			v = fmtMS(*e.LatencyMS)
		case e.Observed:
			v = "yes"
		case strings.HasPrefix(e.Reason, "not measured"):
			v = "-"
		default:
			v = "no"
		}
		parts = append(parts, short[e.Effect]+" "+v)
	}
	cell := strings.Join(parts, ", ")
	if n := len(r.Responses) - 1; n > 0 {
		cell += fmt.Sprintf(" (+%d)", n)
	}
	return cell
}
