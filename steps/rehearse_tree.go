package steps

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// Tree is a folder as it was read: each entry's kind, permission bits and
// content digest (or link target), by slash path relative to the root.
// Owners and times are left out: a copy differs in them without being
// changed.
type Tree map[string]string

// ReadTree reads root without following symlinks. Only regular files,
// folders and symlinks are expected in a repository; anything else is
// recorded by kind, never opened.
func ReadTree(root string) (Tree, error) {
	t := Tree{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		if rel == "." {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		perm := fmt.Sprintf("%04o", info.Mode().Perm())
		switch {
		case info.Mode().IsRegular():
			sum, err := fileDigest(p)
			if err != nil {
				return err
			}
			t[rel] = "file " + perm + " " + sum
		case info.IsDir():
			t[rel] = "dir " + perm
		case info.Mode()&fs.ModeSymlink != 0:
			to, err := os.Readlink(p)
			if err != nil {
				return err
			}
			t[rel] = "symlink " + to
		default:
			t[rel] = "other " + info.Mode().Type().String()
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read tree %s: %w", root, err)
	}
	return t, nil
}

func fileDigest(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
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

// CopyTree copies src to dst (which must not exist) keeping permission
// bits and symlinks as symlinks; nothing outside src is read.
func CopyTree(src, dst string) error {
	// Folders are made 0700 to be filled, and get their own bits after.
	dirs := map[string]fs.FileMode{}
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case info.IsDir():
			dirs[to] = info.Mode().Perm()
			return os.Mkdir(to, 0o700)
		case info.Mode()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(l, to)
		case info.Mode().IsRegular():
			return copyFile(p, to, info.Mode().Perm())
		}
		return errors.New("copy tree: " + rel + ": neither file, folder nor symlink")
	})
	if err != nil {
		return err
	}
	for d, perm := range dirs {
		if err := os.Chmod(d, perm); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(from, to string, perm fs.FileMode) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return errors.Join(out.Close(), os.Chmod(to, perm))
}
