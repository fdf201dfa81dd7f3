package docker

import (
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"

	"github.com/moby/moby/api/types/mount"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
	"github.com/gatehouse-dev/gatehouse/targets"
)

// harnessApplets are the busybox applets Session.applet runs.
var harnessApplets = []string{"sleep", "uname"}

// sessionFiles are the spec's files, plus busybox for a user image's
// keep-alive sleep, and busybox again under the applet names the harness's
// own commands use (Session.applet), so that they are not shells to a
// monitor.
func (t *Target) sessionFiles(files map[string]targets.File) map[string]targets.File {
	if t.spec.Image == "" {
		return files
	}
	files = maps.Clone(files)
	if files == nil {
		files = map[string]targets.File{}
	}
	files[toolsDir+"/bin/busybox"] = targets.File{HostPath: BusyboxPath, Mode: 0o755}
	for _, a := range harnessApplets {
		files[toolsDir+"/bin/"+a] = targets.File{HostPath: BusyboxPath, Mode: 0o755}
	}
	return files
}

// stageFiles writes the session's files to the host and plans them as
// read-only bind mounts, on the lab daemon only (it shares this machine's
// filesystem; a field daemon gets copies through the archive API). For
// the 6-8 MB probe that is a local file copy instead of a tar sent through
// the daemon into the container's layer (about 50 ms a session).
//
// Each session gets its own copies, never a file shared between sessions:
// a session whose root may remount (CAP_SYS_ADMIN) could make its bind
// writable and would then change what later sessions run. Read-only also
// means the assume-breach path's root cannot swap the probe that its own
// later commands run, as it could with a copy in the container's layer.
//
// Not in a private user namespace: runc makes a bind's mount point inside
// the root filesystem as the namespace's root, an unmapped uid on the
// host that may not write the image's folders; those sessions copy.
func (t *Target) stageFiles(spec targets.Spec, p *netPlan) error {
	files := t.sessionFiles(spec.Files)
	if t.daemon == nil || t.spec.Userns == "private" || len(files) == 0 {
		for dest, f := range files {
			if f.Bind {
				return fmt.Errorf("stage files: %s: a bound tree needs the lab daemon and no private user namespace: %w", dest, targets.ErrUnsupported)
			}
		}
		return nil
	}
	dir, err := os.MkdirTemp(t.daemon.SessionsDir(), unsafeName.ReplaceAllString(spec.Name, "-")+".files-")
	if err != nil {
		return fmt.Errorf("stage files: %w", err)
	}
	p.filesDir = dir
	for i, dest := range slices.Sorted(maps.Keys(files)) {
		if !path.IsAbs(dest) || path.Clean(dest) == "/" {
			return fmt.Errorf("stage files: %q is not an absolute file path", dest)
		}
		src := filepath.Join(dir, fmt.Sprintf("%d-%s", i, path.Base(dest)))
		if f := files[dest]; f.Bind && f.HostPath != "" {
			src = f.HostPath // as it is, read-only: see targets.File.Bind
		} else if err := writeStaged(src, f); err != nil {
			return fmt.Errorf("stage files: %s: %w", dest, err)
		}
		p.fileMounts = append(p.fileMounts, mount.Mount{Type: mount.TypeBind, Source: src, Target: path.Clean(dest), ReadOnly: true})
		if path.Clean(dest) == wire.SandboxPath {
			p.hasProbe = true
		}
	}
	return nil
}

// writeStaged writes one file owned by root with the file's mode (chmod
// after create: the umask must not drop bits the sandbox relies on).
func writeStaged(dst string, f targets.File) error {
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if f.HostPath != "" {
		var in *os.File
		if in, err = os.Open(f.HostPath); err == nil {
			// *os.File to *os.File: copy_file_range, no user-space copy.
			_, err = io.Copy(out, in)
			in.Close()
		}
	} else {
		_, err = out.Write(f.Data)
	}
	if err == nil {
		err = out.Chmod(f.Mode.Perm())
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}
