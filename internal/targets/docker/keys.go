package docker

import (
	"context"
	"fmt"
	"github.com/gatehouse-dev/gatehouse/internal/cgroupfs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/moby/moby/client"

	"github.com/gatehouse-dev/gatehouse/detect"
	"github.com/gatehouse-dev/gatehouse/targets"
)

var _ targets.SessionKeyer = (*Session)(nil)

// SessionKeys: a container descends from the daemon's shim, not from us,
// so it is known by its id and, when its init's cgroup can be read from
// the host, by that cgroup. Under runsc the host sees only the sandbox's
// own kernel at work, never the syscalls of what runs inside.
func (s *Session) SessionKeys(ctx context.Context) ([]detect.SessionKey, error) {
	if s.t.spec.Runtime == "runsc" {
		return nil, fmt.Errorf("gvisor: runsc serves the sandbox's syscalls itself, host monitors see none of them: %w", targets.ErrNotObservable)
	}
	k := detect.SessionKey{ContainerID: s.ID()}
	res, err := s.cli.ContainerInspect(ctx, s.ID(), client.ContainerInspectOptions{})
	if err != nil {
		return nil, fmt.Errorf("docker: session keys: %w", err)
	}
	if st := res.Container.State; st != nil && st.Pid > 0 {
		// Best effort: the container id alone is still a key.
		k.CgroupID, k.CgroupPath, _ = pidCgroup(st.Pid)
	}
	return []detect.SessionKey{k}, nil
}

// pidCgroup is the cgroup v2 a process is in: its id (the folder's inode,
// as bpf_get_current_cgroup_id reports it) and its path from the root.
func pidCgroup(pid int) (uint64, string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return 0, "", err
	}
	var rel string
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			rel = p
		}
	}
	if rel == "" {
		return 0, "", fmt.Errorf("pid %d: no cgroup v2 entry", pid)
	}
	mnt := cgroup2Root()
	if mnt == "" {
		return 0, "", fmt.Errorf("no cgroup v2 mount")
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(mnt, rel), &st); err != nil {
		return 0, "", err
	}
	return st.Ino, rel, nil
}

// cgroup2Root is where the cgroup v2 hierarchy's root is mounted here.
func cgroup2Root() string { return cgroupfs.Mount() }
