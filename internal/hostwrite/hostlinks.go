package hostwrite

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/internal/untrusted"
)

// maxHops bounds how many of the host's own links one place may go
// through, as the kernel does (40).
const maxHops = 40

// hostDir resolves a host folder path that goes through links of the
// host's own layout (/var/run -> /run): a mount table names a place by
// the path it was mounted at, which may hold one. A link is followed only
// when nothing of the run can have made or moved it: owned by root, in a
// folder owned by root that no one else may write, and changed last
// before the run began (before). Any other link is ELOOP, as before.
// The result is opened with no link followed, so a folder swapped for a
// link after this look fails closed.
func hostDir(p string, before time.Time) (string, error) {
	if !path.IsAbs(p) {
		return "", fmt.Errorf("%s is not absolute", p)
	}
	parts := strings.Split(strings.TrimPrefix(path.Clean(p), "/"), "/")
	cur, hops := "/", 0
	for i := 0; i < len(parts); i++ {
		c := parts[i]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = path.Dir(cur)
			continue
		}
		next := path.Join(cur, c)
		var st unix.Stat_t
		if err := unix.Lstat(next, &st); err != nil {
			// Not there (or not a folder on the way): the open below says so.
			return path.Join(append([]string{next}, parts[i+1:]...)...), nil
		}
		if st.Mode&unix.S_IFMT != unix.S_IFLNK {
			cur = next
			continue
		}
		if !hostLink(cur, &st, before) {
			return "", fmt.Errorf("%s is a link the run may have made: %w", next, unix.ELOOP)
		}
		if hops++; hops > maxHops {
			return "", fmt.Errorf("%s: more than %d links: %w", p, maxHops, unix.ELOOP)
		}
		buf := make([]byte, unix.PathMax)
		n, err := unix.Readlink(next, buf)
		if err != nil {
			return "", fmt.Errorf("%s: %w", next, err)
		}
		if n >= len(buf) || n == 0 {
			return "", fmt.Errorf("%s: link target is empty or too long: %w", next, unix.ELOOP)
		}
		target := string(buf[:n])
		if path.IsAbs(target) {
			cur = "/"
		}
		parts = append(strings.Split(strings.TrimPrefix(target, "/"), "/"), parts[i+1:]...)
		i = -1
	}
	return cur, nil
}

// hostLink says whether a link is the host's own: see hostDir.
func hostLink(dir string, link *unix.Stat_t, before time.Time) bool {
	if link.Uid != 0 || !time.Unix(link.Ctim.Unix()).Before(before.Add(-clockSlack)) {
		return false
	}
	var d unix.Stat_t
	if err := unix.Lstat(dir, &d); err != nil {
		return false
	}
	return d.Mode&unix.S_IFMT == unix.S_IFDIR && d.Uid == 0 && d.Mode&0o022 == 0
}

// openPlace opens the folder that holds rel below under, with no link
// followed; when the way holds a link, it is tried once more through the
// host's own links (hostDir). It returns the folder and the name in it.
func openPlace(under, rel string, since time.Time) (*untrusted.Dir, string, error) {
	dir, base := path.Split(rel)
	root, err := untrusted.OpenDir(under)
	if err == nil {
		parent, perr := openParent(root, dir)
		root.Close()
		if perr == nil || !errors.Is(perr, unix.ELOOP) {
			return parent, base, perr
		}
		err = perr
	}
	if !errors.Is(err, unix.ELOOP) {
		return nil, base, err
	}
	real, rerr := hostDir(path.Join(under, dir), since)
	if rerr != nil {
		return nil, base, fmt.Errorf("%w (%w)", err, rerr)
	}
	parent, err := untrusted.OpenDir(real)
	if err != nil {
		return nil, base, err
	}
	return parent, base, nil
}

// OpenDir opens the host folder p with no link followed but the host's
// own (see hostDir), as a place is opened: for a folder a runtime binds
// into a sandbox, named by a profile as the runtime resolves it.
func OpenDir(p string, before time.Time) (*untrusted.Dir, error) {
	d, err := untrusted.OpenDir(p)
	if err == nil || !errors.Is(err, unix.ELOOP) {
		return d, err
	}
	real, rerr := hostDir(p, before)
	if rerr != nil {
		return nil, fmt.Errorf("%w (%w)", err, rerr)
	}
	return untrusted.OpenDir(real)
}
