package exec

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/gatehouse-dev/gatehouse/internal/creds"
	"github.com/gatehouse-dev/gatehouse/targets"
)

var _ targets.SessionCredentialer = (*session)(nil)

// maxEnviron bounds the init's environment read from the host.
const maxEnviron = 1 << 20

// SessionCredentials reads the init's environment from the host (what the
// wrapper handed its command) and names the credentials the wrapper made
// for this session: its proxy's per-run password and what carries it.
func (s *session) SessionCredentials(ctx context.Context) (map[string]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p := s.Init()
	if p == nil {
		return nil, errors.New("the session's init was not pinned at start")
	}
	// The pinned init's, or nothing: a process of the sandbox's own at
	// the init's path would hand in an environment of its choosing.
	env, err := p.Environ(maxEnviron)
	if err != nil {
		return nil, fmt.Errorf("the session's init (pid %d): %w", p.PID, err)
	}
	given := map[string]bool{}
	for _, kv := range s.env {
		if _, v, ok := bytes.Cut([]byte(kv), []byte("=")); ok {
			given[string(v)] = true
		}
	}
	out := map[string]string{}
	for h, what := range creds.WrapperSession(env, given) {
		out[h] = "the wrapper's per-session proxy credential (" + what + ")"
	}
	return out, nil
}
