package profile

import (
	"github.com/gatehouse-dev/gatehouse/targets"
)

// Kinds of HostUser.
const (
	HostRoot    = "root"    // host uid 0
	HostRunUser = "run"     // the run's own unprivileged uid, allocated at run time
	HostProfile = "profile" // the uid the profile names, used as is on the host
	HostEngine  = "engine"  // what the container engine makes of the profile's user
)

// HostUser is who a path's sandbox user is on the host: the uid its
// processes hold in the machine's own user namespace, which decides what
// of the host it can read or signal if it gets there (through a bind, a
// shared namespace, an escape). A run reads the real one back from the
// kernel (the "host_user" and "outside.uid" facts); this is what the
// harness will do, worked out before anything runs.
type HostUser struct {
	Kind string `json:"kind"`
	UID  *int   `json:"uid"` // null when allocated at run time
	GID  *int   `json:"gid"`
	Text string `json:"text"`
}

// HostUser works out who the sandbox's user is on the host on path.
func (p *Profile) HostUser(path targets.Path) HostUser {
	return p.describe().HostUser[path]
}

// HostIDs is a HostUser of known uid and gid.
func HostIDs(kind string, uid, gid int, text string) HostUser {
	return HostUser{Kind: kind, UID: &uid, GID: &gid, Text: text}
}
