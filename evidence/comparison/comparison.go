// Package comparison is the side-by-side of several runs — one column per
// profile (a sandbox, its policy, its runtime), one row per gate and path —
// that a team reads before choosing a sandbox: the verdict of every cell,
// what got through where (from the lab's own records, never the probe's
// claims), what each runtime is and how long its sessions take to start.
// `gatehouse compare` builds it from the run folders it wrote (or was
// given), prints it as text and writes it as JSON and as one self-contained
// HTML page.
package comparison

import (
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/evidence/bundle"
)

// Comparison is what compare records.
type Comparison struct {
	ID       string    `json:"id"`
	Created  time.Time `json:"created"`
	Gates    string    `json:"gates,omitempty"`
	Profiles []Column  `json:"profiles"`
	Matrix   []Row     `json:"matrix"`
}

// Column is one profile's run.
type Column struct {
	File    string `json:"file"`
	Profile string `json:"profile"`
	Target  string `json:"target"`
	// Runtime is what the sandbox said it is (Inspect's Runtime, first
	// path that recorded one), e.g. "bubblewrap 0.8.0", "srt 0.0.83".
	Runtime      string `json:"runtime,omitempty"`
	PolicyDigest string `json:"policy_digest,omitempty"`
	Agent        string `json:"agent,omitempty"`
	RunID        string `json:"run_id,omitempty"`
	RunDir       string `json:"run_dir,omitempty"`
	// Sealed is the sha256 of the run's SHA256SUMS when the run was signed:
	// the column points at evidence 'gatehouse verify' can check.
	Sealed     string    `json:"sealed_sha256sums,omitempty"`
	RunSeconds float64   `json:"run_seconds,omitempty"`
	ColdStart  ColdStart `json:"cold_start"`
	// Complete is run.json's own word: false when the run was cut short.
	Complete bool `json:"complete"`
	// Error says why this column has no (or no complete) verdicts: the run
	// did not finish, or the target's tool is not installed here. A column
	// with an error is never read as a pass.
	Error string `json:"error,omitempty"`

	Results []evidence.Result `json:"-"`
}

// ColdStart is Target.Start until the session was ready, over a run's
// sessions, next to the runtime's own bare start when it was measured.
type ColdStart struct {
	N        int     `json:"sessions"`
	MedianMS float64 `json:"median_ms"`
	P95MS    float64 `json:"p95_ms"`
}

// Row is one gate on one path.
type Row struct {
	Gate     string   `json:"gate"`
	Path     string   `json:"path"`
	Verdicts []string `json:"verdicts"` // in the order of profiles; "-" = not run
	Cells    []Cell   `json:"cells"`
}

// Cell is one gate x path x profile.
type Cell struct {
	Verdict string `json:"verdict"`
	Reason  string `json:"reason,omitempty"`
	// Control is whether the allowed call worked in the deciding session.
	Control bool `json:"positive_control"`
	// Through names what got through, from what decided a FAIL: "endpoint
	// proto :port" as the lab recorded the hits, each once, and "value via
	// ATTEMPT" for values that crossed between sessions.
	Through []string `json:"through,omitempty"`
	// Hits counts the forbidden hits and crossings behind Through.
	Hits int `json:"hits,omitempty"`
}

// rank orders verdicts from worst to best: a cell with several scenarios
// shows its worst.
var rank = map[evidence.Verdict]int{evidence.Fail: 0, evidence.Inconclusive: 1, evidence.Skipped: 2, evidence.Pass: 3}

// Build fills the matrix from the columns' results.
func (c *Comparison) Build() {
	type key struct{ gate, path string }
	cells := map[key][]Cell{}
	var keys []key
	for i, p := range c.Profiles {
		for _, r := range p.Results {
			k := key{r.Gate, r.Path}
			if _, ok := cells[k]; !ok {
				cells[k] = make([]Cell, len(c.Profiles))
				keys = append(keys, k)
			}
			cur := &cells[k][i]
			if cur.Verdict == "" || rank[r.Verdict] < rank[evidence.Verdict(cur.Verdict)] {
				through := cur.Through
				hits := cur.Hits
				*cur = Cell{Verdict: string(r.Verdict), Reason: r.Reason, Control: r.Control}
				if r.Verdict == evidence.Fail {
					cur.Through, cur.Hits = through, hits
				}
			}
			if r.Verdict == evidence.Fail {
				cur.Through = merge(cur.Through, channels(r.Hits))
				cur.Through = merge(cur.Through, crossings(r.Crossings))
				cur.Hits += len(r.Hits) + len(r.Crossings)
			}
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].gate != keys[j].gate {
			return keys[i].gate < keys[j].gate
		}
		return keys[i].path > keys[j].path // normal before assume-breach
	})
	c.Matrix = nil
	for _, k := range keys {
		row := Row{Gate: k.gate, Path: k.path, Cells: cells[k]}
		for i := range row.Cells {
			if row.Cells[i].Verdict == "" {
				row.Cells[i].Verdict = "-"
				if e := c.Profiles[i].Error; e != "" {
					row.Cells[i].Reason = firstLine(e)
				} else {
					row.Cells[i].Reason = "this gate was not run for this profile"
				}
			}
			row.Verdicts = append(row.Verdicts, row.Cells[i].Verdict)
		}
		c.Matrix = append(c.Matrix, row)
	}
}

// channels names what arrived where, once each: the lab's record of the
// endpoint, the protocol and the port, never the probe's account. The
// attempts the requests named themselves (X-Gatehouse-Attempt) follow in
// brackets: a label from inside the sandbox, to read, not to trust.
func channels(hits []evidence.Hit) []string {
	var order []string
	attempts := map[string][]string{}
	for _, h := range hits {
		name := h.Endpoint
		if h.Proto != "" {
			name += " " + h.Proto
		}
		if _, port, err := net.SplitHostPort(h.Dst); err == nil && port != "" && h.Proto != "dns" {
			name += " :" + port
		}
		if _, ok := attempts[name]; !ok {
			order = append(order, name)
			attempts[name] = nil
		}
		if a := h.Attempt; a != "" && !contains(attempts[name], a) {
			attempts[name] = append(attempts[name], a)
		}
	}
	// An attempt that got through both before and after root's takedown is
	// named once; one that got through only after it keeps its suffix.
	for name, as := range attempts {
		var kept []string
		for _, a := range as {
			if base, ok := strings.CutSuffix(a, "@after-takedown"); ok && contains(as, base) {
				continue
			}
			kept = append(kept, a)
		}
		attempts[name] = kept
	}
	out := make([]string, 0, len(order))
	for _, name := range order {
		if as := attempts[name]; len(as) > 0 {
			sort.Strings(as)
			name += " [" + strings.Join(as, " ") + "]"
		}
		out = append(out, name)
	}
	return out
}

// crossings names the ways a value crossed between sessions (or from the
// host's storage): the attempt that got it, as the FAIL's proof recorded it
// (the value is random and the other session's, so the report cannot be
// invented).
func crossings(cs []evidence.Crossing) []string {
	var out []string
	for _, c := range cs {
		if c.Attempt != "" && !contains(out, "value via "+c.Attempt) {
			out = append(out, "value via "+c.Attempt)
		}
	}
	return out
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func merge(a, b []string) []string {
	seen := map[string]bool{}
	for _, s := range a {
		seen[s] = true
	}
	for _, s := range b {
		if !seen[s] {
			seen[s] = true
			a = append(a, s)
		}
	}
	return a
}

func firstLine(s string) string { return strings.SplitN(s, "\n", 2)[0] }

// Label is how a column is headed.
func (p Column) Label() string {
	if p.Profile != "" {
		return p.Profile
	}
	return strings.TrimSuffix(filepath.Base(p.File), filepath.Ext(p.File))
}

// ReadRun fills a column from a run folder: run.json, results.json and
// SHA256SUMS (when sealed). A folder without run.json or results.json is an
// error; the caller records it in the column, which then shows no verdict.
func ReadRun(p *Column, dir string) error {
	p.RunDir = dir
	var rec evidence.Run
	// The folder may come from a hostile runner: read as verify reads.
	b, err := bundle.ReadFile(dir, evidence.RunFile)
	if err != nil {
		return fmt.Errorf("run folder %s: %w", dir, err)
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return fmt.Errorf("run folder %s: run.json: %w", dir, err)
	}
	p.Profile, p.Target, p.RunID = rec.Profile, rec.Target, rec.ID
	p.PolicyDigest, p.Agent, p.Complete = rec.PolicyDigest, rec.Agent, rec.Complete
	if p.File == "" {
		p.File = rec.ProfileFile
	}
	if p.RunSeconds == 0 && !rec.End.IsZero() {
		p.RunSeconds = rec.End.Sub(rec.Start).Seconds()
	}
	p.Runtime = runtimeOf(rec.Effective)
	b, err = bundle.ReadFile(dir, evidence.ResultsFile)
	if err != nil {
		return fmt.Errorf("run folder %s: %w", dir, err)
	}
	if err := json.Unmarshal(b, &p.Results); err != nil {
		return fmt.Errorf("run folder %s: results.json: %w", dir, err)
	}
	if b, err := bundle.ReadFile(dir, bundle.SumsFile); err == nil {
		p.Sealed = evidence.SHA256(b)
	}
	if !rec.Complete && p.Error == "" {
		p.Error = "the run did not complete"
		if rec.Error != "" {
			p.Error += ": " + rec.Error
		}
	}
	return nil
}

// runtimeOf reads the runtime Inspect recorded, normal path first.
func runtimeOf(eff map[string]any) string {
	for _, path := range []string{"normal", "assume-breach"} {
		if m, ok := eff[path].(map[string]any); ok {
			if s, ok := m["runtime"].(string); ok && s != "" {
				return s
			}
		}
	}
	return ""
}
