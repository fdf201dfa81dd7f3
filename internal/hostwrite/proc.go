package hostwrite

import (
	"fmt"
	"io"
	"os"
	"strconv"
)

// Bounds on reading a session's mount namespaces from the host: its
// processes choose how many namespaces and mounts there are.
const (
	maxPids       = 256
	maxNamespaces = 8
	maxMountinfo  = 4 << 20
)

// HostMounts is the harness's own mount table: the host, as far as the
// harness can act on it.
func HostMounts() ([]Mount, error) {
	b, err := readProc("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("hostwrite: own mount table: %w", err)
	}
	return ParseMountinfo(b), nil
}

// SessionMounts reads, from the host, the mount table of each mount
// namespace the given processes (a session's, as its target lists them)
// are in, the harness's own left out. A process that is gone by the time
// it is read is skipped; none readable at all is an error.
func SessionMounts(pids []int) ([][]Mount, error) {
	own, _ := os.Readlink("/proc/self/ns/mnt")
	seen := map[string]bool{own: true}
	var out [][]Mount
	var last error
	read := 0
	for i, pid := range pids {
		if i == maxPids || len(out) == maxNamespaces {
			break
		}
		dir := "/proc/" + strconv.Itoa(pid)
		ns, err := os.Readlink(dir + "/ns/mnt")
		if err != nil {
			last = err
			continue
		}
		if seen[ns] {
			read++
			continue
		}
		b, err := readProc(dir + "/mountinfo")
		if err != nil {
			last = err
			continue
		}
		seen[ns] = true
		read++
		out = append(out, ParseMountinfo(b))
	}
	if read == 0 {
		if last == nil {
			last = fmt.Errorf("no process")
		}
		return nil, fmt.Errorf("hostwrite: session mount tables: %w", last)
	}
	return out, nil
}

// readProc reads a /proc file, at most maxMountinfo bytes.
func readProc(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxMountinfo))
}
