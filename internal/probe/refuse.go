package probe

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// errRefused maps to OutcomeDenied through classify (EPERM) and keeps the
// reason in its message.
type errRefused string

func (e errRefused) Error() string        { return wire.RefusePrefix + ": " + string(e) }
func (e errRefused) Is(target error) bool { return target == syscall.EPERM }

// kernelFS names file systems whose files are kernel interfaces. A probe
// never writes them, wherever they are mounted (cgroup release_agent lives
// in one, /proc/sys/kernel/core_pattern in another).
var kernelFS = map[uint32]string{
	unix.PROC_SUPER_MAGIC: "proc", unix.SYSFS_MAGIC: "sysfs",
	unix.CGROUP_SUPER_MAGIC: "cgroup", unix.CGROUP2_SUPER_MAGIC: "cgroup2",
	unix.DEBUGFS_MAGIC: "debugfs", unix.TRACEFS_MAGIC: "tracefs",
	unix.SECURITYFS_MAGIC: "securityfs", unix.BPF_FS_MAGIC: "bpf",
	unix.EFIVARFS_MAGIC: "efivarfs", unix.PSTOREFS_MAGIC: "pstore",
	unix.SELINUX_MAGIC: "selinuxfs", unix.SMACK_MAGIC: "smackfs",
	unix.BINFMTFS_MAGIC: "binfmt_misc", unix.DEVPTS_SUPER_MAGIC: "devpts",
}

// openForWrite opens path for writing only if it is, after resolving every
// symlink, a regular file (or a new one) outside /proc and /sys and outside
// any kernel file system. It does not truncate: the caller does, after.
func openForWrite(path string) (*os.File, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if kernelPath(abs) {
		return nil, errRefused("kernel interface " + abs)
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(abs))
	if err != nil {
		return nil, err
	}
	real := filepath.Join(dir, filepath.Base(abs))
	if fi, err := os.Lstat(real); err == nil {
		if fi.Mode()&os.ModeSymlink != 0 {
			if real, err = filepath.EvalSymlinks(real); err != nil {
				return nil, errRefused("unresolvable symlink " + abs)
			}
			dir = filepath.Dir(real)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if kernelPath(real) {
		return nil, errRefused("kernel interface " + real)
	}
	if err := notKernelFS(dir); err != nil {
		return nil, err
	}
	if fi, err := os.Lstat(real); err == nil && !fi.Mode().IsRegular() {
		return nil, errRefused("not a regular file " + real)
	}
	f, err := os.OpenFile(real, os.O_WRONLY|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, err
	}
	if err := checkOpened(f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// checkOpened re-checks the opened file itself, closing the gap between
// the path checks and the open.
func checkOpened(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return errRefused("not a regular file " + f.Name())
	}
	var st unix.Statfs_t
	if err := unix.Fstatfs(int(f.Fd()), &st); err != nil {
		return fmt.Errorf("statfs %s: %w", f.Name(), err)
	}
	if name, ok := kernelFS[uint32(st.Type)]; ok {
		return errRefused(name + " file " + f.Name())
	}
	return nil
}

func notKernelFS(dir string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return fmt.Errorf("statfs %s: %w", dir, err)
	}
	if name, ok := kernelFS[uint32(st.Type)]; ok {
		return errRefused(name + " folder " + dir)
	}
	return nil
}

func kernelPath(p string) bool {
	for _, root := range []string{"/proc", "/sys"} {
		if p == root || strings.HasPrefix(p, root+"/") {
			return true
		}
	}
	return false
}
