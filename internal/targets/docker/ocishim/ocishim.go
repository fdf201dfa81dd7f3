// Package ocishim is the OCI runtime shim of Gatehouse's lab Docker
// daemon: it puts a container into the network namespace the harness made
// for its session by editing the bundle's config.json, then execs the real
// runtime (runc, runsc). It imports the standard library only, so the
// small gatehouse-oci-runtime binary that runs it starts in about a
// millisecond: the daemon runs it on every container create, inside the
// session's cold start, where bin/gatehouse (its package inits read /proc,
// parse templates...) took 30-50 ms.
package ocishim

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

// Entry says how one container must be started; the target writes it (as
// <sessions>/<container id>.json) between create and start.
type Entry struct {
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

// Userns is the id range a private user namespace maps container ids
// 0..UsernsSize-1 onto: far above any real account, so a process that
// escapes the container is nobody on the host.
const (
	UsernsHostID = 1_000_000
	UsernsSize   = 65536
)

var containerID = regexp.MustCompile(`^[0-9a-f]{64}$`)

// EntryPath is where the entry of container id lives in folder dir.
func EntryPath(dir, id string) string { return filepath.Join(dir, id+".json") }

// Verbs are the runc/runsc subcommands containerd's shim uses.
var Verbs = map[string]bool{"create": true, "start": true, "run": true, "exec": true, "kill": true,
	"delete": true, "state": true, "ps": true, "pause": true, "resume": true, "update": true, "events": true,
	"checkpoint": true, "restore": true, "features": true, "list": true, "spec": true}

// Main is the shim; args are `--real RUNTIME --sessions DIR -- RUNTIME-ARGS`.
// It returns an exit code only when it could not exec the real runtime.
// stderr reaches containerd's log.
func Main(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("oci-runtime", flag.ContinueOnError)
	fs.SetOutput(stderr)
	real := fs.String("real", "", "the real OCI runtime binary")
	dir := fs.String("sessions", "", "folder of per-container entries")
	if err := fs.Parse(args); err != nil || *real == "" || *dir == "" {
		fmt.Fprintln(stderr, "gatehouse oci-runtime: usage: --real RUNTIME --sessions DIR -- RUNTIME-ARGS")
		return 2
	}
	argv, err := Args(*real, *dir, fs.Args())
	if err != nil {
		fmt.Fprintln(stderr, "gatehouse oci-runtime:", err)
		return 1
	}
	err = syscall.Exec(*real, argv, os.Environ())
	fmt.Fprintln(stderr, "gatehouse oci-runtime: exec", *real+":", err)
	return 1
}

// Args finds the container the call is about, applies its entry (the
// netns on create, the flags always) and returns the real runtime's argv.
// A create for a container with no entry is refused: every container of a
// shimmed runtime must have been started by Gatehouse.
func Args(real, dir string, args []string) ([]string, error) {
	verb := -1
	for i, a := range args {
		if Verbs[a] {
			verb = i
			break
		}
	}
	argv := []string{real}
	if verb < 0 {
		return append(argv, args...), nil
	}
	var entry *Entry
	var id string
	for _, a := range args[verb+1:] {
		if !containerID.MatchString(a) {
			continue
		}
		b, err := os.ReadFile(EntryPath(dir, a))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		entry, id = &Entry{}, a
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
		if err := EditConfig(filepath.Join(bundle, "config.json"), *entry); err != nil {
			return nil, fmt.Errorf("container %s: %w", id, err)
		}
	}
	if args[verb] == "exec" && entry != nil && entry.SetRootCaps {
		proc := flagValue(args[verb+1:], "--process", "-p")
		if proc == "" {
			return nil, errors.New("exec without --process: the assume-breach path's capabilities cannot be set")
		}
		if err := EditRootCaps(proc, entry.RootCaps); err != nil {
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
