package hostsession

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/internal/cgroupfs"
	"github.com/gatehouse-dev/gatehouse/internal/hostproc"
	"github.com/gatehouse-dev/gatehouse/internal/ledger"
)

// Cgroup is a cgroup v2 folder that holds every process of a session.
// Processes are started straight into it, and cgroup.kill ends all of them
// at once, including ones that left our process group with setsid or
// double-forked to escape. A nil *Cgroup means cgroup v2 is not available;
// callers then rely on process groups and the netns scan.
type Cgroup struct {
	dir     string
	release func() // drops the ledger entry once the cgroup is gone
}

// NewCgroup makes a session cgroup under our own cgroup v2 folder; nil,
// nil without cgroup v2 or cgroup.kill.
func NewCgroup(name string) (*Cgroup, error) {
	mnt := cgroupfs.Mount()
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
	return &Cgroup{dir: dir, release: release}, nil
}

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

// Dir is the cgroup's folder on the host.
func (c *Cgroup) Dir() string { return c.dir }

// Open returns the folder's descriptor for CLONE_INTO_CGROUP.
func (c *Cgroup) Open() (*os.File, error) {
	return os.Open(c.dir)
}

// Key is the cgroup's id as the kernel reports it to monitors
// (bpf_get_current_cgroup_id: the inode of its folder in cgroupfs) and its
// path as /proc/PID/cgroup names it (from the cgroup v2 root).
func (c *Cgroup) Key() (uint64, string, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(c.dir, &st); err != nil {
		return 0, "", err
	}
	mnt := cgroupfs.Mount()
	if mnt == "" {
		return 0, "", errors.New("no cgroup v2 mount")
	}
	rel, err := filepath.Rel(mnt, c.dir)
	if err != nil || strings.HasPrefix(rel, "..") {
		return 0, "", errors.New("cgroup folder outside the cgroup v2 mount")
	}
	return st.Ino, "/" + rel, nil
}

func (c *Cgroup) kill() error {
	return os.WriteFile(filepath.Join(c.dir, "cgroup.kill"), []byte("1"), 0)
}

// procs lists the processes directly in the cgroup.
func (c *Cgroup) procs() []int {
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

var errNoFreeze = errors.New("cgroup: no freezer")

// freeze stops every process of the cgroup and waits until it is frozen.
func (c *Cgroup) freeze(ctx context.Context) error {
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

func (c *Cgroup) thaw() error {
	return os.WriteFile(filepath.Join(c.dir, "cgroup.freeze"), []byte("0"), 0)
}

func (c *Cgroup) populated() bool {
	b, err := os.ReadFile(filepath.Join(c.dir, "cgroup.events"))
	return err == nil && strings.Contains(string(b), "populated 1")
}

// killListed kills each listed process not in keep once it is pinned and
// seen in this cgroup (or one below): a listed pid whose number went to
// another process since the list was read is never signalled (every signal
// of the teardown goes through a pin, internal/hostproc). It returns the
// pids killed.
func (c *Cgroup) killListed(pids []int, keep map[int]bool) []int {
	if c == nil {
		return nil
	}
	member := hostproc.InCgroup(strings.TrimPrefix(c.dir, cgroupfs.Mount()))
	var killed []int
	for _, pid := range pids {
		if !keep[pid] && hostproc.SignalIf(pid, unix.SIGKILL, member) == nil {
			killed = append(killed, pid)
		}
	}
	return killed
}

// Destroy kills everything in the cgroup, waits until it is empty and
// removes it with its children.
func (c *Cgroup) Destroy(ctx context.Context) error {
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
