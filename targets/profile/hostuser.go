package profile

import (
	"fmt"

	"github.com/gatehouse-dev/gatehouse/targets"
)

// RunUIDBase is the first host uid the bwrap target gives the sandboxes
// of a run on the normal path (the run's is RunUIDBase + its pid). The
// bwrap target's constant of the same name is this one.
const RunUIDBase = 2_000_000_000

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
	id := p.Identity(path)
	switch {
	case p.Target == "bwrap" && path == targets.PathBreach:
		return hostIDs(HostRoot, 0, 0, fmt.Sprintf("host root (uid 0): bubblewrap runs as root on this path, so uid %d inside maps to host uid 0; root-owned files bound in are the sandbox's", id.UID))
	case p.Target == "bwrap":
		return HostUser{Kind: HostRunUser, Text: fmt.Sprintf("this run's own unprivileged host uid and gid (%d + the run's pid, no account, no groups): bubblewrap runs as it, so uid %d inside maps to it, and it owns only the session's work folder and places", RunUIDBase, id.UID)}
	case p.IsWrapper() && id.UID == 0:
		return hostIDs(HostRoot, 0, id.GID, "host root (uid 0): the wrapper is started as root; what its sandbox keeps is read back at run time")
	case p.IsWrapper():
		return hostIDs(HostProfile, id.UID, id.GID, fmt.Sprintf("host uid %d, gid %d: the wrapper is started as the profile's uid (the harness adds no user namespace), an account of the machine if it has one", id.UID, id.GID))
	}
	if p.Docker.Runtime == "runsc" || p.Target == "gvisor" {
		return HostUser{Kind: HostEngine, Text: fmt.Sprintf("uid %d exists only in gVisor's kernel; on the host the sandbox is runsc's processes, as the engine starts them (read back at run time)", id.UID)}
	}
	return HostUser{Kind: HostEngine, UID: &id.UID, GID: &id.GID, Text: fmt.Sprintf("host uid %d, gid %d: the engine adds no user-namespace remapping, so the container's user is the same uid on the host (read back at run time)", id.UID, id.GID)}
}

func hostIDs(kind string, uid, gid int, text string) HostUser {
	return HostUser{Kind: kind, UID: &uid, GID: &gid, Text: text}
}
