package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/internal/cgroupfs"
	"github.com/gatehouse-dev/gatehouse/internal/hostenv"
	"github.com/gatehouse-dev/gatehouse/internal/hostwrite"
)

// Swept is what Sweep removed.
type Swept struct {
	Owners  []string // ledger folders of dead processes
	Removed []Entry
}

// Sweep removes everything the ledgers of dead processes list, and their
// folders. Ledgers of live processes are left alone. Entries that fail to
// go stay listed, for the next sweep, and are reported in the error.
func Sweep(ctx context.Context) (Swept, error) {
	var out Swept
	dirs, err := filepath.Glob(filepath.Join(Root, "*"))
	if err != nil {
		return out, err
	}
	var errs []error
	for _, dir := range dirs {
		if dir == Dir() {
			continue
		}
		removed, dead, err := sweepOne(ctx, dir)
		out.Removed = append(out.Removed, removed...)
		if dead {
			out.Owners = append(out.Owners, filepath.Base(dir))
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", filepath.Base(dir), err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return out, fmt.Errorf("ledger: sweep: %w", err)
	}
	return out, nil
}

// sweepOne handles one owner's folder: dead reports that its owner is gone.
func sweepOne(ctx context.Context, dir string) (removed []Entry, dead bool, err error) {
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		// A folder whose owner died before it took the lock (or mid-sweep).
		return nil, true, os.RemoveAll(dir)
	}
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, false, nil // its owner lives
		}
		return nil, false, fmt.Errorf("lock: %w", err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	type item struct {
		file string
		e    Entry
	}
	var items []item
	for _, file := range files {
		b, err := os.ReadFile(file)
		var e Entry
		if err != nil || json.Unmarshal(b, &e) != nil {
			_ = os.Remove(file)
			continue
		}
		items = append(items, item{file, e})
	}
	// Processes first, then namespaces (a lab's sessions before the lab),
	// then what is left on disk.
	sort.SliceStable(items, func(i, j int) bool {
		ri, rj := rank(items[i].e), rank(items[j].e)
		if ri != rj {
			return ri < rj
		}
		return len(items[i].e.What) > len(items[j].e.What)
	})
	var errs []error
	var writes []item
	for _, it := range items {
		if it.e.Kind == ProbeWrite {
			writes = append(writes, it)
			continue
		}
		if err := remove(ctx, it.e); err != nil {
			errs = append(errs, err)
			continue
		}
		_ = os.Remove(it.file)
		removed = append(removed, it.e)
	}
	// The probe's writes last, once the sessions' processes are killed,
	// and merged by place: several sessions append to one file.
	var ws []hostwrite.Write
	noted := map[string][]string{}
	for _, it := range writes {
		if it.e.Write == nil || it.e.Write.Check() != nil {
			errs = append(errs, fmt.Errorf("refusing probe write %q: not a record of one", it.e.What))
			continue
		}
		ws = append(ws, *it.e.Write)
		k := it.e.Write.Form + " " + it.e.Write.Path()
		noted[k] = append(noted[k], it.file)
	}
	for _, w := range hostwrite.Merge(ws) {
		if _, err := w.Undo(); w.Leftover(err) {
			errs = append(errs, err)
			continue
		}
		for _, f := range noted[w.Form+" "+w.Path()] {
			_ = os.Remove(f)
		}
		removed = append(removed, Entry{Kind: ProbeWrite, What: w.Path()})
	}
	if len(errs) == 0 {
		errs = append(errs, os.RemoveAll(dir))
	}
	return removed, true, errors.Join(errs...)
}

func rank(e Entry) int {
	switch e.Kind {
	case Cgroup:
		return 0
	case Netns:
		return 1
	case SysvShm, Mqueue:
		return 2
	}
	return 3
}

// remove takes one thing away, refusing anything that does not look like
// ours: a damaged ledger must not become a way to delete the machine.
func remove(ctx context.Context, e Entry) error {
	switch e.Kind {
	case Cgroup:
		if !strings.HasPrefix(filepath.Base(e.What), "gatehouse-") || !strings.HasPrefix(e.What, "/sys/fs/cgroup/") {
			return fmt.Errorf("refusing cgroup %q: not one of ours", e.What)
		}
		return removeCgroup(ctx, e.What)
	case Netns:
		if !strings.HasPrefix(e.What, "gh-") || strings.ContainsAny(e.What, "/ ") {
			return fmt.Errorf("refusing namespace %q: not one of ours", e.What)
		}
		if _, err := os.Stat("/run/netns/" + e.What); errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if out, err := hostenv.Command(ctx, "ip", "netns", "del", e.What).CombinedOutput(); err != nil {
			return fmt.Errorf("ip netns del %s: %v: %s", e.What, err, strings.TrimSpace(string(out)))
		}
		return nil
	case SysvShm:
		key, err := strconv.ParseInt(e.What, 0, 64)
		if err != nil {
			return fmt.Errorf("bad SysV key %q", e.What)
		}
		if id, err := unix.SysvShmGet(int(key), 0, 0); err == nil {
			if _, err := unix.SysvShmCtl(id, unix.IPC_RMID, nil); err != nil {
				return fmt.Errorf("remove SysV segment %s: %w", e.What, err)
			}
		}
		return nil
	case Mqueue:
		return unlinkMqueue(e.What)
	case ProbeWrite:
		if e.Write == nil {
			return fmt.Errorf("refusing probe write %q: not a record of one", e.What)
		}
		if _, err := e.Write.Undo(); e.Write.Leftover(err) {
			return err
		}
		return nil
	case Path:
		if !ours(e.What) {
			return fmt.Errorf("refusing path %q: not one of ours", e.What)
		}
		return os.RemoveAll(e.What)
	}
	return fmt.Errorf("unknown kind %q", e.Kind)
}

// ours: under /run/gatehouse, or named gatehouse-* (staging, places).
func ours(p string) bool {
	c := filepath.Clean(p)
	if !filepath.IsAbs(c) {
		return false
	}
	return strings.HasPrefix(c, "/run/gatehouse/") || strings.HasPrefix(filepath.Base(c), "gatehouse-")
}

// removeCgroup kills everything in the cgroup, waits until it is empty and
// removes it with its children.
func removeCgroup(ctx context.Context, dir string) error { return cgroupfs.RemoveTree(ctx, dir) }

// Live is the ledger folders whose owner still runs (its lock is held),
// this process's own excepted: what `lab down --all` must not pull from
// under a run that is going on.
func Live() ([]string, error) {
	dirs, err := filepath.Glob(filepath.Join(Root, "*"))
	if err != nil {
		return nil, err
	}
	var live []string
	for _, dir := range dirs {
		if dir == Dir() {
			continue
		}
		held, err := locked(filepath.Join(dir, "lock"))
		if err != nil {
			return live, fmt.Errorf("ledger: %s: %w", filepath.Base(dir), err)
		}
		if held {
			live = append(live, filepath.Base(dir))
		}
	}
	return live, nil
}

// locked says whether another process holds the lock file's flock. A
// lock taken here to find out is dropped at once (closing the file).
func locked(file string) (bool, error) {
	f, err := os.OpenFile(file, os.O_RDWR|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return false, nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			return true, nil
		}
		return false, err
	}
}
