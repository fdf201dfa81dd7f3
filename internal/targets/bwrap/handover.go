package bwrap

import (
	"context"
	"fmt"

	"github.com/gatehouse-dev/gatehouse/internal/untrusted"
	"github.com/gatehouse-dev/gatehouse/targets"
)

// handLimits bound a handover walk: the harness's own plants are a few
// files; anything larger is not what the harness made.
var handLimits = untrusted.Limits{Entries: 4096, Depth: 16}

// handOver gives the run's unprivileged user what a platform gives the
// agent's user: the session's work folder (and what the stage put in it),
// and the places the profile binds. Read-only places (a home with its
// credential files, mounted secrets) are handed over whole, as the agent's
// own files would be its user's; read-write places (its storage, a shared
// root) only the folder itself, which is what writing in them needs. No
// link is followed, no file with another name is handed over, and nothing
// is chmodded: under root (the breach path) nothing changes.
func handOver(ctx context.Context, u hostUser, st *stage, places []placeBind) error {
	st.owner = &u
	if err := untrusted.ChownTree(ctx, st.fs+"/work", u.uid, u.gid, true, handLimits); err != nil {
		return fmt.Errorf("stage: hand the work folder to host uid %d: %w", u.uid, err)
	}
	for _, p := range places {
		// Never hand over a folder that is not the place made (the doors
		// check again as they bind).
		f, _, err := targets.OpenPlace(p.spec, p.host)
		if err != nil {
			return fmt.Errorf("hand place %s over: %w", p.host, err)
		}
		f.Close()
		if err := untrusted.ChownTree(ctx, p.host, u.uid, u.gid, !p.rw, handLimits); err != nil {
			return fmt.Errorf("hand place %s to host uid %d: %w", p.host, u.uid, err)
		}
	}
	return nil
}
