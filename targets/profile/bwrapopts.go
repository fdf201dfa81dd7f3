package profile

import (
	"fmt"
	"regexp"
	"strings"
)

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

// BwrapOption is one option of a profile's bwrap.args and its operands.
type BwrapOption struct {
	Index    int // of the option in bwrap.args
	Name     string
	Operands []string
}

var (
	octal  = regexp.MustCompile(`^0?[0-7]{1,4}$`)
	digits = regexp.MustCompile(`^[0-9]+$`)
)

// parseBwrap splits bwrap.args into options, checking each one's arity and
// the values bwrap itself would reject. It returns the index of the
// argument at fault with the error.
func parseBwrap(args []string) ([]BwrapOption, int, error) {
	var out []BwrapOption
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
		o := BwrapOption{Index: i, Name: a}
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
		if err := bwrapValue(o, args, i+1+len(names)); err != nil {
			return nil, i, err
		}
		out = append(out, o)
		i += len(names)
	}
	return out, 0, nil
}

// bwrapValue checks the values bwrap parses itself; next is the index of
// the argument after o.
func bwrapValue(o BwrapOption, args []string, next int) error {
	switch o.Name {
	case "--help", "--version":
		return fmt.Errorf("%s prints and exits: it starts no sandbox", o.Name)
	case "--cap-drop":
		if !KnownCap(o.Operands[0]) {
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
