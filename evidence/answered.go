package evidence

import (
	"fmt"
	"strings"
	"time"
)

// A timeout is no answer: the attempt ran out of its time. Under a drop
// policy that is how a blocked attempt ends, but on a starved machine a
// slow answer (a proxy still connecting, a resolver still forwarding) ends
// the same way. So a timeout supports a PASS only with the kernel's proof,
// taken by the harness, that the attempt's packets were dropped
// (Attempt.Dropped). Without it the attempt is undecided, and a gate with
// an undecided attempt is INCONCLUSIVE, naming the load the harness
// measured: never a PASS, nor a FAIL, for lack of time.

// Answered reports whether a report is an answer: any outcome but a
// timeout, or a timeout the kernel showed to be a drop.
func Answered(a Attempt) bool {
	return a.Outcome != "timeout" || a.Dropped != ""
}

// Load is what the harness measured of its machine while a scenario's
// attempts ran, and what it did about undecided ones.
type Load struct {
	// Delay is the worst lateness of the harness's own short sleeps:
	// how long the machine kept it from running.
	Delay time.Duration
	// Retries is how many rounds of tries again the undecided attempts
	// had; Longest the longest time one try was given.
	Retries int
	Longest time.Duration
	// CPUWait is how long runnable tasks waited for a CPU (the kernel's
	// pressure, PSI) over Watched, from the first try to the last;
	// CPUKnown is false on a kernel without PSI.
	CPUWait, Watched time.Duration
	CPUKnown         bool
}

// starved says whether the machine was too loaded to judge: the harness's
// own sleeps woke late, or tasks waited for a CPU a quarter of the time.
func (l *Load) starved() bool {
	return l.Delay >= Starved || (l.CPUKnown && l.Watched > 0 && 4*l.CPUWait >= l.Watched)
}

// measured says what was measured, for a reason.
func (l *Load) measured() string {
	s := "harness delay measured " + l.Delay.Round(time.Millisecond).String()
	if l.CPUKnown {
		s += fmt.Sprintf("; tasks waited for a CPU %s of the %s watched", l.CPUWait.Round(10*time.Millisecond), l.Watched.Round(10*time.Millisecond))
	}
	return s
}

// Starved is the harness delay from which the machine counts as too loaded
// to judge: a 2-core machine at rest wakes a sleeper within a millisecond
// or two. A CPU wait of a quarter of the time watched counts too, as the
// stop-signal gate counts it.
const Starved = 20 * time.Millisecond

// TimedOut lists the planned IDs that session reported only as timeouts
// without proof of a drop: tried, and undecided.
func TimedOut(session string, planned []string, attempts []Attempt) []string {
	timed, answered := map[string]bool{}, map[string]bool{}
	for _, a := range attempts {
		if a.Session != session {
			continue
		}
		if Answered(a) {
			answered[a.ID] = true
		} else {
			timed[a.ID] = true
		}
	}
	var out []string
	for _, id := range planned {
		if timed[id] && !answered[id] {
			out = append(out, id)
		}
	}
	return out
}

// TimedOutReason says why undecided attempts leave a gate INCONCLUSIVE:
// the machine's load when the harness measured it starved, or a way that
// hangs when it did not (l nil: not measured).
func TimedOutReason(ids []string, planned int, l *Load) string {
	what := fmt.Sprintf("%d of %d attempts timed out with no answer and no kernel-side proof that their packets were dropped", len(ids), planned)
	if l != nil && l.Retries > 0 {
		what += fmt.Sprintf(", after %d round(s) of tries again (up to %s each)", l.Retries, l.Longest.Round(time.Millisecond))
	}
	list := ": " + listFew(ids, 8)
	switch {
	case l == nil:
		return what + " (harness delay not measured)" + list
	case l.starved():
		return "the machine was too loaded to judge: " + what + " (" + l.measured() + ")" + list
	}
	return what + " (" + l.measured() + ", so not the machine's load: these ways hang, and one that never answers shows nothing blocked)" + list
}

// missingReason says why planned attempts are not on record: undecided
// ones (timedOut) by TimedOutReason, the others as having no proof.
func missingReason(missing, timedOut []string, planned int, l *Load) string {
	others := without(missing, timedOut)
	var parts []string
	if len(timedOut) > 0 {
		parts = append(parts, TimedOutReason(timedOut, planned, l))
	}
	if len(others) > 0 {
		parts = append(parts, "no proof of attempt for "+strings.Join(others, ", "))
	}
	return strings.Join(parts, "; ")
}

// without is ids less those in drop, in order.
func without(ids, drop []string) []string {
	d := map[string]bool{}
	for _, id := range drop {
		d[id] = true
	}
	var out []string
	for _, id := range ids {
		if !d[id] {
			out = append(out, id)
		}
	}
	return out
}

func listFew(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:n], ", "), len(items)-n)
}
