package hostwrite

import (
	"path"
	"strings"
)

// View maps paths as a session sees them to the host paths they are, from
// the kernel's own word: the session's mount tables read from the host
// (/proc/PID/mountinfo of its processes) and, for a runtime whose mounts
// the host cannot see (gVisor), the binds the runtime reports.
type View struct {
	Host   []Mount   // the harness's own mount table
	Inside [][]Mount // the session's mount namespaces
	Binds  []Bind
}

// Bind is a host folder a runtime says it shows inside at Dst.
type Bind struct{ Src, Dst string }

// Place is where a path of the session may be on the host.
type Place struct {
	Path string
	// Mapped: the session's mount table (or its runtime's binds) says its
	// view of this place is this host folder. Otherwise the place is only
	// the same path on the host, looked at in case (a wrapper that shows
	// the host's own folders at their own paths, when its mount table
	// could not be read).
	Mapped bool
}

// Places lists the host paths an absolute, clean inside path may be, the
// same path on the host included, each once.
func (v View) Places(inside string) []Place {
	if !path.IsAbs(inside) || path.Clean(inside) != inside {
		return nil
	}
	var out []Place
	add := func(p string, mapped bool) {
		for i := range out {
			if out[i].Path == p {
				out[i].Mapped = out[i].Mapped || mapped
				return
			}
		}
		out = append(out, Place{Path: p, Mapped: mapped})
	}
	for _, ns := range v.Inside {
		m, ok := holding(ns, inside)
		if !ok || KernelFS[m.FSType] {
			continue
		}
		if dir, ok := v.hostDir(m); ok {
			add(path.Join(dir, rel(inside, m.Point)), true)
		}
	}
	for _, b := range v.Binds {
		if under(inside, b.Dst) && path.IsAbs(b.Src) {
			add(path.Join(path.Clean(b.Src), rel(inside, b.Dst)), true)
		}
	}
	add(inside, false)
	return out
}

// hostDir is where on the host the folder an inside mount shows is: a
// host mount of the same file system whose root holds it.
func (v View) hostDir(m Mount) (string, bool) {
	best, found := Mount{}, false
	for _, h := range v.Host {
		if h.Dev != m.Dev || !path.IsAbs(m.Root) || !path.IsAbs(h.Root) || !under(m.Root, h.Root) {
			continue
		}
		if !found || len(h.Root) >= len(best.Root) {
			best, found = h, true
		}
	}
	if !found {
		return "", false // a file system only the session has (its own tmpfs): it goes with it
	}
	return path.Join(best.Point, rel(m.Root, best.Root)), true
}

// Split divides a host path into the deepest host mount point holding it
// and the rest: the folder Undo opens, and the path it resolves below.
func (v View) Split(host string) (under, below string) {
	m, ok := holding(v.Host, host)
	if !ok {
		return "/", strings.TrimPrefix(host, "/")
	}
	return m.Point, rel(host, m.Point)
}

// WritableFolders are the session's writable mount points, as the probe's
// "@writable" lists them from inside: kernel file systems, /proc, /sys,
// /dev (but /dev/shm), the probe's own /gatehouse and the host's namespace
// handles (/run/netns) left out.
func (v View) WritableFolders() []string {
	var out []string
	seen := map[string]bool{}
	for _, ns := range v.Inside {
		for _, m := range ns {
			if !m.RW || KernelFS[m.FSType] || seen[m.Point] || skipWritable(m.Point) {
				continue
			}
			seen[m.Point] = true
			out = append(out, m.Point)
		}
	}
	return out
}

func skipWritable(p string) bool {
	in := func(root string) bool { return under(p, root) && root != "/" }
	switch {
	case in("/dev/shm"):
		return false
	case in("/proc"), in("/sys"), in("/dev"), in("/gatehouse"), in("/run/netns"), in("/var/run/netns"):
		return true
	}
	return false
}
