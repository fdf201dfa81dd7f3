package docker

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"

	"github.com/gatehouse-dev/gatehouse/internal/targets/docker/ocishim"
)

// The lab daemon declares runtimes "gatehouse-runc" and "gatehouse-runsc":
// a script (shimscript.go) that, for a create, runs the shim (package
// ocishim: `gatehouse-oci-runtime --real RUNTIME --sessions DIR --
// ARGS...`, or `gatehouse oci-runtime ...` when that small binary is not
// installed). Docker's own network modes cannot put a container into a
// namespace someone else made, so the shim does it where the runtime reads
// it: in the bundle's OCI config.json, just before the real runtime
// creates the container. The session namespace the harness prepared (and
// its egress ruleset) then governs the container, for runc and for
// gVisor's netstack alike.
//
// What to do is looked up per container id, in a file the target writes
// before it starts the container (sessionEntry). Nothing travels in the
// environment: the shim's environment comes from containerd.

// ShimVerb is the hidden subcommand of gatehouse that runs ShimMain.
const ShimVerb = "oci-runtime"

// ShimBinary is the small binary that runs the shim alone (make build puts
// it beside gatehouse): its process starts in about a millisecond, where
// gatehouse's own package inits take 30-50 ms of every session's create.
const ShimBinary = "gatehouse-oci-runtime"

// runtimePrefix names the shimmed runtimes on a lab daemon.
const runtimePrefix = "gatehouse-"

// sessionEntry says how one container must be started.
type sessionEntry = ocishim.Entry

func entryPath(dir, id string) string { return ocishim.EntryPath(dir, id) }

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
		// The script sends this container's execs to the shim.
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

// ShimMain is the OCI runtime shim (ocishim.Main), for `gatehouse
// oci-runtime` and test binaries; it returns an exit code only when it
// could not exec the real runtime.
func ShimMain(args []string, stderr io.Writer) int { return ocishim.Main(args, stderr) }

// shimArgs is the real runtime's argv for one call (ocishim.Args).
func shimArgs(real, dir string, args []string) ([]string, error) {
	return ocishim.Args(real, dir, args)
}

// ShimCommand is the argv prefix a lab daemon runs as the shim for the
// gatehouse executable exe: the small ShimBinary beside it when there is
// one (make build), else exe's own hidden verb (a `go install`ed gatehouse).
func ShimCommand(exe string) []string {
	small := filepath.Join(filepath.Dir(exe), ShimBinary)
	if fi, err := os.Stat(small); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
		return []string{small}
	}
	return []string{exe, ShimVerb}
}
