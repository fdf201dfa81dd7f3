package hostproc

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Namespaces reads the pinned process's /proc/PID/ns/KIND links (e.g.
// "pid:[4026531836]"). An unreadable kind is left out; none at all is an
// error.
func (p *Proc) Namespaces(kinds []string) (map[string]string, error) {
	out := map[string]string{}
	err := p.Read(func(dir string) error {
		for _, k := range kinds {
			if l, err := os.Readlink(dir + "/ns/" + k); err == nil {
				out[k] = l
			}
		}
		if len(out) == 0 {
			return fmt.Errorf("hostproc: could not read %s/ns", dir)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Creds is who a process is on the host, as the kernel says: the Uid and
// Gid lines of /proc/PID/status (real, effective, saved, filesystem) and
// its user namespace's maps (inside, outside, count per line; outside as
// the host's initial namespace sees it).
type Creds struct {
	UID, GID       [4]int
	UIDMap, GIDMap string
}

// HostUID is the real uid on the host.
func (c Creds) HostUID() int { return c.UID[0] }

// HostGID is the real gid on the host.
func (c Creds) HostGID() int { return c.GID[0] }

// Creds reads the pinned process's credentials and id maps.
func (p *Proc) Creds() (Creds, error) {
	var c Creds
	err := p.Read(func(dir string) error {
		b, err := readSmall(dir+"/status", 64<<10)
		if err != nil {
			return err
		}
		var okU, okG bool
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Uid:"); ok {
				c.UID, okU = four(v)
			}
			if v, ok := strings.CutPrefix(line, "Gid:"); ok {
				c.GID, okG = four(v)
			}
		}
		if !okU || !okG {
			return fmt.Errorf("hostproc: %s/status: no Uid or Gid line", dir)
		}
		for name, dst := range map[string]*string{"uid_map": &c.UIDMap, "gid_map": &c.GIDMap} {
			m, err := readSmall(dir+"/"+name, 64<<10)
			if err != nil {
				return err
			}
			*dst = normalizeMap(string(m))
		}
		return nil
	})
	return c, err
}

func four(v string) ([4]int, bool) {
	var out [4]int
	f := strings.Fields(v)
	if len(f) != 4 {
		return out, false
	}
	for i, s := range f {
		n, err := strconv.Atoi(s)
		if err != nil {
			return out, false
		}
		out[i] = n
	}
	return out, true
}

// normalizeMap turns the kernel's column-aligned map into "IN OUT COUNT"
// lines joined by "; ".
func normalizeMap(s string) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if f := strings.Fields(l); len(f) == 3 {
			lines = append(lines, strings.Join(f, " "))
		}
	}
	return strings.Join(lines, "; ")
}

// Environ reads the pinned process's environment (at most max bytes).
func (p *Proc) Environ(max int64) ([]string, error) {
	var env []string
	err := p.Read(func(dir string) error {
		b, err := readSmall(dir+"/environ", max)
		if err != nil {
			return err
		}
		for _, kv := range strings.Split(string(b), "\x00") {
			if kv != "" {
				env = append(env, kv)
			}
		}
		return nil
	})
	return env, err
}

// Cmdline reads the pinned process's argv (at most 64 KiB).
func (p *Proc) Cmdline() ([]string, error) {
	var argv []string
	err := p.Read(func(dir string) error {
		b, err := readSmall(dir+"/cmdline", 64<<10)
		if err != nil {
			return err
		}
		argv = strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		return nil
	})
	return argv, err
}
