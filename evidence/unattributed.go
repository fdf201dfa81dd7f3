package evidence

import (
	"fmt"
	"time"
)

// Unattributed returns the hits on never-allowed endpoints, arrived at or
// after since, that no session could be named for: no session tag, no
// session's source address, and more than one session alive at the time
// (the lab pins an untagged hit on the only live session when there is
// one). Some sandbox let each of them through; a verdict made while it
// arrived cannot say it was not this session's, so it can be no PASS.
// A connection record whose connection then made a request is folded into
// that request first (Fold): a TLS connection shows no tag until its
// request does, and the request's attribution is the connection's.
func Unattributed(hits []Hit, since time.Time) []Hit {
	var out []Hit
	for _, h := range Fold(hits) {
		if h.Session == "" && NeverAllowed[h.Endpoint] && !h.Time.Before(since) {
			out = append(out, h)
		}
	}
	return out
}

func unattributedReason(hs []Hit) string {
	return fmt.Sprintf("%d contact(s) with forbidden endpoints that no session can be named for arrived while this session ran (%s): "+
		"no session tag, no session's source address, and several sessions alive; some sandbox let them through, and this one cannot be cleared",
		len(hs), describe(hs, ""))
}
