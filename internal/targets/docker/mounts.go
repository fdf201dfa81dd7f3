package docker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/internal/cgroupfs"
)

// unmountUnder detaches every mount at or below dir (overlay layers, shm,
// netns bind mounts, runsc's null-netns), deepest first, so dir can be
// deleted even when dockerd died without cleaning up.
func unmountUnder(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	points, err := mountPoints()
	if err != nil {
		return err
	}
	var under []string
	for _, p := range points {
		if p == abs || strings.HasPrefix(p, abs+"/") {
			under = append(under, p)
		}
	}
	// Longer paths are deeper; a mount stacked twice appears twice.
	sort.Slice(under, func(i, j int) bool { return len(under[i]) > len(under[j]) })
	var errs []error
	for _, p := range under {
		if err := unix.Unmount(p, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

// mountPoints lists mount points from /proc/self/mountinfo (field 5),
// with the kernel's octal escapes for spaces and the like undone.
func mountPoints() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		out = append(out, unescapeMount(fields[4]))
	}
	return out, sc.Err()
}

func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v byte
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &v); err == nil {
				b.WriteByte(v)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// removeCgroups deletes the daemon's cgroup parent in every hierarchy
// (cgroupfs driver, hybrid layout): dockerd leaves the empty folders.
func removeCgroups(ctx context.Context, parent string) error {
	dirs, err := filepath.Glob("/sys/fs/cgroup/*/" + parent)
	if err != nil {
		return err
	}
	if fi, err := os.Stat("/sys/fs/cgroup/" + parent); err == nil && fi.IsDir() {
		dirs = append(dirs, "/sys/fs/cgroup/"+parent)
	}
	// The v2 folder first: its kill empties the v1 folders of the same
	// processes, which have no kill of their own.
	sort.SliceStable(dirs, func(i, j int) bool { return hasKill(dirs[i]) && !hasKill(dirs[j]) })
	var errs []error
	for _, d := range dirs {
		errs = append(errs, cgroupfs.RemoveTree(ctx, d))
	}
	return errors.Join(errs...)
}

func hasKill(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "cgroup.kill"))
	return err == nil
}
