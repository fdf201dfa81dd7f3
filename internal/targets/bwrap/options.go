package bwrap

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
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

// loadArgs checks the bwrap arguments (each option known, with all its
// operands) and reads the files they name: an operand starting with "./",
// or an absolute path inside the profile's folder on disk.
func loadArgs(l *profile.Loading) error {
	args := SectionOf(l.Profile()).Args
	opts, at, err := parseArgs(args)
	if err != nil {
		return l.FailItem("bwrap.args", at, fmt.Errorf("bwrap.args[%d] %w", at, err))
	}
	for _, o := range opts {
		if fdOptions[o.Name] && !strings.HasPrefix(o.Operands[0], "./") {
			return l.FailItem("bwrap.args", o.Index, fmt.Errorf("bwrap.args[%d] %s takes a descriptor: name a file next to the profile as ./NAME", o.Index, o.Name))
		}
	}
	for i, a := range args {
		key, err := l.ArgFile(a)
		if err != nil {
			return l.FailItem("bwrap.args", i, fmt.Errorf("bwrap.args[%d]: %w", i, err))
		}
		if key != "" {
			l.RecordArgFile(i, key)
		}
	}
	return nil
}

// bwrapArity is every option of bubblewrap 0.8.0 (`bwrap --help`) with the
// names of its operands. An unknown option, or an option whose operands run
// out or run into the next option, makes bwrap refuse to start, or worse,
// start with the next option eaten as a value: every session of the run
// would then be INCONCLUSIVE, so the loader refuses it instead.
var bwrapArity = map[string][]string{
	"--help": nil, "--version": nil,
	"--unshare-all": nil, "--share-net": nil,
	"--unshare-user": nil, "--unshare-user-try": nil, "--unshare-ipc": nil,
	"--unshare-pid": nil, "--unshare-net": nil, "--unshare-uts": nil,
	"--unshare-cgroup": nil, "--unshare-cgroup-try": nil,
	"--disable-userns": nil, "--assert-userns-disabled": nil,
	"--clearenv": nil, "--new-session": nil, "--die-with-parent": nil, "--as-pid-1": nil,

	"--args": {"FD"}, "--userns": {"FD"}, "--userns2": {"FD"}, "--pidns": {"FD"},
	"--uid": {"UID"}, "--gid": {"GID"}, "--hostname": {"NAME"}, "--chdir": {"DIR"},
	"--unsetenv": {"VAR"}, "--lock-file": {"DEST"}, "--sync-fd": {"FD"},
	"--remount-ro": {"DEST"}, "--exec-label": {"LABEL"}, "--file-label": {"LABEL"},
	"--proc": {"DEST"}, "--dev": {"DEST"}, "--tmpfs": {"DEST"}, "--mqueue": {"DEST"},
	"--dir": {"DEST"}, "--seccomp": {"FD"}, "--add-seccomp-fd": {"FD"},
	"--block-fd": {"FD"}, "--userns-block-fd": {"FD"}, "--info-fd": {"FD"},
	"--json-status-fd": {"FD"}, "--cap-add": {"CAP"}, "--cap-drop": {"CAP"},
	"--perms": {"OCTAL"}, "--size": {"BYTES"},

	"--setenv": {"VAR", "VALUE"}, "--bind": {"SRC", "DEST"}, "--bind-try": {"SRC", "DEST"},
	"--dev-bind": {"SRC", "DEST"}, "--dev-bind-try": {"SRC", "DEST"},
	"--ro-bind": {"SRC", "DEST"}, "--ro-bind-try": {"SRC", "DEST"},
	"--bind-fd": {"FD", "DEST"}, "--ro-bind-fd": {"FD", "DEST"},
	"--file": {"FD", "DEST"}, "--bind-data": {"FD", "DEST"}, "--ro-bind-data": {"FD", "DEST"},
	"--symlink": {"SRC", "DEST"}, "--chmod": {"OCTAL", "PATH"},
}

// option is one option of a profile's bwrap.args and its operands.
type option struct {
	Index    int // of the option in bwrap.args
	Name     string
	Operands []string
}

var (
	octal  = regexp.MustCompile(`^0?[0-7]{1,4}$`)
	digits = regexp.MustCompile(`^[0-9]+$`)
)

// parseArgs splits bwrap.args into options, checking each one's arity and
// the values bwrap itself would reject. It returns the index of the
// argument at fault with the error.
func parseArgs(args []string) ([]option, int, error) {
	var out []option
	for i := 0; i < len(args); i++ {
		a := args[i]
		if why, ok := refusedOptions[a]; ok {
			return nil, i, fmt.Errorf("%s: %s", a, why)
		}
		names, ok := bwrapArity[a]
		if !ok {
			if !strings.HasPrefix(a, "-") {
				return nil, i, fmt.Errorf("%q is not an option, and bwrap would take it as the command: "+
					"an option before it is missing or has a value too many", a)
			}
			return nil, i, fmt.Errorf("%s is not a bubblewrap 0.8 option%s", a, suggest(a))
		}
		o := option{Index: i, Name: a}
		for k, n := range names {
			j := i + 1 + k
			if j >= len(args) {
				return nil, i, fmt.Errorf("%s takes %s, but the list ends before its %s", a, strings.Join(names, " "), n)
			}
			if _, isOpt := bwrapArity[args[j]]; isOpt {
				return nil, i, fmt.Errorf("%s takes %s, but its %s would be %q, an option: a value is missing", a, strings.Join(names, " "), n, args[j])
			}
			o.Operands = append(o.Operands, args[j])
		}
		if err := argValue(o, args, i+1+len(names)); err != nil {
			return nil, i, err
		}
		out = append(out, o)
		i += len(names)
	}
	return out, 0, nil
}

// argValue checks the values bwrap parses itself; next is the index of
// the argument after o.
func argValue(o option, args []string, next int) error {
	switch o.Name {
	case "--help", "--version":
		return fmt.Errorf("%s prints and exits: it starts no sandbox", o.Name)
	case "--cap-drop":
		if !profile.KnownCap(o.Operands[0]) {
			return fmt.Errorf("--cap-drop %q is not a capability name like CAP_NET_RAW, or ALL", o.Operands[0])
		}
	case "--perms", "--chmod":
		if !octal.MatchString(o.Operands[0]) {
			return fmt.Errorf("%s %q is not an octal mode like 0644", o.Name, o.Operands[0])
		}
	case "--size":
		if !digits.MatchString(o.Operands[0]) {
			return fmt.Errorf("--size %q is not a number of bytes", o.Operands[0])
		}
		if next >= len(args) || args[next] != "--tmpfs" {
			return fmt.Errorf("--size must come right before --tmpfs")
		}
	}
	return nil
}

// suggest names the known option closest to a mistyped one.
func suggest(a string) string {
	best, dist := "", 4
	for k := range bwrapArity {
		if d := editDistance(a, k); d < dist || (d == dist && k < best) {
			best, dist = k, d
		}
	}
	if best == "" {
		return ""
	}
	return "; did you mean " + best + "?"
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
