package bwrap

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gatehouse/probe"
	"gatehouse/targets"
)

// nsKinds are the namespaces read back from outside.
var nsKinds = []string{"pid", "net", "mnt", "ipc", "uts", "user", "cgroup"}

// outsideNamespaces reads the sandbox's namespaces from the host: the
// /proc/<pid>/ns links of a process running inside this session, found
// through the session's cgroup. This is the kernel's word, not the probe's,
// so a lying probe can neither invent nor hide a shared namespace.
func (s *session) outsideNamespaces(ctx context.Context) (map[string]string, error) {
	if s.cg == nil {
		return nil, errors.New("no cgroup v2: the sandbox's processes cannot be found from outside")
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// `probe run` waits for its plan on stdin: it stays put until we close it.
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := s.Exec(ctx, targets.Command{Args: []string{probe.SandboxPath, "run"}, Stdin: pr, Stdout: io.Discard, Stderr: io.Discard})
		done <- err
	}()
	defer func() {
		_ = pw.Close()
		<-done
	}()
	mark := "/" + filepath.Base(s.cg.dir) + "/"
	for {
		if pid := findInCgroup(mark, probe.SandboxPath); pid > 0 {
			out := map[string]string{}
			for _, k := range nsKinds {
				if l, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", pid, k)); err == nil {
					out[k] = l
				}
			}
			if len(out) == 0 {
				return nil, fmt.Errorf("could not read /proc/%d/ns", pid)
			}
			return out, nil
		}
		select {
		case err := <-done:
			done <- err
			return nil, fmt.Errorf("the sandbox exited before its namespaces could be read: %v", err)
		case <-ctx.Done():
			return nil, fmt.Errorf("no process of the session found in its cgroup: %w", ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// findInCgroup returns a process whose cgroup path contains mark and whose
// executable is exe (as the process itself sees the path).
func findInCgroup(mark, exe string) int {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		if l, err := os.Readlink(d + "/exe"); err != nil || (l != exe && l != exe+" (deleted)") {
			continue
		}
		cg, err := os.ReadFile(d + "/cgroup")
		if err != nil || !strings.Contains(string(cg), mark) {
			continue
		}
		var pid int
		if _, err := fmt.Sscanf(filepath.Base(d), "%d", &pid); err == nil {
			return pid
		}
	}
	return 0
}
