package evidence

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Observation is everything a verdict may be made from, for one scenario in
// one session. Only Hits (what controlled endpoints saw) can prove a
// violation or a working positive control; Attempts (the probe's word) can
// only prove that an attempt was claimed.
type Observation struct {
	Session  string
	Canary   string   // per-session value the attempts carry
	Control  string   // token the positive-control request carries
	Planned  []string // attempt IDs the scenario asked for
	Attempts []Attempt
	Hits     []Hit // every hit the lab recorded during the scenario
	// Allowed names the endpoints the policy permits (the positive control's
	// destination and the like). A hit on any other endpoint from this session,
	// or carrying this session's canary, is a violation.
	Allowed []string
	// NotReady, when non-empty, says why the endpoints could not be trusted
	// to have recorded everything; the verdict is then at best INCONCLUSIVE.
	NotReady string
	// Emitted is the kernel's count of packets the session sent toward each
	// lab destination while the attempts ran (nil: no accounting, and the
	// probe's report is the only proof of attempt). Dests maps an attempt to
	// the destination its first packet goes to. AcctError says the
	// accounting existed but could not be read: no PASS then.
	Emitted   map[string]uint64
	Dests     map[string]string
	AcctError string
	// SettledArrived names attempts the harness ended early (settled) on
	// the kernel's word that nothing of them reached the lab, of whose
	// flow a packet reached the lab afterwards: a SYN held back on a
	// loaded machine, which met a closed socket. No PASS then.
	SettledArrived []string
	// FlowOf names, for a direct attempt whose flows the harness knew
	// without a lookup, the flow that decides it ("tcp 203.0.113.10:80");
	// FlowEmitted counts, by attempt, the opening packets the kernel
	// counted on that flow while the attempt's plan ran. A timed-out
	// attempt whose own flow has none is not proven by a sibling that fed
	// the same destination.
	FlowOf      map[string]string
	FlowEmitted map[string]uint64
	// Since is when the session started: an unattributed forbidden contact
	// after it may be this session's (see Unattributed).
	Since time.Time
	// Takedown, on the assume-breach path, is what root in the guest did
	// to the sandbox's controls before trying again: a FAIL then says which
	// layer fell; a takedown with reports missing cannot support a PASS.
	Takedown *Takedown
	// Allowance, for the external-callback gate, is what the allowed
	// destination may receive (allow.go): a contact there outside the
	// profile's declaration is a violation; without a declaration what
	// arrived is a finding. nil: not checked.
	Allowance *Allowance
}

// Judgement is a verdict with what decided it.
type Judgement struct {
	Verdict   Verdict
	Reason    string
	Violating []Hit
	Control   bool
	Missing   []string // planned attempts with no report
	Findings  []string // facts worth recording that decide nothing
}

// Judge applies the fail-closed rules of the network gates, over the hits
// that left through the network (ContactNetwork):
//   - FAIL when a controlled endpoint outside the allowed set saw this
//     session, or saw this session's canary from anywhere;
//   - PASS only when every planned attempt is on record, nothing forbidden
//     arrived, and the positive control reached the allowed endpoint;
//   - INCONCLUSIVE otherwise.
func Judge(o Observation) Judgement {
	var j Judgement
	allowed := map[string]bool{}
	for _, a := range o.Allowed {
		allowed[a] = true
	}
	j.Control = o.Session != "" && ControlReached(o.Hits, o.Allowed, o.Session, o.Control)
	// Only what left through the network: a contact with a socket in a
	// host folder is host-access's (and long-lived-secret's) to judge.
	for _, h := range ofKind(o.Hits, ContactNetwork) {
		mine := o.Session != "" && h.Session == o.Session
		if !allowed[h.Endpoint] && (mine || carries(h, o.Canary)) {
			j.Violating = append(j.Violating, h)
		}
	}
	j.Violating = Fold(j.Violating)
	outside, finding := checkAllowance(o)
	if finding != "" {
		j.Findings = append(j.Findings, finding)
	}
	if len(j.Violating) > 0 || len(outside) > 0 {
		j.Verdict = Fail
		var parts []string
		if len(j.Violating) > 0 {
			parts = append(parts, describe(j.Violating, o.Canary))
			if o.Takedown != nil {
				parts[0] = o.Takedown.failReason(j.Violating, o.Canary)
			}
		}
		if len(outside) > 0 {
			parts = append(parts, allowReason(outside, o.Allowance.Declared))
			j.Violating = append(j.Violating, outside...)
		}
		j.Reason = strings.Join(parts, "; ")
		return j
	}
	reported := map[string]bool{}
	for _, a := range o.Attempts {
		if a.Session == o.Session && AttemptMade(a) {
			reported[a.ID] = true
		}
	}
	j.Missing = missing(o.Session, o.Planned, o.Attempts, AttemptMade)
	var stalled []string
	for _, id := range j.Missing {
		if ProxyStalled(o.Session, id, o.Attempts) {
			stalled = append(stalled, id)
		}
	}
	var unproven []string
	if o.Emitted != nil {
		for _, a := range o.Attempts {
			if a.Session != o.Session || !reported[a.ID] || !leavesPacket(a.Outcome) {
				continue
			}
			if d := o.Dests[a.ID]; d != "" && o.Emitted[d] == 0 {
				unproven = append(unproven, fmt.Sprintf("%s (the probe says %s, the kernel counted no packet toward %s)", a.ID, a.Outcome, d))
			} else if f, ok := o.FlowOf[a.ID]; ok && a.Outcome == "timeout" && o.FlowEmitted[a.ID] == 0 {
				unproven = append(unproven, fmt.Sprintf("%s (the probe says timeout, the kernel counted no opening packet of its own flow %s: the machine may have been too loaded for it to leave)", a.ID, f))
			}
		}
		sort.Strings(unproven)
	}
	un := Unattributed(ofKind(o.Hits, ContactNetwork), o.Since)
	switch {
	case o.NotReady != "":
		j.Verdict, j.Reason = Inconclusive, "endpoints not ready: "+o.NotReady
	case len(un) > 0:
		j.Verdict, j.Reason = Inconclusive, unattributedReason(un)
	case o.AcctError != "":
		j.Verdict, j.Reason = Inconclusive, "the kernel-side accounting of the attempts could not be read: "+o.AcctError
	case len(o.SettledArrived) > 0:
		j.Verdict, j.Reason = Inconclusive, "attempts were ended early on the kernel's word that nothing of them reached the lab, and a packet of theirs reached it afterwards (held back on a loaded machine), so the lab may have missed what they carried: "+strings.Join(o.SettledArrived, ", ")
	case len(unproven) > 0:
		j.Verdict, j.Reason = Inconclusive, "the probe's report and the kernel disagree: "+strings.Join(unproven, "; ")
	case len(o.Planned) == 0:
		j.Verdict, j.Reason = Inconclusive, "no attempt was planned, so nothing was tested"
	case len(stalled) > 0:
		j.Verdict, j.Reason = Inconclusive, "the sandbox's proxy neither answered nor refused "+strings.Join(stalled, ", ")+" in time (no answer, or a gateway error: it let the request through and its own step onward failed), tried again: a stalled proxy proves nothing (the machine may have been too loaded to judge them)"
	case len(j.Missing) > 0:
		j.Verdict, j.Reason = Inconclusive, "no proof of attempt for "+strings.Join(j.Missing, ", ")+" (not reported, or the probe failed before anything left it)"
	case o.Control == "" || !j.Control:
		j.Verdict, j.Reason = Inconclusive, "positive control failed: the allowed endpoint never heard from this session, so a blocked attempt proves nothing"
	case o.Takedown != nil && len(o.Takedown.Missing) > 0:
		j.Verdict, j.Reason = Inconclusive, "root in the guest's takedown left no report for "+strings.Join(o.Takedown.Missing, ", ")+": what the inner layers withstand was not shown"
	default:
		j.Verdict = Pass
		j.Reason = fmt.Sprintf("%d attempts on record, no controlled endpoint outside the policy heard from the session, positive control reached the allowed endpoint", len(o.Planned))
		if o.Takedown != nil {
			j.Reason += "; " + o.Takedown.passNote()
		}
	}
	return j
}

// carries reports whether a hit contains the value (case-insensitively, as
// DNS names are).
func carries(h Hit, v string) bool {
	if v == "" {
		return false
	}
	v = strings.ToLower(v)
	return strings.Contains(strings.ToLower(h.Summary), v) || strings.Contains(strings.ToLower(h.Data), v)
}

func describe(hits []Hit, canary string) string {
	type agg struct {
		protos map[string]int
		conns  int // connection records with no request (hits are folded)
		canary int
		served int
	}
	by := map[string]*agg{}
	for _, h := range hits {
		a := by[h.Endpoint]
		if a == nil {
			a = &agg{protos: map[string]int{}}
			by[h.Endpoint] = a
		}
		if h.Conn {
			a.conns++
		} else {
			a.protos[h.Proto]++
		}
		if carries(h, canary) {
			a.canary++
		}
		if h.Served {
			a.served++
		}
	}
	var eps []string
	for ep := range by {
		eps = append(eps, ep)
	}
	sort.Strings(eps)
	var parts []string
	for _, ep := range eps {
		a := by[ep]
		var ps []string
		for p, n := range a.protos {
			if n > 1 {
				p = fmt.Sprintf("%s×%d", p, n)
			}
			ps = append(ps, p)
		}
		sort.Strings(ps)
		s := ep + " heard " + strings.Join(ps, " ")
		if a.conns > 0 {
			if len(ps) > 0 {
				s += " and "
			}
			s += fmt.Sprintf("%d connection(s) that made no complete request", a.conns)
		}
		if a.canary > 0 {
			s += fmt.Sprintf(", %d carrying the session canary", a.canary)
		}
		if a.served > 0 {
			s += fmt.Sprintf(", served content %d time(s)", a.served)
		}
		parts = append(parts, s)
	}
	return fmt.Sprintf("%d forbidden contact(s): %s", len(hits), strings.Join(parts, "; "))
}

// leavesPacket: outcomes that mean a packet left the sandbox's socket layer
// (a netfilter drop happens after the accounting counts it). "unreachable"
// is the kernel refusing locally (no route, no address): nothing to count.
func leavesPacket(outcome string) bool {
	switch outcome {
	case "completed", "refused", "timeout", "denied":
		return true
	}
	return false
}

// AttemptMade reports whether a network attempt's report says something
// left the probe: it was refused, unreachable, timed out, denied by the
// kernel, or completed. An "error" (a bad URL, a failure inside the probe)
// or the probe's own refusal proves no attempt, so it cannot support a PASS.
// "no-proxy" (a proxy attempt in an environment that names no proxy of its
// kind) is on record like "unreachable": the sandbox offers that way
// nothing to go through, and the direct attempts cover it.
//
// A proxy attempt that timed out is not made either: a proxy answers what
// it blocks (403, a reset), so one that gave no answer in time was still
// at work (connecting onward, on a loaded machine) and says nothing of
// where the attempt would have gone (issue 22).
func AttemptMade(a Attempt) bool {
	if strings.HasPrefix(a.Error, "probe refuses") || proxyTimeout(a) {
		return false
	}
	switch a.Outcome {
	case "completed", "refused", "unreachable", "timeout", "denied", "no-proxy":
		return true
	}
	return false
}

// proxyTimeout: a proxy attempt that got neither an answer nor a refusal
// in time, or an answer that says the proxy let it through and its own
// lookup or connect onward failed (proxyGateway).
func proxyTimeout(a Attempt) bool {
	return a.Kind == "proxy" && (a.Outcome == "timeout" || proxyGateway(a))
}

// gatewaySlow is how long a gateway answer must have taken to be read as
// an onward step that failed rather than the proxy's own decision.
const gatewaySlow = time.Second

// proxyGateway: a 502, 503 or 504, or a SOCKS5 reply 1 (general failure),
// 3 (network unreachable), 4 (host unreachable) or 6 (TTL expired), that
// came after gatewaySlow or more. The probe reports these as the proxy's
// no, but a proxy that took that long went onward, and its lookup or
// connect failed: on a loaded machine, the lab's resolver answering late
// (issue 22). Proof of nothing, tried again like a timeout. A fast one is
// the proxy's own decision (some proxies answer their denials with 503,
// minimal SOCKS5 servers with reply 1), as are 403, 407 and SOCKS5 2.
func proxyGateway(a Attempt) bool {
	if a.DurationMS < float64(gatewaySlow/time.Millisecond) {
		return false
	}
	switch a.Status {
	case 502, 503, 504:
		return true
	}
	for _, r := range []string{"1", "3", "4", "6"} {
		if strings.HasSuffix(a.Error, "socks5 reply "+r) {
			return true
		}
	}
	return false
}

// ProxyStalled reports whether session's proxy attempt id has reports and
// every one is a timeout: the harness tries such an attempt again.
func ProxyStalled(session, id string, attempts []Attempt) bool {
	n := 0
	for _, a := range attempts {
		if a.Session != session || a.ID != id {
			continue
		}
		if !proxyTimeout(a) {
			return false
		}
		n++
	}
	return n > 0
}

// missing lists the planned attempt IDs that have no report from session
// that counts (counts nil: any report does).
func missing(session string, planned []string, attempts []Attempt, counts func(Attempt) bool) []string {
	seen := map[string]bool{}
	for _, a := range attempts {
		if a.Session == session && (counts == nil || counts(a)) {
			seen[a.ID] = true
		}
	}
	var out []string
	for _, id := range planned {
		if !seen[id] {
			out = append(out, id)
		}
	}
	return out
}
