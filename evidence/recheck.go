package evidence

import (
	"fmt"
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
// every scenario's judgement was made again over the lab's whole record
// (steps.Outcome.Rejudge, which applies each gate's own rules to late
// hits). What no judgement can see is a hit log that overflowed: then
// every PASS becomes INCONCLUSIVE, since no one can say nothing forbidden
// arrived. It returns how many verdicts it changed.
func Recheck(results []Result, hits []Hit, dropped int) int {
	if dropped <= 0 {
		return 0
	}
	changed := 0
	for i := range results {
		r := &results[i]
		if r.Verdict != Pass {
			continue
		}
		r.Verdict = Inconclusive
		r.Reason = fmt.Sprintf("the lab's hit log overflowed (%d hits dropped), so no one can say nothing forbidden arrived", dropped)
		changed++
	}
	return changed
}
