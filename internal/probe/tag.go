package probe

import (
	"context"
	"net/http"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

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
	if tag, _ := ctx.Value(tagKey{}).(string); tag != "" && req.Header.Get(wire.SessionHeader) == "" {
		req.Header.Set(wire.SessionHeader, tag)
	}
	if id, _ := ctx.Value(attemptKey{}).(string); id != "" && req.Header.Get(wire.AttemptHeader) == "" {
		req.Header.Set(wire.AttemptHeader, id)
	}
}
