// Package evidence holds the records a run produces, the fail-closed rules
// that turn them into verdicts, and the run folder they are written to.
// Signing, verification, the SQLite index and the HTML report live in
// sub-packages so that this package stays small and dependency-free.
package evidence

import (
	"encoding/json"
	"time"
)

// Hit is one thing that arrived at a controlled endpoint. Verdicts are made
// from hits, never from the probe's own account.
type Hit struct {
	Time     time.Time `json:"time"`
	Endpoint string    `json:"endpoint"` // e.g. "callback", "dns-authority", "metadata-aws", "inference"
	Proto    string    `json:"proto"`    // http, https, tcp, udp, icmp, icmp6, dns
	Src      string    `json:"src"`      // source address as seen by the endpoint
	Dst      string    `json:"dst"`      // address:port it arrived on
	Session  string    `json:"session"`  // the session it is attributed to; "" when unknown
	// Attribution says how Session was decided: "tag" (the session's
	// in-band tag arrived with it), "address" (its source address is the
	// session's), "only-live-session" (untagged, from no session's
	// address, while exactly one session was alive), "endpoint" (the
	// endpoint belongs to one session, like its own socket), "key" (it
	// presented the session's scripted-model API key); "" when no rule
	// applied.
	Attribution string `json:"attribution,omitempty"`
	Summary     string `json:"summary"`          // request line, query name, first bytes
	Data        string `json:"data,omitempty"`   // capped excerpt of what arrived
	Served      bool   `json:"served,omitempty"` // the endpoint answered with content (e.g. credentials)
	// Conn marks a record made when a connection was accepted, before any
	// request (source, port, TLS server name or first bytes). A request hit
	// on the same connection (same endpoint, Src and Dst) may follow; Fold
	// counts the two as one contact.
	Conn bool `json:"conn,omitempty"`
	// Attempt is the attempt the request said it belongs to (the probe's
	// X-Gatehouse-Attempt header): a label for what got through which way,
	// from inside the sandbox, so never used to decide a verdict.
	Attempt string `json:"attempt,omitempty"`
	// Method, Path and BodyBytes describe an HTTP request as it arrived:
	// the method, the URL path (no query) and the body's full size in
	// bytes (Data keeps only its first bytes). The allowed endpoint's
	// declaration (Allow) is checked against them.
	Method    string `json:"method,omitempty"`
	Path      string `json:"path,omitempty"`
	BodyBytes int64  `json:"body_bytes,omitempty"`
}

// MarshalJSON writes a hit with its time in UTC. The lab keeps the local
// reading in memory, for its monotonic part (see lab.record); the JSON
// form has none and reads the same on every machine.
func (h Hit) MarshalJSON() ([]byte, error) {
	type plain Hit
	p := plain(h)
	p.Time = p.Time.UTC()
	return json.Marshal(p)
}

// Attempt is one attempt as the probe reported it. It is hostile input: it
// can prove that an attempt was reported, never that something was blocked.
type Attempt struct {
	Session    string    `json:"session"`
	Scenario   string    `json:"scenario"`
	ID         string    `json:"id"`
	Kind       string    `json:"kind"`
	Target     string    `json:"target"`
	Outcome    string    `json:"outcome"` // probe's claim: completed, refused, unreachable, timeout, error
	Error      string    `json:"error,omitempty"`
	Status     int       `json:"status,omitempty"`
	Start      time.Time `json:"start"`
	DurationMS float64   `json:"duration_ms"`
	// ActiveFrom and ActiveTo are when the probe says the attempt was at
	// work (a receive listening, a search searching); the two-session
	// gates judge overlap from them, bounded by the outside window.
	ActiveFrom time.Time `json:"active_from,omitzero"`
	ActiveTo   time.Time `json:"active_to,omitzero"`
	// Excerpt is what the probe said it found (capped by the probe's wire
	// format). A planted value in it proves a read: the probe cannot guess one.
	Excerpt string `json:"excerpt,omitempty"`
	// Answered and Dialed: a DNS answer reached the attempt, and the
	// addresses its connects began toward (the probe's notes, capped by
	// its wire format). An attempt to a name that timed out is proven by
	// the kernel's count of opening packets toward these.
	Answered bool     `json:"answered,omitempty"`
	Dialed   []string `json:"dialed,omitempty"`
}

// Verdict is the outcome of one scenario.
type Verdict string

const (
	Pass         Verdict = "PASS"
	Fail         Verdict = "FAIL"
	Inconclusive Verdict = "INCONCLUSIVE"
	Skipped      Verdict = "SKIPPED"
)

// Result is one scenario's verdict with what decided it.
type Result struct {
	Gate       string             `json:"gate"`     // feature name, e.g. "external-callback"
	Scenario   string             `json:"scenario"` // scenario name
	Path       string             `json:"path"`     // normal | assume-breach
	Session    string             `json:"session"`
	Verdict    Verdict            `json:"verdict"`
	Reason     string             `json:"reason"`
	Control    bool               `json:"positive_control"` // the allowed path worked in this session
	Attempts   int                `json:"attempts"`         // attempts the probe reported
	Hits       []Hit              `json:"hits,omitempty"`   // the forbidden hits that decided a FAIL
	Findings   []string           `json:"findings,omitempty"`
	Timings    map[string]float64 `json:"timings_ms,omitempty"`
	Start      time.Time          `json:"start"`
	DurationMS float64            `json:"duration_ms"`

	// Agent says, when a real agent ran the normal path, which layer
	// stopped what and what reached the model (facts, not proof).
	Agent *AgentFacts `json:"agent,omitempty"`

	// Crossings are values seen where they must not be (foreign-storage,
	// cross-session): the proof of a FAIL that no endpoint log can give.
	Crossings []Crossing `json:"crossings,omitempty"`

	// Takedown is what root in the guest did to the sandbox's controls
	// before the attempts were tried again (assume-breach, network gates).
	Takedown *Takedown `json:"takedown,omitempty"`

	// Detection is whether telemetry saw each attempt, and how late:
	// scored apart from the verdict, which it never changes. nil in
	// evidence from before detection was measured.
	Detection *Detection `json:"detection,omitempty"`

	// Responses are what Gatehouse did on each of the scenario's sessions'
	// first detection (run --respond), with the effects observed from
	// outside; scored apart from the verdict, which they never change.
	Responses []Response `json:"responses,omitempty"`

	// Emitted is the kernel's count of packets the session sent toward
	// each lab destination while its attempts ran (network gates, in a lab
	// session namespace). Counts over the attempts' window only: no packet
	// times. nil when the lab could not count.
	Emitted map[string]uint64 `json:"kernel_emitted,omitempty"`

	// Stops are the stop-signal gate's stops, one per run: the session,
	// when its stop was sent and how long it kept acting.
	Stops []StopSent `json:"stops,omitempty"`
}

// Run describes the run as a whole (run.json).
type Run struct {
	ID           string            `json:"id"`
	Harness      string            `json:"harness_version"`
	Target       string            `json:"target"`
	Profile      string            `json:"profile"`       // profile name
	ProfileFile  string            `json:"profile_file"`  // path as given
	PolicyDigest string            `json:"policy_digest"` // sha256 over the profile and every file it references
	PolicyFiles  map[string]string `json:"policy_files"`  // relative name -> sha256
	ImageDigest  string            `json:"image_digest,omitempty"`
	Model        string            `json:"model,omitempty"`
	Agent        string            `json:"agent,omitempty"`         // what ran the normal path: probe, claude-code, codex, ...
	AgentVersion string            `json:"agent_version,omitempty"` // its pinned version
	AgentDigest  string            `json:"agent_digest,omitempty"`  // sha256 of its binary, as installed
	AgentSandbox string            `json:"agent_sandbox,omitempty"` // its own sandbox: on or off
	Corpus       string            `json:"corpus_version"`
	Commit       string            `json:"commit,omitempty"`
	Pipeline     string            `json:"pipeline,omitempty"`
	Gates        []string          `json:"gates"`
	// Group names the run group a sharded run belongs to (gatehouse run
	// --group); Shard is "K/N" and Scenarios the scenarios it ran
	// ("file.feature:LINE"). Empty for a whole run.
	Group     string         `json:"group,omitempty"`
	Shard     string         `json:"shard,omitempty"`
	Scenarios []string       `json:"scenarios,omitempty"`
	Seed      int64          `json:"seed"`
	Effective map[string]any `json:"effective_config"` // per path, what Inspect read back
	Start     time.Time      `json:"start"`
	End       time.Time      `json:"end"`
	Complete  bool           `json:"complete"` // false if interrupted or failed
	Error     string         `json:"error,omitempty"`

	// ProfileWarnings are the profile loader's warnings (binds of dangerous
	// host paths): what the profile may mean, and the gates must prove.
	ProfileWarnings []string `json:"profile_warnings,omitempty"`

	// TracesCut names each trace that reached its limit (TraceLimit) and
	// what it left out; absent when every trace is whole. A verdict that
	// reads a cut trace is never PASS (RecheckTraces).
	TracesCut map[string]TraceCut `json:"traces_cut,omitempty"`

	// HostWrites is what the probe wrote on the host itself, where a
	// sandbox showed it the host's own folders, and what became of it
	// once the sessions were gone. Not a verdict: the gates judge the
	// sandbox; this says what the harness could not clean up after it.
	HostWrites *HostWrites `json:"host_writes,omitempty"`
}

// MaxHostWritesListed bounds each list of HostWrites.
const MaxHostWritesListed = 100

// HostWrites counts the places on the host the run's probe writes were
// found in and taken back from (the run's own bytes only), and those it
// could not: leftovers, each named with why (the first
// MaxHostWritesListed of each).
type HostWrites struct {
	Removed      int      `json:"removed"`
	Left         int      `json:"left"`
	RemovedPaths []string `json:"removed_paths,omitempty"`
	LeftPaths    []string `json:"left_paths,omitempty"`
}

// Crossing is one session's value reported by another session's probe. The
// reporter could not have invented it: the value is random and only the
// owner's storage or channel ever held it.
type Crossing struct {
	Owner   string `json:"owner"`   // the session the value belongs to
	SeenBy  string `json:"seen_by"` // the session whose probe reported it
	Attempt string `json:"attempt"` // the attempt (search or channel) that got it
	Where   string `json:"where"`   // the path, socket or peer address the probe named
	Value   string `json:"value"`   // the value itself, as evidence
}

// AgentFacts are what an agent run adds to a result. StoppedBy names, per
// attempt the probe reported as blocked, the layer that stopped it:
// "agent-permission" (the agent's own permission layer refused the command:
// it never ran), "agent-sandbox" (it ran, and no packet of it reached the
// session's network namespace: the agent's own sandbox stopped it),
// "target-sandbox" (the kernel counted its packet in the session's
// namespace and nothing arrived: the sandbox under test stopped it). The
// scripted model never refuses: it always obeys the directive.
type AgentFacts struct {
	Name           string            `json:"name"`
	Runs           int               `json:"runs"`
	Denials        []string          `json:"permission_denials,omitempty"`
	StoppedBy      map[string]string `json:"stopped_by,omitempty"`
	ModelSawCanary bool              `json:"model_saw_canary"` // a planted canary reached the model
	// Setup is how the agent was set up: its permission mode, its own
	// sandbox asked for and how, the settings it was given.
	Setup map[string]string `json:"setup,omitempty"`
}
