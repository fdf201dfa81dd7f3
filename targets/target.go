// Package targets defines the contract every sandbox adapter implements.
//
// A Target starts Sessions; a Session is one sandbox instance the harness
// can run commands in, copy files into, read its applied configuration back
// from, and stop. Adapters live in sub-packages (bwrap, docker, ...) and are
// chosen by an explicit switch in cmd/gatehouse, never by init() side effects.
package targets

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/detect"
)

// ErrUnsupported means "this target cannot do that": the caller skips with
// the wrapped reason, it never counts as a pass.
var ErrUnsupported = errors.New("not supported by this target")

// Path is how the sandboxed agent runs.
type Path string

const (
	// PathNormal: the agent runs as the unprivileged user the profile gives.
	PathNormal Path = "normal"
	// PathBreach: attack code runs as root inside the guest (assume-breach).
	PathBreach Path = "assume-breach"
)

// Valid reports whether p is one of the known paths.
func (p Path) Valid() bool { return p == PathNormal || p == PathBreach }

// Network describes the session network namespace the harness prepared
// (joined to the lab). Empty NetnsPath means the target must not get a
// network of ours (it must then isolate the session with no network at all).
type Network struct {
	NetnsName string // e.g. "gh-1a2b-s3"
	NetnsPath string // e.g. "/run/netns/gh-1a2b-s3"
	IPv4      string // the session's own address, e.g. "198.51.100.6"
	IPv6      string // e.g. "2001:db8:100:3::2"
	Resolver  string // the resolver the sandbox is given, e.g. "203.0.113.53"
}

// Spec is what the harness asks a target to start.
type Spec struct {
	Name    string            // unique per run, used in resource names
	Path    Path              // normal or assume-breach
	Network Network           // session network prepared by the harness
	Env     map[string]string // extra environment for every command
	// Files are placed in the sandbox before it starts, keyed by absolute
	// in-sandbox path (read-only for the agent unless the target says otherwise).
	Files map[string]File
	// Places are host folders the harness prepared for this session, by
	// name: planted canaries ("home", "secrets"), the session's own storage
	// ("storage"), a folder shared by concurrent sessions ("shared"), the
	// host nonce ("host"). A profile refers to one as {{place:NAME}} in its
	// runtime arguments; a profile that names none of them sees none of them.
	Places map[string]string
	// PlaceIDs are the folders behind Places, by the same names, as the
	// harness made them. A path can be swapped for a link or another folder
	// by a session that writes its parent (storage-root): a target binds a
	// place only through OpenPlace, which checks it against this.
	PlaceIDs map[string]FileID
	// Secrets are canary values by name. A profile's environment refers to
	// one as {{secret:NAME}}: the careless setup that hands an agent a
	// long-lived key.
	Secrets map[string]string
}

// Expand replaces {{place:NAME}} and {{secret:NAME}} in s from spec. A name
// the harness did not provide is an error, so a typo in a profile can never
// silently drop a mount.
func Expand(s string, spec Spec) (string, error) {
	var out strings.Builder
	for {
		i := strings.Index(s, "{{")
		if i < 0 {
			out.WriteString(s)
			return out.String(), nil
		}
		j := strings.Index(s[i:], "}}")
		if j < 0 {
			return "", fmt.Errorf("unclosed {{ in %q", s)
		}
		ref := s[i+2 : i+j]
		kind, name, _ := strings.Cut(ref, ":")
		var table map[string]string
		switch kind {
		case "place":
			table = spec.Places
		case "secret":
			table = spec.Secrets
		default:
			return "", fmt.Errorf("unknown reference {{%s}}: use {{place:NAME}} or {{secret:NAME}}", ref)
		}
		v, ok := table[name]
		if !ok {
			return "", fmt.Errorf("{{%s}}: this run provides no %s named %q (it has: %s)", ref, kind, name, strings.Join(keys(table), ", "))
		}
		out.WriteString(s[:i])
		out.WriteString(v)
		s = s[i+j+2:]
	}
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	if len(out) == 0 {
		out = []string{"none"}
	}
	return out
}

// File is one file to place in a session.
type File struct {
	HostPath string      // read from here...
	Data     []byte      // ...or these bytes when HostPath is empty
	Mode     fs.FileMode // permission bits inside the sandbox
	// Bind places HostPath (a file or a folder) read-only as it is, with
	// no copy: for large trees such as an agent's runtime (hundreds of
	// MB). Only for paths the harness checks itself (by digest, before
	// each run), since a session that could remount the bind writable
	// could change them for later sessions; a copy per session is the
	// default for that reason.
	Bind bool
}

// Command is one process to run inside a session.
type Command struct {
	Args []string
	Env  map[string]string
	// User, when set ("uid:gid"), runs the command as that user instead of
	// the session's path identity; a target that cannot returns an error
	// wrapping ErrUnsupported.
	User string
	// Dir, when set, is the folder the command starts in (otherwise the
	// target's own working folder).
	Dir   string
	Stdin io.Reader
	// Stdout and Stderr receive the output as it arrives. Callers that treat
	// output as hostile pass size-capped writers.
	Stdout io.Writer
	Stderr io.Writer
}

// Result is the outcome of Exec. A non-zero exit is data, not an error.
type Result struct {
	ExitCode int
	Duration time.Duration
}

// Config is the effective configuration read back from the runtime after
// start: what was really applied, not what was asked for.
type Config struct {
	Target  string `json:"target"`
	Runtime string `json:"runtime"`
	// Image is the digest of the image the runtime really ran (sha256:...),
	// "" for targets without images. The evidence names it as a subject.
	Image  string            `json:"image,omitempty"`
	Facts  map[string]string `json:"facts"` // e.g. "uid_map", "cap_eff", "seccomp", "nft_ruleset"
	Mounts []string          `json:"mounts,omitempty"`
	Argv   []string          `json:"argv,omitempty"` // the exact command line used to start the sandbox
	// Created are host paths the target made for this session and removes
	// when it stops it: what "storage left after a stop" means. A team's
	// own read-write binds are not in it: a project checkout outliving a
	// stop is normal.
	Created []string `json:"created,omitempty"`
	// Sources maps a bind source the argv names that is not the host path
	// itself to the host path it holds (bwrap's doors, which exist only in
	// a mount namespace of their own): what a bind really exposes.
	Sources map[string]string `json:"sources,omitempty"`
}

// Target starts sessions of one kind of sandbox.
type Target interface {
	Name() string
	Start(ctx context.Context, spec Spec) (Session, error)
}

// Session is one running sandbox.
type Session interface {
	// Exec runs a command to completion. ctx cancellation kills it.
	Exec(ctx context.Context, cmd Command) (Result, error)
	// CopyIn writes a file at an absolute in-sandbox path.
	CopyIn(ctx context.Context, path string, r io.Reader, mode fs.FileMode) error
	// Inspect reads back the configuration the runtime applied.
	Inspect(ctx context.Context) (Config, error)
	// Stop ends the session and removes what it created; safe to call twice.
	Stop(ctx context.Context) error
}

// ProcessLister is the optional ability of a session to list, from the
// host, every process it runs, whatever namespaces those made for
// themselves (bwrap: its cgroup). Found by type assertion; it returns an
// error wrapping ErrUnsupported when it cannot (no cgroup v2).
type ProcessLister interface {
	Processes(ctx context.Context) ([]int, error)
}

// SessionCredentialer is the optional ability of a session to say which
// credential-shaped values the sandbox itself made for this session alone
// and handed its commands (a wrapper's per-run proxy token): by hash, what
// each is. They end with the session and work only through the sandbox's
// own proxy, so long-lived-secret records them as findings, not FAILs.
// Values the team's profile handed in never count.
type SessionCredentialer interface {
	SessionCredentials(ctx context.Context) (map[string]string, error)
}

// SessionKeyer is the optional ability of a session to say how monitors
// see it: the keys (cgroup id and path, network namespace inode, container
// id) that tie a monitor's event to this session and no other. Read once,
// right after Start. It returns an error wrapping ErrNotObservable when
// host monitors cannot see inside the session at all (gVisor: runsc serves
// the sandbox's syscalls itself), and one wrapping ErrUnsupported when it
// has no key (no cgroup v2).
type SessionKeyer interface {
	SessionKeys(ctx context.Context) ([]detect.SessionKey, error)
}

// ErrNotObservable means a host monitor cannot see what runs inside the
// session: its attempts are "not observable by this monitor", never missed.
var ErrNotObservable = errors.New("host monitors cannot see inside this session")
