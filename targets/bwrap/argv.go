package bwrap

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/gatehouse-dev/gatehouse/targets"
	"github.com/gatehouse-dev/gatehouse/targets/profile"
)

// buildPrefix returns the argv up to (not including) the "--" before the
// command, and the host files to open as descriptors 3, 4, ... for options
// such as --seccomp that take one.
func buildPrefix(bin string, p *profile.Profile, spec targets.Spec, st *stage, binds []bind, init string) ([]string, []string, error) {
	var argv []string
	if spec.Network.NetnsPath != "" {
		argv = append(argv, "nsenter", "--net="+spec.Network.NetnsPath)
	}
	argv = append(argv, bin)
	var fdFiles []string
	args := p.Bwrap.Args
	for i, a := range args {
		key, ok := p.ArgFile(i)
		if !ok {
			x, err := targets.Expand(a, spec)
			if err != nil {
				return nil, nil, fmt.Errorf("bwrap argument %d: %w", i, err)
			}
			argv = append(argv, x)
			continue
		}
		data, _ := p.File(key)
		host, err := st.policyFile(key, data)
		if err != nil {
			return nil, nil, err
		}
		if i > 0 && profile.FDOption(args[i-1]) {
			argv = append(argv, strconv.Itoa(3+len(fdFiles)))
			fdFiles = append(fdFiles, host)
			continue
		}
		argv = append(argv, host)
	}
	if !contains(args, "--die-with-parent") {
		argv = append(argv, "--die-with-parent")
	}
	id := p.Identity(spec.Path)
	argv = append(argv, "--uid", strconv.Itoa(id.UID), "--gid", strconv.Itoa(id.GID))
	if spec.Path == targets.PathBreach && id.CapAdd != nil {
		// An explicit list means exactly these capabilities.
		argv = append(argv, "--cap-drop", "ALL")
		for _, c := range id.CapAdd {
			argv = append(argv, "--cap-add", c)
		}
	}
	env := make(map[string]string, len(p.Env))
	for k, v := range p.Env {
		x, err := targets.Expand(v, spec)
		if err != nil {
			return nil, nil, fmt.Errorf("env %s: %w", k, err)
		}
		env[k] = x
	}
	argv = append(argv, setenv(env)...)
	argv = append(argv, setenv(spec.Env)...)
	resolver := p.Resolver
	if resolver == "" {
		resolver = spec.Network.Resolver
	}
	if resolver != "" {
		host, err := st.policyFile("resolv.conf", []byte("nameserver "+resolver+"\n"))
		if err != nil {
			return nil, nil, err
		}
		argv = append(argv, "--ro-bind", host, "/etc/resolv.conf")
	}
	argv = append(argv, "--ro-bind", st.fs, Inside, "--bind", st.fs+"/work", InsideWork, "--ro-bind", init, InitPath)
	for _, b := range binds {
		argv = append(argv, "--ro-bind", b.host, b.inside)
	}
	argv = append(argv, "--chdir", InsideWork)
	return argv, fdFiles, nil
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
