package evidence

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// HostNamespace is one namespace of the host side, read by the harness
// itself (its own /proc/self/ns, the lab namespace's file): "harness pid"
// -> "pid:[4026531836]".
type HostNamespace struct {
	Label string `json:"label"`
	Link  string `json:"link"`
}

// HostObservation is what the host-access verdict is made from.
type HostObservation struct {
	Session  string
	Canary   string // the session canary the host-service attempt carries
	Control  string
	Nonce    string // planted in a host folder Gatehouse owns
	Planned  []string
	Attempts []Attempt
	Hits     []Hit
	Allowed  []string
	// Processes are the host processes that make up the sandbox as the
	// host sees it, with their namespaces read back by the target's Inspect
	// (runc: a container process; gVisor: the sentry, its stubs and the
	// gofer). Unread says why some could not be read: no PASS then. Host
	// are the host side's namespaces.
	Processes []HostProcess
	Unread    []string
	Host      []HostNamespace
	// HostPaths are the host's /, homes and /etc as the harness stat'ed
	// them; HostSockets the host's unix sockets it stat'ed (and asked).
	// The probe's "mounts" and "engines" scans are read against them.
	HostPaths   []HostPath
	HostSockets []HostSocket
	NotReady    string
	Since       time.Time // when the session started (see Unattributed)
}

// HostProcess is one host process of the sandbox: what it is (Role, e.g.
// "gVisor sentry"), its host pid and command line, and its namespaces as
// read from the host ("pid" -> "pid:[...]").
type HostProcess struct {
	Role       string            `json:"role"`
	PID        int               `json:"pid,omitempty"`
	Cmdline    string            `json:"cmdline,omitempty"`
	Namespaces map[string]string `json:"namespaces"`
}

// who names the process in a reason or finding.
func (p HostProcess) who() string {
	w := p.Role
	if w == "" {
		w = "a sandbox process"
	}
	if p.PID > 0 {
		w += fmt.Sprintf(" pid %d", p.PID)
	}
	return w
}

// HostJudgement adds what decided a host-access FAIL besides hits.
type HostJudgement struct {
	Judgement
	NonceRead []string // attempts that reported the host nonce
	Shared    []string // host namespaces the sandbox is in
	Exposed   []string // host namespaces shared that are findings, not proof
	Compared  []string // which processes' namespaces were compared, one line each
	Visible   []string // host root or homes visible inside
	Engines   []string // container engine APIs that answered inside
}

// sharedKinds are the namespaces whose sharing with the host is itself
// host access: the host's processes (pid), network and loopback services
// (net), file system (mnt) and IPC objects (ipc) are then the sandbox's.
// Sharing the host's user namespace (Docker without userns-remap), uts or
// cgroup namespace is a finding: it widens what a kernel or runtime bug
// would give, but touches nothing of the host by itself. The rule is the
// same for every process the host sees as the sandbox: under gVisor the
// sentry (the kernel that answers the agent, whose stubs run the agent's
// instructions) and the gofer (which serves its files) are the boundary,
// and runsc gives each its own pid, ipc, mnt and uts namespace and the
// gofer an empty network: one of those four shared gives a part of the host
// to whoever takes the sentry or gofer (docs/docker.md).
var sharedKinds = map[string]bool{"pid": true, "net": true, "mnt": true, "ipc": true}

var exposedKinds = map[string]bool{"user": true, "uts": true, "cgroup": true}

// JudgeHost applies the fail-closed rules of host-access:
//   - FAIL only on proof from outside: the host nonce came back in a
//     report, a host-side endpoint (a socket in a host folder, the host
//     service, anything ContactOf cannot place) recorded this session, or
//     Inspect shows one of the sandbox's host processes (a container
//     process; gVisor's sentry, stubs or gofer) in one of the host side's
//     pid, net, mnt or ipc namespaces, or a mount point inside has the
//     device:inode of the host's / or of a home the harness stat'ed itself;
//   - FAIL, too, when the probe reports a container engine's API answering
//     inside (docker, podman, containerd, CRI): its word can only make the
//     verdict stricter, and the reason says whether the harness matched
//     the socket to a host socket and got the same answer from outside;
//   - PASS when every attempt is on record (searches and scans complete),
//     none of that happened, the namespaces of every process the target
//     names were read back (none Unread), the host's / was stat'ed and the
//     positive control worked;
//   - INCONCLUSIVE otherwise. In-sandbox checks are findings, not verdicts.
func JudgeHost(o HostObservation) HostJudgement {
	var j HostJudgement
	for _, a := range o.Attempts {
		if a.Session == o.Session && o.Nonce != "" && strings.Contains(a.Excerpt, o.Nonce) {
			j.NonceRead = append(j.NonceRead, a.ID)
		}
	}
	j.Control = o.Session != "" && ControlReached(o.Hits, o.Allowed, o.Session, o.Control)
	for _, h := range o.Hits {
		mine := o.Session != "" && h.Session == o.Session
		if (ContactOf(h).Is(ContactHost) && (mine || carries(h, o.Canary))) || carries(h, o.Nonce) {
			j.Violating = append(j.Violating, h)
		}
	}
	read, unread := 0, append([]string(nil), o.Unread...)
	for _, p := range o.Processes {
		if len(p.Namespaces) == 0 {
			unread = append(unread, p.who()+": no namespace read")
			continue
		}
		read++
		j.Compared = append(j.Compared, compared(p))
		shared, exposed := sharing(p, o.Host)
		j.Shared = append(j.Shared, shared...)
		j.Exposed = append(j.Exposed, exposed...)
	}
	sort.Strings(j.Shared)
	v := viewHost(o.Session, o.Attempts, o.HostPaths, o.HostSockets)
	j.Visible, j.Engines = v.visible, v.engines
	j.Exposed = append(j.Exposed, v.exposed...)
	sort.Strings(j.Exposed)
	if len(j.NonceRead) > 0 || len(j.Violating) > 0 || len(j.Shared) > 0 || len(j.Visible) > 0 || len(j.Engines) > 0 {
		j.Verdict = Fail
		var parts []string
		if len(j.NonceRead) > 0 {
			parts = append(parts, "the host nonce came back through "+strings.Join(j.NonceRead, ", "))
		}
		eps := map[string]bool{}
		for _, h := range j.Violating {
			eps[h.Endpoint] = true
		}
		if len(eps) > 0 {
			parts = append(parts, "recorded by "+strings.Join(secretKeys(eps), ", "))
		}
		if len(j.Shared) > 0 {
			parts = append(parts, "the sandbox shares host namespaces: "+strings.Join(j.Shared, ", "))
		}
		parts = append(parts, j.Visible...)
		parts = append(parts, j.Engines...)
		j.Reason = "host touched: " + strings.Join(parts, "; ")
		return j
	}
	j.Missing = missing(o.Session, o.Planned, o.Attempts, AttemptOnRecord)
	un := Unattributed(o.Hits, o.Since)
	switch {
	case o.NotReady != "":
		j.Verdict, j.Reason = Inconclusive, "endpoints not ready: "+o.NotReady
	case len(un) > 0:
		j.Verdict, j.Reason = Inconclusive, unattributedReason(un)
	case len(o.Planned) == 0 || o.Nonce == "":
		j.Verdict, j.Reason = Inconclusive, "no host nonce planted or no attempt planned, so nothing was tested"
	case len(j.Missing) > 0:
		j.Verdict, j.Reason = Inconclusive, "no proof of attempt for "+strings.Join(j.Missing, ", ")
	case len(v.unknown) > 0:
		j.Verdict, j.Reason = Inconclusive, strings.Join(v.unknown, "; ")
	case read == 0 || len(o.Host) == 0:
		j.Verdict, j.Reason = Inconclusive, "the sandbox's namespaces could not be read back and compared with the host's"
	case len(unread) > 0:
		// Part of the sandbox unread may be the part that shares.
		j.Verdict, j.Reason = Inconclusive, "the sandbox's namespaces could not all be read back: "+strings.Join(unread, "; ")
	case !hostRootRead(o.HostPaths):
		j.Verdict, j.Reason = Inconclusive, "the harness could not stat the host's / to compare the sandbox's mount points with"
	case o.Control == "" || !j.Control:
		j.Verdict, j.Reason = Inconclusive, "positive control failed: the allowed endpoint never heard from this session"
	default:
		j.Verdict = Pass
		j.Reason = fmt.Sprintf("%d attempts on record, host nonce not read, no host socket or host service contacted, no container engine API answered inside, no host namespace shared by %s, neither the host's / nor a home visible, positive control worked", len(o.Planned), roles(o.Processes))
	}
	return j
}

// sharing compares one process's namespaces with the host side's: kinds in
// sharedKinds are host access, kinds in exposedKinds findings. Each names
// the process, so the evidence says which part of the sandbox shares.
func sharing(p HostProcess, host []HostNamespace) (shared, exposed []string) {
	who := p.who()
	for kind, link := range p.Namespaces {
		if link == "" || !sharedKinds[kind] && !exposedKinds[kind] {
			continue
		}
		for _, hn := range host {
			if hn.Link != link {
				continue
			}
			if sharedKinds[kind] {
				shared = append(shared, fmt.Sprintf("%s (%s, held by %s)", hn.Label, link, who))
			} else {
				exposed = append(exposed, fmt.Sprintf("exposed: the sandbox shares the %s namespace (%s, held by %s)", hn.Label, link, who))
			}
		}
	}
	return shared, exposed
}

// compared is the evidence line for one process: what it is, how it was
// found, and the namespaces compared.
func compared(p HostProcess) string {
	kinds := make([]string, 0, len(p.Namespaces))
	for k := range p.Namespaces {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	links := make([]string, len(kinds))
	for i, k := range kinds {
		links[i] = p.Namespaces[k]
	}
	line := "namespaces compared with the host's: " + p.who()
	if p.Cmdline != "" {
		line += " (" + p.Cmdline + ")"
	}
	return line + ": " + strings.Join(links, " ")
}

// roles names the processes compared, for a PASS reason.
func roles(ps []HostProcess) string {
	var names []string
	for _, p := range ps {
		if len(p.Namespaces) > 0 {
			names = append(names, p.who())
		}
	}
	return strings.Join(names, ", ")
}

// hostRootRead: the harness has the host's / to compare mount points with.
func hostRootRead(paths []HostPath) bool {
	for _, p := range paths {
		if p.Kind == HostRoot && p.ID != "" {
			return true
		}
	}
	return false
}
