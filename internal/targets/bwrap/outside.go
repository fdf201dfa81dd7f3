package bwrap

import "fmt"

// hostUserFacts reads who the sandbox's user is on the host from the
// pinned init ("outside.*" facts, hostsession.OutsideFacts) and words it
// in "host_user", checked against whom bubblewrap was started as.
func (s *session) hostUserFacts(f map[string]string) {
	if c, ok := s.OutsideFacts(f, "the session's init (pinned at start)"); ok {
		f["host_user"] = describeHostUser(c.HostUID(), s.user)
	}
}

// describeHostUser words what the kernel said (uid, read back), checked
// against what the target meant to run as.
func describeHostUser(uid int, meant hostUser) string {
	if uid != meant.uid {
		return fmt.Sprintf("host uid %d, NOT the uid the harness started bubblewrap as (%d)", uid, meant.uid)
	}
	return meant.describe()
}
