package evidence

import (
	"fmt"
	"strings"
	"time"
)

// Takedown is what root in the guest did to the sandbox's own controls on
// the assume-breach path, before the forbidden attempts were tried again.
// The probe's reports say what it tried and what the kernel allowed; they
// name the layer that fell, never prove a violation (only hits do). Where
// the harness can look itself (the session's nftables tables, read from
// outside), its own view wins over the probe's word.
type Takedown struct {
	At       time.Time         `json:"at"` // when it began, on the clock hits are stamped with
	Controls []ControlTakedown `json:"controls"`
	// Missing are controls asked about that no report came back for: the
	// inner layers were not shown to hold, so no PASS.
	Missing []string `json:"missing,omitempty"`
	// Outside is the harness's own view of the session's ruleset: tables
	// before and after. Nil when it could not look (see OutsideError).
	Outside      *RulesetView `json:"ruleset_seen_from_outside,omitempty"`
	OutsideError string       `json:"outside_error,omitempty"`
}

// RulesetView is the session namespace's nftables tables ("inet NAME")
// as the harness listed them before and after the takedown.
type RulesetView struct {
	Before []string `json:"before"`
	After  []string `json:"after"`
}

// Removed lists tables present before and gone after.
func (v *RulesetView) Removed() []string {
	after := map[string]bool{}
	for _, t := range v.After {
		after[t] = true
	}
	var out []string
	for _, t := range v.Before {
		if !after[t] {
			out = append(out, t)
		}
	}
	return out
}

// ControlTakedown is one control's takedown as the probe reported it.
type ControlTakedown struct {
	Control string   `json:"control"`
	State   string   `json:"state"` // one of the Takedown* states
	Changed []string `json:"changed,omitempty"`
	Refused []string `json:"refused,omitempty"`
	Other   []string `json:"other,omitempty"` // unchanged, skipped, failed lines
	Error   string   `json:"error,omitempty"`
}

// States of a control after a takedown.
const (
	TakedownFell      = "fell"              // the kernel let root change it
	TakedownHeld      = "held"              // the kernel refused every change
	TakedownNothing   = "nothing-to-change" // nothing of it was there, or it was already open
	TakedownNotTried  = "not-tried"         // the probe refused: not the sandbox's own namespace
	TakedownUncertain = "unknown"           // failed, timed out, or an unreadable report
)

// layerFell says, per control, which layer fell and what that means.
var layerFell = map[string]string{
	"nftables":  "egress ruleset flushed from inside: the policy is not an outer layer",
	"iptables":  "iptables rules flushed from inside: the policy is not an outer layer",
	"links":     "interfaces brought up from inside: the network namespace's links are not an outer layer",
	"routes":    "default route added from inside: routing is not an outer layer",
	"addresses": "address added from inside: addresses are not an outer layer",
	"proxy":     "in-sandbox proxy bridge killed from inside",
	"remount":   "read-only mounts remounted read-write from inside: the read-only flags are not an outer layer",
	"sysctl":    "network sysctls written from inside: the namespace's kernel settings are not an outer layer",
	"cgroup":    "cgroup limits lifted from inside: resource limits are not an outer layer",
}

// Fell lists the layers that fell, each with what shows it: the harness's
// own view for the ruleset where it has one, the probe's report otherwise.
func (t *Takedown) Fell() []string {
	if t == nil {
		return nil
	}
	var out []string
	for _, c := range t.Controls {
		if c.Control == "nftables" && t.Outside != nil {
			continue // decided below, from outside
		}
		if c.State == TakedownFell {
			out = append(out, fmt.Sprintf("%s (the probe's report: %s)", phrase(c.Control), firstFew(c.Changed, 3)))
		}
	}
	if t.Outside != nil {
		if gone := t.Outside.Removed(); len(gone) > 0 {
			out = append([]string{fmt.Sprintf("%s (seen from outside: table %s gone)", phrase("nftables"), strings.Join(gone, ", table "))}, out...)
		}
	}
	return out
}

// Contradicted lists what the probe says it changed that the harness's own
// view shows unchanged: the probe's word is not taken there.
func (t *Takedown) Contradicted() []string {
	if t == nil || t.Outside == nil {
		return nil
	}
	gone := map[string]bool{}
	for _, g := range t.Outside.Removed() {
		gone[g] = true
	}
	var out []string
	for _, c := range t.Controls {
		if c.Control != "nftables" {
			continue
		}
		for _, ch := range c.Changed {
			if tbl, ok := strings.CutPrefix(ch, "delete table "); ok && !gone[tbl] {
				out = append(out, "the probe says it deleted table "+tbl+", but the harness still sees it")
			}
		}
	}
	return out
}

// firstFew joins up to n items and says how many more there are (the
// result's takedown record has them all).
func firstFew(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, "; ")
	}
	return fmt.Sprintf("%s; and %d more", strings.Join(items[:n], "; "), len(items)-n)
}

func phrase(control string) string {
	if p, ok := layerFell[control]; ok {
		return p
	}
	return control + " changed from inside"
}

// failReason explains a FAIL with the takedown: which layer fell, and the
// forbidden contacts before and after it began.
func (t *Takedown) failReason(hits []Hit, canary string) string {
	var before, after []Hit
	for _, h := range hits {
		if h.Time.Before(t.At) {
			before = append(before, h)
		} else {
			after = append(after, h)
		}
	}
	fell := t.Fell()
	if len(fell) == 0 {
		return describe(hits, canary) + "; root in the guest took down no control first: none had to fall"
	}
	var parts []string
	if len(before) > 0 {
		parts = append(parts, "before the takedown: "+describe(before, canary))
	}
	if len(after) > 0 {
		parts = append(parts, "after it: "+describe(after, canary))
	}
	return strings.Join(fell, "; ") + "; " + strings.Join(parts, "; ")
}

// passNote is what a PASS adds when root took something down and still
// nothing forbidden arrived: a finding about the inner layers, not a FAIL.
func (t *Takedown) passNote() string {
	fell := t.Fell()
	if len(fell) == 0 {
		return "root in the guest tried to take down every control within its reach and changed none (refused by the kernel, or nothing there to change)"
	}
	return "root in the guest took down: " + strings.Join(fell, "; ") + "; still nothing forbidden arrived: what held is outside the guest's reach"
}
