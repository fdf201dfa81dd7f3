// Package doctor checks what a Gatehouse run needs on this machine: root,
// namespaces, cgroup v2, the tools each target runs, the kernel features
// of the builtin monitor, audit, and the pinned agents. Every check says
// what it found and, when that is not enough, exactly what to install or
// run. Probes of the machine are injected (Probes), so the checks are
// table-tested against fakes; System() is the real machine.
package doctor

import (
	"context"
	"slices"
	"strings"
)

// Status is a check's outcome.
type Status string

const (
	OK           Status = "ok"
	Missing      Status = "missing"       // not installed, not there
	WrongVersion Status = "wrong-version" // installed, not the version pinned
	Unavailable  Status = "unavailable"   // there, but does not work here
)

// What needs a check (Check.NeededBy). Run is every run whatever its
// target; the rest name a target or an optional feature.
const (
	NeedRun      = "run"
	NeedBwrap    = "bwrap"
	NeedDocker   = "docker"
	NeedGVisor   = "gvisor"
	NeedFirejail = "firejail"
	NeedSRT      = "srt"
	NeedCodex    = "codex-sandbox"
	NeedMonitor  = "monitor builtin"
	NeedAudit    = "monitor audit"
	NeedAgents   = "agent"
	NeedCosign   = "cosign interop"
)

// Check is one line of the doctor's report.
type Check struct {
	Name     string   `json:"name"`
	Status   Status   `json:"status"`
	Found    string   `json:"found,omitempty"` // version, path or what was seen
	Fix      string   `json:"fix,omitempty"`   // what to install or run; empty when ok
	NeededBy []string `json:"needed_by"`
}

// Line is the check as the text report prints it.
func (c Check) Line() string {
	s := c.Name + ": " + string(c.Status)
	if c.Found != "" {
		s += " (" + c.Found + ")"
	}
	if c.Fix != "" {
		s += " — " + c.Fix
	}
	return s
}

// Report is every check, and whether a bwrap run can work here.
type Report struct {
	Schema     string  `json:"schema"`
	BwrapReady bool    `json:"bwrap_ready"`
	Checks     []Check `json:"checks"`
}

// Schema names the JSON layout of Report (docs/ci.md).
const Schema = "gatehouse.doctor/v1"

// check is one row of the table: what it needs and how it is made.
type check struct {
	needs []string
	run   func(ctx context.Context, p Probes) []Check
}

// Run makes every check. Checks never fail the call: a probe's error is a
// check's status.
func Run(ctx context.Context, p Probes) Report {
	r := Report{Schema: Schema, BwrapReady: true}
	for _, c := range table() {
		r.Checks = append(r.Checks, c.make(ctx, p)...)
	}
	for _, c := range r.Checks {
		if c.Status != OK && needs(c, NeedBwrap) {
			r.BwrapReady = false
		}
	}
	return r
}

// Needed makes only the checks a run of target needs (the ones every run
// needs, and the target's own).
func Needed(ctx context.Context, p Probes, target string) []Check {
	var out []Check
	for _, c := range table() {
		if !slices.Contains(c.needs, NeedRun) && !slices.Contains(c.needs, target) {
			continue // not run at all: the monitor probe loads a program
		}
		for _, got := range c.make(ctx, p) {
			if needs(got, target) {
				out = append(out, got)
			}
		}
	}
	return out
}

func (c check) make(ctx context.Context, p Probes) []Check {
	got := c.run(ctx, p)
	for i := range got {
		if got[i].NeededBy == nil {
			got[i].NeededBy = c.needs
		}
		if got[i].Status == OK {
			got[i].Fix = ""
		}
	}
	return got
}

func needs(c Check, what string) bool {
	return slices.Contains(c.NeededBy, NeedRun) || slices.Contains(c.NeededBy, what)
}

// firstLine is a command's version line.
func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}
