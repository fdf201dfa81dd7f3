package exec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gatehouse-dev/gatehouse/probe"
	"github.com/gatehouse-dev/gatehouse/targets"
)

var _ targets.SessionCredentialer = (*session)(nil)

// SessionCredentials reads the init's environment from the host (what the
// wrapper handed its command) and names the credentials the wrapper made
// for this session: its proxy's per-run password and what carries it.
func (s *session) SessionCredentials(ctx context.Context) (map[string]string, error) {
	if s.cg == nil {
		return nil, errors.New("no cgroup v2: the session's init cannot be found from outside")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	pid := findInCgroup(filepath.Base(s.cg.dir), InitPath)
	if pid == 0 {
		return nil, errors.New("the session's init was not found in its cgroup")
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		return nil, err
	}
	var env []string
	for _, kv := range bytes.Split(b, []byte{0}) {
		if len(kv) > 0 {
			env = append(env, string(kv))
		}
	}
	given := map[string]bool{}
	for _, kv := range s.env {
		if _, v, ok := bytes.Cut([]byte(kv), []byte("=")); ok {
			given[string(v)] = true
		}
	}
	out := map[string]string{}
	for h, what := range probe.WrapperSessionCredentials(env, given) {
		out[h] = "the wrapper's per-session proxy credential (" + what + ")"
	}
	return out, nil
}
