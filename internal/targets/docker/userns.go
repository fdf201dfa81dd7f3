package docker

import (
	"context"
	"path/filepath"
	"strings"

	"github.com/moby/moby/client"
	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/targets"
)

// openPaths lets a private user namespace's root (an unmapped uid on the
// host, like --userns-remap's) reach what the container mounts: runc binds
// the root filesystem, volumes and Docker's per-container files from
// inside the new namespace, so every folder on the way must be
// searchable. Docker's own remap keeps such folders 0701; here the
// search bit (never read) is added to the Gatehouse-owned folders only:
// the daemon's state folder and the harness's places. A folder outside
// them is left alone, and the start then fails loudly.
func (s *Session) openPaths(ctx context.Context, spec targets.Spec) error {
	res, err := s.cli.ContainerInspect(ctx, s.ID(), client.ContainerInspectOptions{})
	if err != nil {
		return err
	}
	ci := res.Container
	var paths []string
	if gd := ci.GraphDriver; gd != nil {
		paths = append(paths, gd.Data["MergedDir"], gd.Data["UpperDir"], gd.Data["WorkDir"])
	}
	for _, m := range ci.Mounts {
		paths = append(paths, m.Source)
	}
	paths = append(paths, ci.ResolvConfPath, ci.HostnamePath, ci.HostsPath)
	owned := []string{s.t.daemon.stateDir}
	for _, p := range spec.Places {
		owned = append(owned, p)
	}
	for _, p := range paths {
		if p != "" {
			searchable(p, owned)
		}
	}
	return nil
}

// searchable adds o+x to p's folders (p itself when it is one, and its
// parents) that lie inside an owned root, or are parents of one up to a
// folder Gatehouse made (gatehouse-places-*, /run/gatehouse).
func searchable(p string, owned []string) {
	for dir := p; dir != "/" && dir != "."; dir = filepath.Dir(dir) {
		if !gatehouseOwned(dir, owned) {
			continue
		}
		addSearch(dir)
	}
}

// addSearch adds o+x to the folder dir, opened with no link followed: a
// place a session swapped for a link to a host folder is left alone
// (the start then fails on the bind check).
func addSearch(dir string) {
	fd, err := unix.Openat2(unix.AT_FDCWD, dir, &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&0o001 != 0 {
		return
	}
	_ = unix.Fchmod(fd, st.Mode&0o7777|0o001)
}

func gatehouseOwned(dir string, owned []string) bool {
	if strings.HasPrefix(filepath.Base(dir), "gatehouse-places-") || dir == "/run/gatehouse" || strings.HasPrefix(dir, "/run/gatehouse/") {
		return true
	}
	for _, o := range owned {
		if dir == o || strings.HasPrefix(dir, o+"/") {
			return true
		}
	}
	return false
}
