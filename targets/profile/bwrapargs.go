package profile

import (
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"strings"
)

// fdOptions take a file descriptor as their first operand. A profile names
// a file next to it instead ("--seccomp ./filter.bpf"); the bwrap target
// opens that file and passes its descriptor, so the bytes recorded in the
// evidence are the bytes bubblewrap reads.
var fdOptions = map[string]bool{
	"--seccomp": true, "--add-seccomp-fd": true, "--file": true,
	"--bind-data": true, "--ro-bind-data": true,
}

// FDOption reports whether a bwrap option takes a descriptor operand.
func FDOption(opt string) bool { return fdOptions[opt] }

// refusedOptions are set by the harness, or need descriptors a YAML file
// cannot provide.
var refusedOptions = map[string]string{
	"--uid":             "set by paths.*.uid",
	"--gid":             "set by paths.*.gid",
	"--cap-add":         "set by paths.assume-breach.cap_add",
	"--":                "the command is the harness's; give only options",
	"--args":            "takes a descriptor; write the arguments out",
	"--info-fd":         "takes a descriptor the harness does not provide",
	"--json-status-fd":  "takes a descriptor the harness does not provide",
	"--block-fd":        "takes a descriptor the harness does not provide",
	"--userns-block-fd": "takes a descriptor the harness does not provide",
	"--sync-fd":         "takes a descriptor the harness does not provide",
	"--userns":          "takes a descriptor the harness does not provide",
	"--userns2":         "takes a descriptor the harness does not provide",
	"--pidns":           "takes a descriptor the harness does not provide",
	"--bind-fd":         "takes a descriptor the harness does not provide; use --bind",
	"--ro-bind-fd":      "takes a descriptor the harness does not provide; use --ro-bind",
}

// bwrapArgs checks the bwrap arguments (each option known, with all its
// operands) and reads the files they name: an operand starting with "./",
// or an absolute path inside the profile's folder on disk.
func (v *validator) bwrapArgs() error {
	args := v.p.Bwrap.Args
	opts, at, err := parseBwrap(args)
	if err != nil {
		return v.failItem("bwrap.args", at, fmt.Errorf("bwrap.args[%d] %w", at, err))
	}
	v.p.facts.bwrap = opts
	for _, o := range opts {
		if fdOptions[o.Name] && !strings.HasPrefix(o.Operands[0], "./") {
			return v.failItem("bwrap.args", o.Index, fmt.Errorf("bwrap.args[%d] %s takes a descriptor: name a file next to the profile as ./NAME", o.Index, o.Name))
		}
	}
	for i, a := range args {
		key, err := v.argFile(a)
		if err != nil {
			return v.failItem("bwrap.args", i, fmt.Errorf("bwrap.args[%d]: %w", i, err))
		}
		if key != "" {
			v.p.refs[i] = key
		}
	}
	return nil
}

func (v *validator) argFile(a string) (string, error) {
	switch {
	case strings.HasPrefix(a, "./"):
		return v.readRef(a)
	case v.hostDir != "" && filepath.IsAbs(a) && strings.HasPrefix(a, v.hostDir+string(filepath.Separator)):
		rel, err := filepath.Rel(v.hostDir, a)
		if err != nil {
			return "", err
		}
		st, err := fs.Stat(v.fsys, path.Join(v.dir, filepath.ToSlash(rel)))
		if err != nil || !st.Mode().IsRegular() {
			return "", nil // a folder or missing: a host path, not a policy file
		}
		return v.readRef(rel)
	}
	return "", nil
}
