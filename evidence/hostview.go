package evidence

import (
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"
)

// HostPath is a host folder the harness stat'ed itself. A bind mount shows
// the same device:inode inside a sandbox as outside, so a mount point the
// probe lists with this ID is this folder.
type HostPath struct {
	Path string `json:"path"`
	Kind string `json:"kind"` // HostRoot, HostHome or HostEtc
	ID   string `json:"id"`   // "major:minor:inode"
}

// Kinds of HostPath. The root or a home visible inside is host access (a
// FAIL); /etc is a finding (configuration, usually no one's secrets).
const (
	HostRoot = "root"
	HostHome = "home"
	HostEtc  = "etc"
)

// HostSocket is a unix socket on the host, stat'ed by the harness, and
// what it answered when the harness asked it (read-only) as an engine.
type HostSocket struct {
	Path   string `json:"path"`
	ID     string `json:"id"`
	Answer string `json:"answer,omitempty"` // e.g. "docker version=20.10.24,api=1.41"; "" if not an engine
	// Silent: it took the harness's question and said nothing in time.
	Silent bool `json:"silent,omitempty"`
}

// engineSocketNames are the file names engines give their API socket: a
// host socket by such a name, silent to the probe and to the harness, may
// be a starved engine, and cannot be called no engine.
var engineSocketNames = map[string]bool{
	"docker.sock": true, "containerd.sock": true, "podman.sock": true, "crio.sock": true,
	"cri-dockerd.sock": true, "buildkitd.sock": true,
}

// engineTypes are the probe's engine answers that prove an engine's API.
var engineTypes = map[string]bool{"docker": true, "podman": true, "containerd": true, "cri": true}

var (
	mntLine    = regexp.MustCompile(`^mnt (\d+:\d+:\d+) (/.{0,400})$`)
	engineLine = regexp.MustCompile(`^engine ([a-z0-9-]{1,20}) (\d+:\d+:\d+|) (\S{1,200}) (/.{0,400})$`)
	silentLine = regexp.MustCompile(`^silent (\d+:\d+:\d+) (/.{0,400})$`)
)

// hostView is what the probe's host scans show of the host, read against
// what the harness read itself.
type hostView struct {
	visible []string // host root or home visible inside: FAIL
	engines []string // a container engine API answered inside: FAIL
	exposed []string // findings
	unknown []string // could not be judged: no PASS
}

// viewHost reads this session's "mnt" and "engine" lines.
func viewHost(session string, attempts []Attempt, paths []HostPath, socks []HostSocket) hostView {
	var v hostView
	byID := map[string]HostPath{}
	for _, p := range paths {
		if p.ID != "" {
			byID[p.ID] = p
		}
	}
	sockByID := map[string]HostSocket{}
	for _, s := range socks {
		if s.ID != "" {
			sockByID[s.ID] = s
		}
	}
	seen := map[string]bool{}
	add := func(list *[]string, s string) {
		if !seen[s] {
			seen[s] = true
			*list = append(*list, s)
		}
	}
	for _, a := range attempts {
		if a.Session != session || a.Kind != "hostcheck" {
			continue
		}
		for _, line := range strings.Split(a.Excerpt, "\n") {
			if m := mntLine.FindStringSubmatch(line); m != nil {
				hp, ok := byID[m[1]]
				switch {
				case !ok:
				case hp.Kind == HostEtc:
					add(&v.exposed, fmt.Sprintf("exposed: the host's %s is visible inside at %s (device:inode %s)", hp.Path, m[2], m[1]))
				default:
					add(&v.visible, fmt.Sprintf("the host's %s (%s) is visible inside at %s (device:inode %s inside and outside)", hp.Path, hostKindName(hp.Kind), m[2], m[1]))
				}
				continue
			}
			if m := silentLine.FindStringSubmatch(line); m != nil {
				// The socket said nothing to the probe in time, which a
				// starved engine does too (issue 22): the host's socket of
				// the same device:inode, asked by the harness with more
				// time, decides.
				id, at := m[1], m[2]
				hs, ok := sockByID[id]
				switch {
				case !ok:
				case engineTypes[strings.SplitN(hs.Answer, " ", 2)[0]]:
					add(&v.engines, fmt.Sprintf("a container engine's socket is reachable inside at %s: the host's socket %s (same device:inode %s), which answered the harness as %s (silent to the probe in time)", at, hs.Path, id, hs.Answer))
				case hs.Silent && (engineSocketNames[path.Base(hs.Path)] || engineSocketNames[path.Base(at)]):
					add(&v.unknown, fmt.Sprintf("the host's socket %s is reachable inside at %s (same device:inode %s) and answered neither the probe nor the harness in time: a starved engine cannot be told from none", hs.Path, at, id))
				default:
					add(&v.exposed, fmt.Sprintf("exposed: the host's socket %s is reachable inside at %s (same device:inode %s); it did not answer as a container engine", hs.Path, at, id))
				}
				continue
			}
			m := engineLine.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			typ, id, detail, at := m[1], m[2], m[3], m[4]
			if !engineTypes[typ] {
				add(&v.exposed, fmt.Sprintf("exposed: an HTTP/2 (gRPC) server answered at %s, not identified as a container engine", at))
				continue
			}
			s := fmt.Sprintf("a container engine API answered at %s: %s %s", at, typ, detail)
			if hs, ok := sockByID[id]; ok {
				s += fmt.Sprintf("; it is the host's socket %s (same device:inode %s)", hs.Path, id)
				if hs.Answer != "" {
					s += ", which answered the harness as " + hs.Answer
				}
			} else {
				s += " (the probe's report; not matched to a host socket the harness could stat)"
			}
			add(&v.engines, s)
		}
	}
	sort.Strings(v.visible)
	sort.Strings(v.engines)
	sort.Strings(v.exposed)
	sort.Strings(v.unknown)
	return v
}

func hostKindName(k string) string {
	if k == HostRoot {
		return "its root file system"
	}
	return "a user's home"
}
