// Package namedns makes and removes named network namespaces the way
// iproute2 does (`ip netns add` / `ip netns del`): a namespace is kept alive
// by a bind mount of its nsfs file on /run/netns/NAME. Namespaces made here
// are indistinguishable from those of `ip netns add`, so `ip netns list`,
// `nsenter --net=/run/netns/NAME` and `ip netns del` keep working on them,
// without spawning a process per namespace.
package namedns

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/gatehouse-dev/gatehouse/internal/ledger"
	_ "github.com/gatehouse-dev/gatehouse/internal/mainthread" // keep locked goroutines off the main thread
	"github.com/vishvananda/netlink"

	"golang.org/x/sys/unix"
)

// Dir is where named network namespaces are bind-mounted.
const Dir = "/run/netns"

// Path is the file that names the network namespace name.
func Path(name string) string { return filepath.Join(Dir, name) }

// Add creates a new network namespace named name, with its loopback
// interface up and nothing else. Like `ip netns add`, it fails when the
// name exists (the file is created exclusively), so a namespace someone
// else made is never adopted. Unlike it, lo is brought up here, on the
// thread that made the namespace: every caller wants it, and it saves a
// second visit.
//
// claimed, when not nil, is called once the name is ours (its file made
// exclusively) and before the namespace exists, so that a record of it
// made there covers a kill at any later moment; a record made after Add
// returned once missed one. When Add then fails it has removed the file.
func Add(name string, claimed func()) error {
	if name == "" || name == "." || name == ".." || filepath.Base(name) != name {
		return fmt.Errorf("add netns %q: not a plain name", name)
	}
	if err := os.Mkdir(Dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("add netns %s: %w", name, err)
	}
	if err := sharedDir(); err != nil {
		return fmt.Errorf("add netns %s: %w", name, err)
	}
	path := Path(name)
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("add netns %s: create %s: %w", name, path, err)
	}
	unix.Close(fd)
	if claimed != nil {
		claimed()
	}
	if err := bindNew(path); err != nil {
		_ = unix.Unmount(path, unix.MNT_DETACH)
		_ = unix.Unlink(path)
		return fmt.Errorf("add netns %s: %w", name, err)
	}
	return nil
}

// AddRecorded adds the namespace as Add does, on the ledger from the moment
// the name is ours, so a run killed at any later moment leaves one the next
// sweep removes (recorded once Add returned, a kill -9 in between left one
// no sweep knew of). release takes it off the ledger once it is deleted.
func AddRecorded(name string) (release func(), err error) {
	if err := Add(name, func() {
		release, _ = ledger.Record(ledger.Entry{Kind: ledger.Netns, What: name})
	}); err != nil {
		if release != nil {
			release()
		}
		return nil, err
	}
	return release, nil
}

// sharedDir makes /run/netns a shared mount point, as iproute2 does, so that
// a namespace unmounted here is unmounted in every mount namespace that
// received a copy, and can be freed.
func sharedDir() error {
	err := unix.Mount("", Dir, "none", unix.MS_SHARED|unix.MS_REC, "")
	if err == nil {
		return nil
	}
	if !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("make %s shared: %w", Dir, err)
	}
	// Not a mount point yet: make it one, then shared.
	if err := unix.Mount(Dir, Dir, "none", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s on itself: %w", Dir, err)
	}
	if err := unix.Mount("", Dir, "none", unix.MS_SHARED|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("make %s shared: %w", Dir, err)
	}
	return nil
}

// bindNew unshares a new network namespace on a throwaway locked thread and
// bind-mounts it on path. The thread is never unlocked, so the Go runtime
// ends it rather than reuse it in the new namespace.
func bindNew(path string) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("unshare: %w", err)
			return
		}
		if err := unix.Mount("/proc/thread-self/ns/net", path, "none", unix.MS_BIND, ""); err != nil {
			errc <- fmt.Errorf("bind %s: %w", path, err)
			return
		}
		errc <- loUp()
	}()
	return <-errc
}

// loUp sets lo up in the calling thread's network namespace.
func loUp() error {
	h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("set lo up: %w", err)
	}
	defer h.Close()
	lo, err := h.LinkByName("lo")
	if err == nil {
		err = h.LinkSetUp(lo)
	}
	if err != nil {
		return fmt.Errorf("set lo up: %w", err)
	}
	return nil
}

// Delete removes the named namespace as `ip netns del` does: detach its
// bind mount (the kernel frees the namespace when nothing else holds it)
// and remove the file. A name that does not exist is not an error.
func Delete(name string) error {
	if name == "" || name == "." || name == ".." || filepath.Base(name) != name {
		return fmt.Errorf("delete netns %q: not a plain name", name)
	}
	path := Path(name)
	if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	// EINVAL: not mounted (a half-made namespace); the file still goes.
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("delete netns %s: unmount: %w", name, err)
	}
	if err := unix.Unlink(path); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("delete netns %s: remove %s: %w", name, path, err)
	}
	return nil
}

// Open opens the namespace file of name, for netlink handles bound to it.
// The caller closes it.
func Open(name string) (*os.File, error) {
	f, err := os.Open(Path(name))
	if err != nil {
		return nil, fmt.Errorf("open netns %s: %w", name, err)
	}
	return f, nil
}
