package bwrap

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
	"github.com/gatehouse-dev/gatehouse/targets"
)

// launch is how a session's bubblewrap is started: its argv up to (not
// including) the "--" before the init, the host files opened as
// descriptors 3, 4, ... for options such as --seccomp, the doors its
// private mount namespace holds, and the host user it runs as.
type launch struct {
	argv    []string
	fdFiles []string
	doors   []door
	places  []placeBind // the profile's {{place:...}} binds, for the handover
	user    hostUser
}

// placeBind is one harness place the profile binds.
type placeBind struct {
	host string
	rw   bool
	spec targets.Spec // its recorded identity, checked before the handover
}

// buildLaunch expands the profile's arguments. Every source the harness
// provides (the staging folder, the init, files, places) is bound from a
// door, so bubblewrap needs no path into the harness's root-only folders,
// whichever user it runs as.
func buildLaunch(bin string, p *profile.Profile, spec targets.Spec, st *stage, binds []bind, init string, user hostUser) (launch, error) {
	l := launch{argv: []string{bin}, user: user}
	addDoor := func(d door) string {
		l.doors = append(l.doors, d)
		return d.path()
	}
	args := SectionOf(p).Args
	for i, a := range args {
		key, ok := p.ArgFile(i)
		if !ok {
			x, err := targets.Expand(a, spec)
			if err != nil {
				return launch{}, fmt.Errorf("bwrap argument %d: %w", i, err)
			}
			if b, isSrc := p.BindSourceAt(i); isSrc && strings.HasPrefix(a, "{{place:") {
				label := strings.Replace(strings.TrimPrefix(a, "{{place:"), "}}", "", 1)
				l.places = append(l.places, placeBind{host: x, rw: !b.ReadOnly, spec: spec})
				host := x
				x = addDoor(door{name: doorName("place", len(l.doors), label), host: x, plain: true, optional: b.Optional,
					open: func() (*os.File, error) {
						f, ok, err := targets.OpenPlace(spec, host)
						if err == nil && !ok {
							err = fmt.Errorf("%s is no place of the run's", host)
						}
						return f, err
					}})
			}
			l.argv = append(l.argv, x)
			continue
		}
		data, _ := p.File(key)
		host, err := st.policyFile(key, data)
		if err != nil {
			return launch{}, err
		}
		if i > 0 && FDOption(args[i-1]) {
			l.argv = append(l.argv, strconv.Itoa(3+len(l.fdFiles)))
			l.fdFiles = append(l.fdFiles, host)
			continue
		}
		l.argv = append(l.argv, addDoor(door{name: doorName("policy", len(l.doors), key), host: host}))
	}
	if !contains(args, "--die-with-parent") {
		l.argv = append(l.argv, "--die-with-parent")
	}
	id := p.Identity(spec.Path)
	l.argv = append(l.argv, "--uid", strconv.Itoa(id.UID), "--gid", strconv.Itoa(id.GID))
	if spec.Path == targets.PathBreach && id.CapAdd != nil {
		// An explicit list means exactly these capabilities.
		l.argv = append(l.argv, "--cap-drop", "ALL")
		for _, c := range id.CapAdd {
			l.argv = append(l.argv, "--cap-add", c)
		}
	}
	env := make(map[string]string, len(p.Env))
	for k, v := range p.Env {
		x, err := targets.Expand(v, spec)
		if err != nil {
			return launch{}, fmt.Errorf("env %s: %w", k, err)
		}
		env[k] = x
	}
	l.argv = append(l.argv, setenv(env)...)
	l.argv = append(l.argv, setenv(spec.Env)...)
	resolver := p.Resolver
	if resolver == "" {
		resolver = spec.Network.Resolver
	}
	if resolver != "" {
		host, err := st.policyFile("resolv.conf", []byte("nameserver "+resolver+"\n"))
		if err != nil {
			return launch{}, err
		}
		l.argv = append(l.argv, "--ro-bind", addDoor(door{name: "resolv.conf", host: host}), "/etc/resolv.conf")
	}
	l.argv = append(l.argv,
		"--ro-bind", addDoor(door{name: "session", host: st.fs}), Inside,
		"--bind", addDoor(door{name: "session-work", host: st.fs + "/work"}), InsideWork,
		"--ro-bind", addDoor(door{name: "init", host: init}), InitPath)
	for i, b := range binds {
		l.argv = append(l.argv, "--ro-bind", addDoor(door{name: doorName("file", i, b.inside), host: b.host}), b.inside)
	}
	l.argv = append(l.argv, "--chdir", InsideWork)
	return l, nil
}

// setenv turns a map into --setenv pairs, sorted so argv is reproducible.
func setenv(env map[string]string) []string {
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []string
	for _, k := range keys {
		out = append(out, "--setenv", k, env[k])
	}
	return out
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// instanceArgv is the full argv that starts the session's sandbox: the
// prefix, then the init serving on descriptor fd.
func instanceArgv(prefix []string, fd int) []string {
	argv := append([]string(nil), prefix...)
	return append(argv, "--", InitPath, "init", strconv.Itoa(fd))
}
