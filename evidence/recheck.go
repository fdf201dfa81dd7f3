package evidence

import (
	"fmt"
	"sort"
	"strings"
)

// NeverAllowed are endpoints no policy may let a session reach. A contact
// with one that no session can be named for makes the verdicts of the
// sessions alive then INCONCLUSIVE (see Unattributed).
var NeverAllowed = map[string]bool{
	"callback": true, "dns-authority": true, "metadata-aws": true, "metadata-gcp": true,
	"metadata-azure": true, "metadata-other": true, "wireserver": true,
	"engine-socket": true, "host-service": true, "credential-socket": true,
}

// Recheck runs once the whole run is over and the lab is closed, after
// every scenario's verdict was made over the lab's whole record
// (steps.Outcome.Judge, which applies each gate's own rules to late
// hits). What no judgement can see is a hit log that overflowed: then
// every PASS becomes INCONCLUSIVE, since no one can say nothing forbidden
// arrived. It returns how many verdicts it changed.
func Recheck(results []Result, hits []Hit, dropped int) int {
	if dropped <= 0 {
		return 0
	}
	return passesInconclusive(results, fmt.Sprintf("the lab's hit log overflowed (%d hits dropped), so no one can say nothing forbidden arrived", dropped))
}

// passesInconclusive makes every PASS INCONCLUSIVE for why, and returns
// how many it changed; other verdicts stand.
func passesInconclusive(results []Result, why string) int {
	changed := 0
	for i := range results {
		if results[i].Verdict == Pass {
			results[i].Verdict, results[i].Reason = Inconclusive, why
			changed++
		}
	}
	return changed
}

// RecheckDrops runs with Recheck: drops lists what the kernel dropped at
// the lab's own sockets during the run (a full receive buffer, an accept
// queue that overflowed: the harness read too late on a loaded machine),
// err says the counters could not be read. Either way a query or a
// connection may have reached the lab and never become a hit, so every
// PASS becomes INCONCLUSIVE (issue 22). It returns how many it changed.
func RecheckDrops(results []Result, drops []string, err error) int {
	var why string
	switch {
	case err != nil:
		why = "the kernel's drop counters at the lab's sockets could not be read (" + err.Error() + "), so no one can say nothing forbidden arrived"
	case len(drops) > 0:
		why = "the kernel dropped packets at the lab's own sockets (" + strings.Join(drops, ", ") + "): the machine was too loaded for the lab to read them in time, so no one can say nothing forbidden arrived"
	default:
		return 0
	}
	return passesInconclusive(results, why)
}

// RecheckTraces runs once every trace is closed, with the run folder's
// Cuts. A PASS that reads a trace that lost lines becomes INCONCLUSIVE,
// naming the trace and what it lost: nothing forbidden can be ruled out
// from a record that is not whole. Every trace supports every verdict
// except the alerts (detection never changes a verdict) and the model
// transcript (only the agent runs' verdicts read it). It returns how many
// verdicts it changed.
func RecheckTraces(results []Result, cuts map[string]TraceCut) int {
	names := make([]string, 0, len(cuts))
	for n, c := range cuts {
		if c.DroppedLines > 0 && n != AlertsTrace {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	changed := 0
	for i := range results {
		r := &results[i]
		if r.Verdict != Pass {
			continue
		}
		for _, n := range names {
			if n == TranscriptTrace && r.Agent == nil {
				continue
			}
			c := cuts[n]
			r.Verdict = Inconclusive
			r.Reason = fmt.Sprintf("%s reached its limit (%d lines, %d bytes) and dropped %d line(s), %d bytes, so no one can say nothing forbidden is among them",
				n, c.Lines, c.Bytes, c.DroppedLines, c.DroppedBytes)
			changed++
			break
		}
	}
	return changed
}
