package probe

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// maxWritable bounds how many mount points "dir:@writable" uses.
const maxWritable = 64

// dirsOf expands the folder part of a "dir:" channel into the folders a
// send writes to and a receive polls:
//   - "@writable" is every writable mount point of the sandbox's own mount
//     table (see writableMounts): a careless bind of a shared host folder
//     shows up there whatever path it was given;
//   - "$HOME" and "$UID" are the agent's home and uid (/run/user/$UID);
//   - a folder ending in "/.." is the parent of where the folder before it
//     really is (symlinks followed): the parent of the workspace, which a
//     platform may share between sessions;
//   - anything else is itself.
func dirsOf(where string) ([]string, error) {
	if where == "@writable" {
		return writableMounts()
	}
	where = os.Expand(where, func(k string) string {
		switch k {
		case "HOME":
			return homeDir()
		case "UID":
			return strconv.Itoa(os.Getuid())
		}
		return "$" + k
	})
	if base, ok := strings.CutSuffix(where, "/.."); ok {
		if real, err := filepath.EvalSymlinks(base); err == nil {
			base = real
		}
		return []string{filepath.Dir(filepath.Clean(base))}, nil
	}
	return []string{filepath.Clean(where)}, nil
}

// writableMounts lists the sandbox's writable mount points that are
// folders, from /proc/self/mountinfo: kernel-state file systems, /proc,
// /sys, /dev (but for /dev/shm) and the probe's own folder left out.
func writableMounts() ([]string, error) {
	ms, err := readMounts()
	if err != nil {
		return nil, err
	}
	var out []string
	seen := map[string]bool{}
	for _, m := range ms {
		p := filepath.Clean(m.Point)
		if m.RO || pseudoFS[m.FSType] || seen[p] || !writableCandidate(p) {
			continue
		}
		if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
			continue // a bound file (/etc/resolv.conf), or gone
		}
		seen[p] = true
		out = append(out, p)
		if len(out) == maxWritable {
			break
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no writable mount point in the mount table")
	}
	return out, nil
}

func writableCandidate(p string) bool {
	under := func(root string) bool { return p == root || strings.HasPrefix(p, root+"/") }
	switch {
	case under("/dev/shm"):
		return true
	case under("/proc"), under("/sys"), under("/dev"), under(probeHome):
		return false
	case under("/run/netns"), under("/var/run/netns"):
		// The host's namespace handles, where a sandbox shows the host's
		// /run: a file there breaks `ip netns` for every run on the host.
		return false
	}
	return true
}

// sendFiles writes the value once into a file in each shared folder the
// target names (see dirsOf) and removes them when the attempt ends. A try
// succeeds when at least one folder holds the file.
func sendFiles(where, v string, note func(string)) (func(context.Context) error, func()) {
	var written []string
	send := func(context.Context) error {
		if len(written) > 0 {
			return nil
		}
		dirs, err := dirsOf(where)
		if err != nil {
			return err
		}
		var last error
		for _, d := range dirs {
			name, _ := wire.XSFile(v, where) // one file per channel, so two channels on one folder never remove each other's
			p := filepath.Join(d, name)
			if err := writeXS(p, v); err != nil {
				last = err
				continue
			}
			written = append(written, p)
			note(p)
		}
		if len(written) == 0 {
			return last
		}
		return nil
	}
	return send, func() {
		for _, p := range written {
			_ = os.Remove(p)
		}
	}
}

func writeXS(p, v string) error {
	f, err := openForWrite(p)
	if err != nil {
		return err
	}
	_, err = f.WriteString("GATEHOUSE " + v + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// pollFiles reads every xs file in the target's folders each tick. It
// listens from the first tick on which one of them exists.
func pollFiles(ctx context.Context, where string, f *found) error {
	for {
		dirs, err := dirsOf(where)
		var there error = errAbsent
		for _, d := range dirs {
			if _, serr := os.Stat(d); serr != nil {
				there = serr
				continue
			}
			there = nil
			ms, _ := filepath.Glob(filepath.Join(d, wire.XSPrefix+"*"))
			for _, m := range ms {
				if b, err := readFile(m); err == nil {
					f.add(b, m)
				}
			}
		}
		switch {
		case there == nil:
			f.listening()
		case f.from.IsZero():
			// Never there: nothing can arrive through it.
			return errors.Join(err, there)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(channelTick / 2):
		}
	}
}
