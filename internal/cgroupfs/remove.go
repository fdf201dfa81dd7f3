package cgroupfs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// RemoveTree kills every process in the cgroup at dir and below it (v2's
// cgroup.kill; a v1 folder has none and is only emptied of folders), waits
// up to 5 s for it to empty, then removes its folders deepest first. A
// folder already gone is no error. Processes a dead daemon left (a
// container's init under a containerd shim that outlived dockerd) are why
// the kill comes first: rmdir of a populated cgroup fails "busy".
func RemoveTree(ctx context.Context, dir string) error {
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	_ = os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		b, err := os.ReadFile(filepath.Join(dir, "cgroup.events"))
		if err != nil || strings.Contains(string(b), "populated 0") {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("cgroup %s still has processes after kill", dir)
		}
	}
	var kids []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && p != dir {
			kids = append(kids, p)
		}
		return nil
	})
	for i := len(kids) - 1; i >= 0; i-- {
		_ = os.Remove(kids[i])
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove cgroup %s: %w", dir, err)
	}
	return nil
}
