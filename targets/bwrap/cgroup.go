package bwrap

import (
	"context"
	"errors"
	"fmt"
	"github.com/gatehouse-dev/gatehouse/internal/cgroupfs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/ledger"
)

// cgroup is a cgroup v2 folder that holds every process of a session (one
// child per Exec). Processes are started straight into it, and cgroup.kill
// ends all of them at once, including ones that left our process group with
// setsid or double-forked to escape. A nil *cgroup means cgroup v2 is not
// available; callers then rely on process groups and the netns scan.
type cgroup struct {
	dir     string
	release func() // drops the ledger entry once the cgroup is gone
}

// newCgroup makes a session cgroup under our own cgroup v2 folder.
func newCgroup(name string) (*cgroup, error) {
	mnt := cgroup2Mount()
	if mnt == "" {
		return nil, nil
	}
	self, err := ownCgroup()
	if err != nil {
		return nil, nil
	}
	dir := filepath.Join(mnt, self, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cgroup: %w", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "cgroup.kill")); err != nil {
		_ = os.Remove(dir) // kernel too old for cgroup.kill: fall back
		return nil, nil
	}
	// A run killed before its teardown leaves this folder: the ledger lets
	// the next run or `lab down` remove it.
	release, _ := ledger.Record(ledger.Entry{Kind: ledger.Cgroup, What: dir})
	return &cgroup{dir: dir, release: release}, nil
}

func cgroup2Mount() string { return cgroupfs.Mount() }

func ownCgroup() (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return p, nil
		}
	}
	return "", errors.New("no cgroup v2 entry")
}

func (c *cgroup) child(name string) (*cgroup, error) {
	if c == nil {
		return nil, nil
	}
	dir := filepath.Join(c.dir, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cgroup: %w", err)
	}
	return &cgroup{dir: dir}, nil
}

// open returns the folder's descriptor for CLONE_INTO_CGROUP.
func (c *cgroup) open() (*os.File, error) {
	return os.Open(c.dir)
}

func (c *cgroup) kill() error {
	if c == nil {
		return nil
	}
	return os.WriteFile(filepath.Join(c.dir, "cgroup.kill"), []byte("1"), 0)
}

// procs lists the processes directly in the cgroup.
func (c *cgroup) procs() []int {
	if c == nil {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(c.dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// freeze stops every process of the cgroup and waits until it is frozen.
func (c *cgroup) freeze(ctx context.Context) error {
	if err := os.WriteFile(filepath.Join(c.dir, "cgroup.freeze"), []byte("1"), 0); err != nil {
		return errors.Join(errNoFreeze, err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		b, err := os.ReadFile(filepath.Join(c.dir, "cgroup.events"))
		if err == nil && strings.Contains(string(b), "frozen 1") {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			_ = c.thaw()
			return errors.New("cgroup: did not freeze within 2 s")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (c *cgroup) thaw() error {
	return os.WriteFile(filepath.Join(c.dir, "cgroup.freeze"), []byte("0"), 0)
}

func (c *cgroup) populated() bool {
	b, err := os.ReadFile(filepath.Join(c.dir, "cgroup.events"))
	return err == nil && strings.Contains(string(b), "populated 1")
}

// removeIfEmpty drops an Exec's cgroup once nothing runs in it; anything
// left behind (a background process) stays until Stop.
func (c *cgroup) removeIfEmpty() {
	if c != nil && !c.populated() {
		_ = os.Remove(c.dir)
	}
}

// destroy kills everything in the cgroup, waits until it is empty and
// removes it with its children.
func (c *cgroup) destroy(ctx context.Context) error {
	if c == nil {
		return nil
	}
	if _, err := os.Stat(c.dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err := c.kill(); err != nil {
		return fmt.Errorf("cgroup: kill: %w", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	// Killed processes are usually gone within a few milliseconds: look
	// again soon at first, then every 20 ms.
	for wait := time.Millisecond; c.populated(); wait = min(2*wait, 20*time.Millisecond) {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("cgroup: %s still has processes after kill", c.dir)
		}
		time.Sleep(wait)
	}
	kids, _ := filepath.Glob(filepath.Join(c.dir, "*", "cgroup.procs"))
	for _, k := range kids {
		_ = os.Remove(filepath.Dir(k))
	}
	if err := os.Remove(c.dir); err != nil {
		return fmt.Errorf("cgroup: remove: %w", err)
	}
	if c.release != nil {
		c.release()
	}
	return nil
}
