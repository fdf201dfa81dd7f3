package docker

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/targets"
)

// placeMount is one bind whose source lies in a harness place, opened
// (no link, the folder the harness made) before the daemon is asked and
// held until the bind is checked after start: the daemon binds by path,
// and a session that writes storage-root could swap the path in between.
type placeMount struct {
	source, target string
	id             targets.FileID
	f              *os.File // held: its inode cannot be reused meanwhile
}

// pinPlaces opens every bind source that lies in a place (targets.OpenPlace):
// a place replaced since the harness made it fails the start before the
// daemon is asked.
func pinPlaces(spec targets.Spec, mounts []mount.Mount) ([]placeMount, error) {
	var out []placeMount
	for _, m := range mounts {
		if m.Type != mount.TypeBind {
			continue
		}
		f, ok, err := targets.OpenPlace(spec, m.Source)
		if err != nil {
			closePlaces(out)
			return nil, fmt.Errorf("mount %s: %w", m.Target, err)
		}
		if !ok {
			continue // a host path the profile names itself
		}
		id, err := targets.IDOf(f)
		if err != nil {
			f.Close()
			closePlaces(out)
			return nil, fmt.Errorf("mount %s: %w", m.Target, err)
		}
		out = append(out, placeMount{source: m.Source, target: m.Target, id: id, f: f})
	}
	return out, nil
}

func closePlaces(ps []placeMount) {
	for _, p := range ps {
		p.f.Close()
	}
}

// checkPlaces looks, from the host, at what the started container has at
// each place's bind target: it must be the folder pinned before create.
// Under runc the container's init shows its mounts (/proc/PID/root);
// under runsc the gofer, which binds the sources and serves them to the
// sandbox, does. Anything it cannot check fails the start: a session is
// never run on a bind nobody saw.
func (s *Session) checkPlaces(ctx context.Context, pins []placeMount) error {
	if len(pins) == 0 {
		return nil
	}
	if !s.local() {
		return fmt.Errorf("places: the daemon is not one Gatehouse runs on this machine: what it bound for %s cannot be checked", pins[0].target)
	}
	res, err := s.cli.ContainerInspect(ctx, s.ID(), client.ContainerInspectOptions{})
	if err != nil {
		return fmt.Errorf("places: %w", err)
	}
	if res.Container.State == nil || res.Container.State.Pid <= 0 {
		return errors.New("places: the daemon names no process for the container: its binds cannot be checked")
	}
	pid := res.Container.State.Pid
	if runscRole(cmdline(pid), "boot", s.ID()) {
		if pid = goferOf(s.ID()); pid <= 0 {
			return errors.New("places: no runsc gofer found for the container: its binds cannot be checked")
		}
	}
	p, err := pinIn(pid, s.ID())
	if err != nil {
		return fmt.Errorf("places: %w", err)
	}
	defer p.Close()
	return p.Read(func(dir string) error { return checkBinds(dir+"/root", pins) })
}

// checkBinds opens each pin's target below root (a process's
// /proc/PID/root), resolved as the runtime resolved it: inside that root,
// never above it. Only an O_PATH descriptor is opened: nothing is read.
func checkBinds(root string, pins []placeMount) error {
	rfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("places: %s: %w", root, err)
	}
	defer unix.Close(rfd)
	for _, pm := range pins {
		how := unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS}
		fd, err := unix.Openat2(rfd, pm.target, &how)
		if err != nil {
			return fmt.Errorf("places: %s in the container: %w", pm.target, err)
		}
		var st unix.Stat_t
		err = unix.Fstat(fd, &st)
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("places: %s in the container: %w", pm.target, err)
		}
		if got := (targets.FileID{Dev: st.Dev, Ino: st.Ino}); got != pm.id {
			return fmt.Errorf("places: %s in the container is %d:%d, but %s was %d:%d when the daemon was asked to bind it: %w",
				pm.target, got.Dev, got.Ino, pm.source, pm.id.Dev, pm.id.Ino, targets.ErrPlaceSwapped)
		}
	}
	return nil
}

// goferOf is the runsc gofer of the container, 0 when none is found.
func goferOf(id string) int {
	for pid := range cgroupProcs(id) {
		if runscRole(cmdline(pid), "gofer", id) {
			return pid
		}
	}
	return 0
}
