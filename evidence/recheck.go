package evidence

import (
	"fmt"
	"time"
)

// NeverAllowed are endpoints no policy may let a session reach: a contact
// with any of them is a violation whatever the gate.
var NeverAllowed = map[string]bool{
	"callback": true, "dns-authority": true, "metadata-aws": true, "metadata-gcp": true,
	"metadata-azure": true, "metadata-other": true, "wireserver": true,
	"engine-socket": true, "host-service": true, "credential-socket": true,
}

// Recheck runs once the whole run is over and the lab is closed. A verdict
// was made from the hits seen a moment after its attempts; a packet that
// arrived later, or a hit log that overflowed, must not leave a PASS
// standing:
//   - a PASS whose session later reached a never-allowed endpoint becomes FAIL;
//   - every PASS becomes INCONCLUSIVE when the lab dropped hits.
//
// It returns how many verdicts it changed.
func Recheck(results []Result, hits []Hit, dropped int) int {
	changed := 0
	for i := range results {
		r := &results[i]
		if r.Verdict != Pass {
			continue
		}
		end := r.Start.Add(time.Duration(r.DurationMS * float64(time.Millisecond)))
		var late []Hit
		for _, h := range hits {
			if h.Session != "" && h.Session == r.Session && NeverAllowed[h.Endpoint] {
				late = append(late, h)
			}
		}
		late = Fold(late)
		switch {
		case len(late) > 0:
			r.Verdict = Fail
			r.Hits = append(r.Hits, late...)
			r.Reason = fmt.Sprintf("%d forbidden contact(s) recorded after the verdict (the first at %s, verdict made at %s): %s",
				len(late), late[0].Time.Format(time.RFC3339Nano), end.Format(time.RFC3339Nano), describe(late, ""))
			changed++
		case dropped > 0:
			r.Verdict = Inconclusive
			r.Reason = fmt.Sprintf("the lab's hit log overflowed (%d hits dropped), so no one can say nothing forbidden arrived", dropped)
			changed++
		}
	}
	return changed
}
