package bwrap

import (
	"context"
	"fmt"

	"github.com/gatehouse-dev/gatehouse/detect"
	"github.com/gatehouse-dev/gatehouse/targets"
)

var _ targets.SessionKeyer = (*session)(nil)

// SessionKeys: every process of the session runs in its cgroup (started
// straight into it), so the cgroup's id is what a monitor sees; the
// session's network namespace is the second key when it was given one.
func (s *session) SessionKeys(ctx context.Context) ([]detect.SessionKey, error) {
	var k detect.SessionKey
	if s.cg != nil {
		id, path, err := cgroupKey(s.cg.dir)
		if err != nil {
			return nil, fmt.Errorf("bwrap: session keys: %w", err)
		}
		k.CgroupID, k.CgroupPath = id, path
	}
	if s.netns != (nsID{}) {
		k.NetnsInode = s.netns.ino
	}
	k.LoginUID = s.loginuid
	if k == (detect.SessionKey{}) {
		return nil, fmt.Errorf("bwrap: no cgroup v2 and no session namespace: %w", targets.ErrUnsupported)
	}
	return []detect.SessionKey{k}, nil
}
