package probe

import (
	"context"
	"net/http"
)

// SessionHeader carries the session's tag (Plan.Canary) on every HTTP
// request the probe makes, so a controlled endpoint can tell sessions apart
// when they share one network and one source address (host networking, a
// shared proxy). The tag is unguessable per session: a request carrying it
// came from that session's sandbox.
const SessionHeader = "X-Gatehouse-Session"

type tagKey struct{}

func withTag(ctx context.Context, tag string) context.Context {
	if tag == "" {
		return ctx
	}
	return context.WithValue(ctx, tagKey{}, tag)
}

// tagRequest adds the session tag to req unless the step set the header.
func tagRequest(ctx context.Context, req *http.Request) {
	if tag, _ := ctx.Value(tagKey{}).(string); tag != "" && req.Header.Get(SessionHeader) == "" {
		req.Header.Set(SessionHeader, tag)
	}
}
