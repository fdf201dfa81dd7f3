package docker

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
)

// The lab daemon declares runtimes "gatehouse-runc" and "gatehouse-runsc":
// a script that runs `gatehouse oci-runtime --real RUNTIME --sessions DIR --
// ARGS...`, which is ShimMain. Docker's own network modes cannot put a
// container into a namespace someone else made, so the shim does it where
// the runtime reads it: in the bundle's OCI config.json, just before the
// real runtime creates the container. The session namespace the harness
// prepared (and its egress ruleset) then governs the container, for runc
// and for gVisor's netstack alike.
//
// What to do is looked up per container id, in a file the target writes
// before it starts the container (sessionEntry). Nothing travels in the
// environment: the shim's environment comes from containerd.

// ShimVerb is the hidden subcommand that runs ShimMain.
const ShimVerb = "oci-runtime"

// runtimePrefix names the shimmed runtimes on a lab daemon.
const runtimePrefix = "gatehouse-"

// sessionEntry says how one container must be started.
type sessionEntry struct {
	// Netns is the network namespace file the container joins; "" leaves
	// Docker's choice (network none: a new, empty namespace).
	Netns string `json:"netns"`
	// Flags are global runtime flags (e.g. runsc's --network=host), put
	// before the subcommand on every call for this container.
	Flags []string `json:"flags,omitempty"`
	// Userns adds a private user namespace (container ids from
	// UsernsHostID on the host), as the daemon's --userns-remap would.
	Userns bool `json:"userns,omitempty"`
	// SetRootCaps makes every exec that runs as uid 0 hold exactly
	// RootCaps ("CAP_NET_ADMIN", ...): the assume-breach path's root.
	SetRootCaps bool     `json:"set_root_caps,omitempty"`
	RootCaps    []string `json:"root_caps,omitempty"`
}

var containerID = regexp.MustCompile(`^[0-9a-f]{64}$`)

func entryPath(dir, id string) string { return filepath.Join(dir, id+".json") }

// writeEntry writes the entry, and first its runtime flags for the shim
// script when it has some (the script must never skip them).
func writeEntry(dir, id string, e sessionEntry) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	if len(e.Flags) > 0 {
		if err := os.WriteFile(flagsPath(dir, id), []byte(flagsLine(e.Flags)), 0o600); err != nil {
			return err
		}
	}
	if e.SetRootCaps {
		// The script sends this container's execs to ShimMain.
		if err := os.WriteFile(capsPath(dir, id), nil, 0o600); err != nil {
			return err
		}
	}
	tmp := entryPath(dir, id) + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, entryPath(dir, id))
}

// ShimMain is the OCI runtime shim; it returns an exit code only when it
// could not exec the real runtime. stderr reaches containerd's log.
func ShimMain(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet(ShimVerb, flag.ContinueOnError)
	fs.SetOutput(stderr)
	real := fs.String("real", "", "the real OCI runtime binary")
	dir := fs.String("sessions", "", "folder of per-container entries")
	if err := fs.Parse(args); err != nil || *real == "" || *dir == "" {
		fmt.Fprintln(stderr, "gatehouse oci-runtime: usage: --real RUNTIME --sessions DIR -- RUNTIME-ARGS")
		return 2
	}
	rargs := fs.Args()
	argv, err := shimArgs(*real, *dir, rargs)
	if err != nil {
		fmt.Fprintln(stderr, "gatehouse oci-runtime:", err)
		return 1
	}
	err = syscall.Exec(*real, argv, os.Environ())
	fmt.Fprintln(stderr, "gatehouse oci-runtime: exec", *real+":", err)
	return 1
}

// runtimeVerbs are the runc/runsc subcommands containerd's shim uses.
var runtimeVerbs = map[string]bool{"create": true, "start": true, "run": true, "exec": true, "kill": true,
	"delete": true, "state": true, "ps": true, "pause": true, "resume": true, "update": true, "events": true,
	"checkpoint": true, "restore": true, "features": true, "list": true, "spec": true}

// shimArgs finds the container the call is about, applies its entry (the
// netns on create, the flags always) and returns the real runtime's argv.
// A create for a container with no entry is refused: every container of a
// shimmed runtime must have been started by Gatehouse.
func shimArgs(real, dir string, args []string) ([]string, error) {
	verb := -1
	for i, a := range args {
		if runtimeVerbs[a] {
			verb = i
			break
		}
	}
	argv := []string{real}
	if verb < 0 {
		return append(argv, args...), nil
	}
	var entry *sessionEntry
	var id string
	for _, a := range args[verb+1:] {
		if !containerID.MatchString(a) {
			continue
		}
		b, err := os.ReadFile(entryPath(dir, a))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		entry, id = &sessionEntry{}, a
		if err := json.Unmarshal(b, entry); err != nil {
			return nil, fmt.Errorf("entry for %s: %w", a, err)
		}
		break
	}
	if args[verb] == "create" || args[verb] == "run" {
		if entry == nil {
			return nil, errors.New("no Gatehouse session entry for this container: refusing to create it")
		}
		bundle := flagValue(args[verb+1:], "--bundle", "-b")
		if bundle == "" {
			bundle = "."
		}
		if err := editConfig(filepath.Join(bundle, "config.json"), *entry); err != nil {
			return nil, fmt.Errorf("container %s: %w", id, err)
		}
	}
	if args[verb] == "exec" && entry != nil && entry.SetRootCaps {
		proc := flagValue(args[verb+1:], "--process", "-p")
		if proc == "" {
			return nil, errors.New("exec without --process: the assume-breach path's capabilities cannot be set")
		}
		if err := editRootCaps(proc, entry.RootCaps); err != nil {
			return nil, fmt.Errorf("container %s: exec: %w", id, err)
		}
	}
	if entry != nil {
		argv = append(argv, args[:verb]...)
		argv = append(argv, entry.Flags...)
		return append(argv, args[verb:]...), nil
	}
	return append(argv, args...), nil
}

// flagValue returns the value of a flag given as "--f v", "--f=v" or "-f v".
func flagValue(args []string, names ...string) string {
	for i, a := range args {
		for _, n := range names {
			if v, ok := strings.CutPrefix(a, n+"="); ok {
				return v
			}
			if a == n && i+1 < len(args) {
				return args[i+1]
			}
		}
	}
	return ""
}
