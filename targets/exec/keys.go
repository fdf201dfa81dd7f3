package exec

import (
	"context"
	"fmt"
	"syscall"

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
			return nil, fmt.Errorf("%s: session keys: %w", s.name, err)
		}
		k.CgroupID, k.CgroupPath = id, path
	}
	if p := s.spec.Network.NetnsPath; p != "" {
		var st syscall.Stat_t
		if err := syscall.Stat(p, &st); err != nil {
			return nil, fmt.Errorf("%s: session keys: %w", s.name, err)
		}
		k.NetnsInode = st.Ino
	}
	k.LoginUID = s.loginuid
	if k == (detect.SessionKey{}) {
		return nil, fmt.Errorf("%s: no cgroup v2 and no session namespace: %w", s.name, targets.ErrUnsupported)
	}
	return []detect.SessionKey{k}, nil
}
