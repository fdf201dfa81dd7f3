package exec

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
	"github.com/gatehouse-dev/gatehouse/targets"
)

// Targets whose sandbox is a wrapper command Gatehouse runs unmodified:
// any wrapper, or firejail with its arguments.
const (
	KindExec     = "exec"
	KindFirejail = "firejail"
)

// Kind is the exec or the firejail target's kind (the sections exec or
// firejail, and workspace).
type Kind struct{ firejail bool }

// NewKind returns the kind of target name, KindExec or KindFirejail.
func NewKind(name string) Kind { return Kind{firejail: name == KindFirejail} }

var _ profile.Kind = Kind{}

// Name is KindExec or KindFirejail.
func (k Kind) Name() string {
	if k.firejail {
		return KindFirejail
	}
	return KindExec
}

// Load checks the exec or firejail section.
func (k Kind) Load(l *profile.Loading) error {
	if err := CheckWrapperPlace(l); err != nil {
		return err
	}
	p := l.Profile()
	if k.firejail {
		fj := FirejailOf(p)
		for i, a := range fj.Args {
			if a == "--" {
				return l.FailItem("firejail.args", i, errors.New(`"--" is added by the target, before the init`))
			}
		}
		return LoadWrapperFiles(l, "firejail", fj.Files, fj.Args)
	}
	e := SectionOf(p)
	if len(e.Argv) == 0 || e.Argv[0] == "" {
		return l.Fail("exec.argv", errors.New("required for target exec: the wrapper command, e.g. [my-sandbox, --policy, \"{{file:policy}}\", --]"))
	}
	if len(e.Version) > 0 && e.Version[0] == "" {
		return l.Fail("exec.version", errors.New("the command's first word is empty"))
	}
	return LoadWrapperFiles(l, "exec", e.Files, e.Argv)
}

// Describe: the wrapper's own controls, from its arguments where firejail's
// say something, else read back by the probe.
func (k Kind) Describe(p *profile.Profile) profile.Description {
	if !k.firejail {
		e := SectionOf(p)
		w := profile.Wrapper{Argv: e.Argv, Version: e.Version, Files: p.WrapperFiles()}
		d := DescribeWrapper(p, w, WrapperFacts{
			PolicyField: "exec.files",
			NoNewPrivs:  true, // the wrapper's own business: the probe reads it back
			HostTmp:     "exec: what the wrapper makes of the host's /tmp is not known from the profile",
		})
		d.Words = []profile.Words{k.words(p)}
		return d
	}
	args := FirejailOf(p).Args
	argv := append([]string{"firejail"}, args...)
	w := profile.Wrapper{Argv: append(argv, "--"), Version: []string{"firejail", "--version"}, Files: p.WrapperFiles()}
	f := WrapperFacts{PolicyField: "firejail.files", NoNewPrivs: slices.Contains(args, "--nonewprivs")}
	if !slices.Contains(args, "--private-tmp") {
		f.HostTmp = "firejail without --private-tmp: the sandbox writes the host's /tmp, where root's programs look for their files"
	}
	d := DescribeWrapper(p, w, f)
	d.Words = []profile.Words{k.words(p)}
	if slices.Contains(args, "--caps.drop=all") {
		for path := range d.Caps {
			d.Caps[path] = profile.CapSet{}
		}
	}
	for _, a := range args {
		if a == "--seccomp" || strings.HasPrefix(a, "--seccomp=") || strings.HasPrefix(a, "--seccomp.") {
			d.Seccomp = profile.Control{Where: "installed by firejail (" + a + ")", Reach: profile.Outside(), Why: profile.FilterStays}
			break
		}
	}
	for _, a := range args {
		// --net=none or --net=IFACE makes firejail's sandbox a network
		// namespace of its own instead of the one it starts in.
		if strings.HasPrefix(a, "--net=") {
			d.EgressBypass = "firejail.args give the sandbox a network namespace of firejail's own (--net=...); the session's, which holds the ruleset, is not the sandbox's"
			break
		}
	}
	return d
}

// WrapperFacts are what a wrapper kind knows of its wrapper beyond its
// command.
type WrapperFacts struct {
	PolicyField string // where the profile names its policy files
	NoNewPrivs  bool   // the wrapper sets no-new-privileges
	// HostTmp says why the sandbox shares the host's /tmp, "" when it has
	// a private one.
	HostTmp string
}

var bothPaths = []targets.Path{targets.PathNormal, targets.PathBreach}

// DescribeWrapper is the description every wrapper kind starts from: the
// harness starts the wrapper as the path's user, on the host's own file
// system, in a private mount namespace; what the wrapper keeps or drops is
// its own, read back from inside by the probe.
func DescribeWrapper(p *profile.Profile, w profile.Wrapper, f WrapperFacts) profile.Description {
	d := profile.Description{
		Runtime:       "wrapper " + strings.Join(w.Argv, " "),
		Caps:          map[targets.Path]profile.CapSet{},
		HostUser:      map[targets.Path]profile.HostUser{},
		WholeHost:     true,
		Wrapper:       &w,
		PolicyField:   f.PolicyField,
		IdentityWhere: "the harness starts the wrapper as the path's user; what the wrapper keeps or drops is its own (read back from inside by the probe)",
		Mounts:        profile.Control{Where: "the wrapper's own mount namespace, made from a private one of the harness's (session files at /gatehouse, resolv.conf)"},
		Seccomp:       profile.Control{Where: "the wrapper's own, if any", Why: "not known from the profile: the probe's facts (seccomp) show what is in force"},
		SecretOther:   profile.ErrOneUser,
	}
	if !f.NoNewPrivs {
		d.IdentityNote = "without no-new-privileges a setuid binary in the image can raise the normal path's privileges"
	}
	for _, path := range bothPaths {
		id := p.Identity(path)
		d.Caps[path] = profile.CapSet{} // the wrapper starts as this user, with none
		if id.UID == 0 {
			d.Caps[path] = profile.AllCaps() // the wrapper starts as root; what it keeps is its own business, read back by the probe
			d.HostUser[path] = profile.HostIDs(profile.HostRoot, 0, id.GID, "host root (uid 0): the wrapper is started as root; what its sandbox keeps is read back at run time")
			d.HostReach = append(d.HostReach, profile.HostAccess{Field: "paths." + string(path), Why: "uid 0: the wrapper starts as root on the host's own file system (only /gatehouse and /etc/resolv.conf are the session's); what root may read or write there, a key file and the harness's binaries included, is the wrapper's decision, not the profile's"})
		} else {
			d.HostUser[path] = profile.HostIDs(profile.HostProfile, id.UID, id.GID, fmt.Sprintf("host uid %d, gid %d: the wrapper is started as the profile's uid (the harness adds no user namespace), an account of the machine if it has one", id.UID, id.GID))
		}
	}
	if ws := *WorkspaceOf(p); ws != "" {
		d.Binds = []profile.Bind{{Type: "bind", Source: ws, Target: profile.WorkspacePath, Field: "workspace"}}
	}
	if f.HostTmp != "" {
		d.HostReach = append(d.HostReach, profile.HostAccess{Field: "target", Why: f.HostTmp})
	}
	return d
}

var (
	workspaceRef = regexp.MustCompile(`^\{\{place:[a-z][a-z0-9-]*\}\}$`)
	fileName     = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]*$`)
)

// CheckWrapperPlace checks what every wrapper kind's profile must say of
// where its wrapper runs: a workspace that is a place, and a session
// namespace of its own (or none), never the lab's.
func CheckWrapperPlace(l *profile.Loading) error {
	p := l.Profile()
	if ws := *WorkspaceOf(p); ws != "" && !workspaceRef.MatchString(ws) {
		return l.Fail("workspace", fmt.Errorf("%q: a place the run provides, as {{place:NAME}} (usually {{place:storage}})", ws))
	}
	if p.Network == profile.NetworkHost {
		return l.Fail("network", fmt.Errorf("target %s runs its wrapper in a session namespace of its own (lab) or an empty one (none), not in the lab's", p.Target))
	}
	return nil
}

// LoadWrapperFiles reads a wrapper's policy files (section.files, by
// {{file:NAME}} name) and checks the references in its argv (the list at
// exec.argv or firejail.args; nil when the kind makes the argv itself).
func LoadWrapperFiles(l *profile.Loading, section string, files map[string]string, argv []string) error {
	p := l.Profile()
	wrapFiles := map[string]string{}
	l.SetWrapperFiles(wrapFiles)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if !fileName.MatchString(n) {
			return l.Fail(section+".files."+n, fmt.Errorf("%q: a file's name is lower-case letters, digits, '.', '_' and '-'", n))
		}
		key, err := l.ReadFile(files[n])
		if err != nil {
			return l.Fail(section+".files."+n, err)
		}
		wrapFiles[n] = key
	}
	argvField := "exec.argv"
	if section == "firejail" {
		argvField = "firejail.args"
	}
	for i, a := range argv {
		for _, m := range profile.WrapperRef.FindAllStringSubmatch(a, -1) {
			name, isFile := strings.CutPrefix(m[1], "file:")
			if !isFile {
				if p.Network != profile.NetworkLab {
					return l.FailItem(section+".args", i, fmt.Errorf("{{netns}} needs network: lab"))
				}
				continue
			}
			if _, ok := files[name]; !ok {
				return l.FailItem(argvField, i, fmt.Errorf("{{file:%s}}: no such name in %s.files", name, section))
			}
		}
	}
	return nil
}
