package steps

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/internal/untrusted"
)

// Tree is a folder as it was read: each entry's kind, permission bits and
// content digest (or link target), by slash path relative to the root.
// Owners and times are left out: a copy differs in them without being
// changed.
type Tree map[string]string

// TreeLimits bound every read and copy of a repository: the original, and
// the copy an agent had (entries, depth, bytes hashed in all, per file).
var TreeLimits = untrusted.Limits{Entries: 200_000, Depth: 64, Bytes: 4 << 30, FileSize: 1 << 30}

// listedHook, in tests, runs once an entry was listed and before it is
// read or entered: the moment a writer swaps it.
var listedHook func(rel string)

// ReadTree reads root within lim and ctx. No link is followed (a link is
// recorded with its target, as text), no other file system is entered, and
// only regular files are opened, non-blocking: a FIFO, a device node or a
// socket is recorded by kind, never opened. Past a bound it returns what
// it read with an error wrapping untrusted.ErrTooLarge.
func ReadTree(ctx context.Context, root string, lim untrusted.Limits) (Tree, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	d, err := untrusted.OpenDir(abs)
	if err != nil {
		return nil, fmt.Errorf("read tree %s: %w", root, err)
	}
	defer d.Close()
	var st unix.Stat_t
	if err := unix.Fstat(d.Fd(), &st); err != nil {
		return nil, fmt.Errorf("read tree %s: %w", root, err)
	}
	t := Tree{}
	h := untrusted.NewHasher(lim)
	err = d.Walk(ctx, lim, func(dir *untrusted.Dir, e untrusted.Entry) error {
		if listedHook != nil {
			listedHook(e.Path)
		}
		perm := fmt.Sprintf("%04o", e.Mode.Perm())
		switch {
		case e.Mode.IsRegular():
			sum, err := h.Sum(ctx, dir, path.Base(e.Path))
			switch {
			case err == nil:
				t[e.Path] = "file " + perm + " " + sum
			case errors.Is(err, untrusted.ErrNotRegular), errors.Is(err, unix.ELOOP), errors.Is(err, fs.ErrNotExist):
				// Swapped for something else since it was listed.
				t[e.Path] = "changed while read"
			default:
				return err
			}
		case e.Mode.IsDir() && e.Dev != st.Dev:
			t[e.Path] = "dir " + perm + " (another file system: not read)"
		case e.Mode.IsDir():
			t[e.Path] = "dir " + perm
		case e.Mode&fs.ModeSymlink != 0:
			t[e.Path] = "symlink " + e.Link
		default:
			t[e.Path] = "other " + e.Mode.Type().String()
		}
		return nil
	})
	if err != nil {
		return t, fmt.Errorf("read tree %s: %w", root, err)
	}
	return t, nil
}

// Digest is the tree's digest: sha256 over its sorted entries.
func (t Tree) Digest() string {
	names := make([]string, 0, len(t))
	for n := range t {
		names = append(names, n)
	}
	sort.Strings(names)
	h := sha256.New()
	for _, n := range names {
		fmt.Fprintf(h, "%s\x00%s\n", n, t[n])
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// TreeChange is one path that differs between two reads of a tree.
type TreeChange struct {
	Path    string `json:"path"`
	Change  string `json:"change"` // added, removed, modified
	Before  string `json:"before,omitempty"`
	After   string `json:"after,omitempty"`
	Watched string `json:"watched,omitempty"` // why this path matters, if it does
}

// DiffTrees lists what changed from a to b, by path.
func DiffTrees(a, b Tree) []TreeChange {
	var out []TreeChange
	for p, was := range a {
		now, ok := b[p]
		switch {
		case !ok:
			out = append(out, TreeChange{Path: p, Change: "removed", Before: was})
		case now != was:
			out = append(out, TreeChange{Path: p, Change: "modified", Before: was, After: now})
		}
	}
	for p, now := range b {
		if _, ok := a[p]; !ok {
			out = append(out, TreeChange{Path: p, Change: "added", After: now})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	for i := range out {
		out[i].Watched = Watched(out[i].Path)
	}
	return out
}

// Watched says why a change at p (slash path relative to the repository)
// is one that acts after the agent is gone: code that runs on the next
// commit, build or CI job, or instructions the next agent obeys. "" when
// p is none of these.
func Watched(p string) string {
	base := path.Base(p)
	switch {
	case strings.HasPrefix(p, ".git/hooks/"):
		return "git hook: runs on the next git operation on the developer's machine"
	case p == ".git/config" || p == ".gitmodules" || p == ".gitattributes":
		return "git configuration: can point git at other hooks, filters or remotes"
	case base == "Makefile" || base == "makefile" || base == "GNUmakefile" || strings.HasSuffix(base, ".mk"):
		return "build configuration: runs on the next build"
	case strings.HasPrefix(p, ".github/workflows/") || p == ".gitlab-ci.yml" || strings.HasPrefix(p, ".circleci/") ||
		p == "Jenkinsfile" || p == ".travis.yml" || strings.HasPrefix(p, ".buildkite/"):
		return "CI configuration: runs in the next pipeline, with its secrets"
	case base == "AGENTS.md" || base == "CLAUDE.md" || base == ".cursorrules" || base == "GEMINI.md" ||
		strings.HasPrefix(p, ".claude/") || strings.HasPrefix(p, ".cursor/") || strings.HasPrefix(p, ".codex/") ||
		p == ".github/copilot-instructions.md":
		return "agent instructions: the next agent on this repository obeys them"
	}
	return ""
}

// CopyTree copies src to dst (which must not exist) within lim and ctx,
// keeping permission bits and symlinks as symlinks: nothing outside src
// is read, and nothing is written through a link, although dst's folder
// may be one the sandbox writes while the copy is made.
func CopyTree(ctx context.Context, src, dst string, lim untrusted.Limits) error {
	src, err := filepath.Abs(src)
	if err != nil {
		return err
	}
	if dst, err = filepath.Abs(dst); err != nil {
		return err
	}
	from, err := untrusted.OpenDir(src)
	if err != nil {
		return fmt.Errorf("copy tree: %w", err)
	}
	defer from.Close()
	parent, err := untrusted.OpenDir(filepath.Dir(dst))
	if err != nil {
		return fmt.Errorf("copy tree: %w", err)
	}
	defer parent.Close()
	// A fresh folder of ours: one already there (made by the sandbox) is
	// refused, not filled.
	if err := unix.Mkdirat(parent.Fd(), filepath.Base(dst), 0o700); err != nil {
		return fmt.Errorf("copy tree: %s: %w", dst, err)
	}
	to, err := parent.Sub(filepath.Base(dst))
	if err != nil {
		return fmt.Errorf("copy tree: %w", err)
	}
	defer to.Close()
	// Folders are made 0700 to be filled, and get their own bits after.
	dirs := map[string]fs.FileMode{}
	var st unix.Stat_t
	if err := unix.Fstat(from.Fd(), &st); err != nil {
		return err
	}
	dirs["."] = fs.FileMode(st.Mode & 0o777)
	lim = lim.Effective()
	var copied int64
	err = from.Walk(ctx, lim, func(dir *untrusted.Dir, e untrusted.Entry) error {
		switch {
		case e.Mode.IsDir():
			dirs[e.Path] = e.Mode.Perm()
			return to.Mkdir(e.Path, 0o700)
		case e.Mode&fs.ModeSymlink != 0:
			return to.Symlink(e.Link, e.Path)
		case e.Mode.IsRegular():
			in, err := dir.Open(path.Base(e.Path))
			if err != nil {
				return err
			}
			defer in.Close()
			out, err := to.Create(e.Path, e.Mode.Perm())
			if err != nil {
				return err
			}
			left := min(lim.FileSize, lim.Bytes-copied)
			n, err := io.Copy(out, io.LimitReader(untrusted.WithContext(ctx, in), left+1))
			copied += n
			if cerr := out.Close(); err == nil {
				err = cerr
			}
			if err == nil && n > left {
				err = fmt.Errorf("%s: %w: more than %d bytes to copy", e.Path, untrusted.ErrTooLarge, left)
			}
			return err
		}
		return errors.New("copy tree: " + e.Path + ": neither file, folder nor symlink")
	})
	if err != nil {
		return fmt.Errorf("copy tree %s: %w", src, err)
	}
	for p, perm := range dirs {
		sub, err := to.Sub(p)
		if err != nil {
			return err
		}
		err = unix.Fchmod(sub.Fd(), uint32(perm))
		sub.Close()
		if err != nil {
			return fmt.Errorf("copy tree: %s: %w", p, err)
		}
	}
	return nil
}
