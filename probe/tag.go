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

// AttemptHeader names the attempt (Step.ID) a request belongs to, so the
// lab's record of what got through can say which way it took. It is the
// probe's own label: shown, never used to decide a verdict.
const AttemptHeader = "X-Gatehouse-Attempt"

type tagKey struct{}

type attemptKey struct{}

func withAttempt(ctx context.Context, id string) context.Context {
	if id == "" {
		return ctx
	}
	return context.WithValue(ctx, attemptKey{}, id)
}

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
	if id, _ := ctx.Value(attemptKey{}).(string); id != "" && req.Header.Get(AttemptHeader) == "" {
		req.Header.Set(AttemptHeader, id)
	}
}
