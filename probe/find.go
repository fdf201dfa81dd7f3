package probe

import (
	"bufio"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Bounds of one find attempt: the search must finish well inside the
// attempt's deadline even on a sandbox that shows the whole host.
const (
	findDepth    = 4
	findFiles    = 2000     // files opened
	findFileSize = 64 << 10 // larger files are skipped
	findRoots    = 64       // glob matches or mount points searched
)

// systemDirs are never descended into from another root: they are huge and
// hold no session storage.
var systemDirs = map[string]bool{"/proc": true, "/sys": true, "/dev": true, "/usr": true}

// doFind searches Target (see KindFind) and reports the token-shaped values
// found in files under it.
func doFind(ctx context.Context, s Step, rep *Report) error {
	roots, err := findRootsOf(s.Target)
	if err != nil {
		return err
	}
	f := newFound(s.Payload)
	files := 0
	var first error
	walked := false
	for _, root := range roots {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err != nil {
				if p == root {
					return err
				}
				return nil // an unreadable corner does not end the search
			}
			if d.IsDir() {
				if p != root && (systemDirs[p] || strings.Count(strings.TrimPrefix(p, root), "/") >= findDepth) {
					return filepath.SkipDir
				}
				return nil
			}
			if !d.Type().IsRegular() || files >= findFiles {
				return nil
			}
			if info, err := d.Info(); err != nil || info.Size() > findFileSize {
				return nil
			}
			files++
			if b, err := readFile(p); err == nil {
				f.add(b, p)
			}
			return nil
		})
		if err == nil {
			walked = true
		} else if first == nil {
			first = err
		}
	}
	rep.Bytes = files
	rep.Excerpt = f.excerpt()
	if !walked {
		if first == nil {
			first = fs.ErrNotExist
		}
		return first
	}
	return nil
}

func readFile(p string) ([]byte, error) {
	fh, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	return readSome(fh, readCap)
}

// findRootsOf expands a find target into folders to search.
func findRootsOf(target string) ([]string, error) {
	if target == "@mounts" {
		return mountPoints()
	}
	if !strings.ContainsAny(target, "*?[") {
		return []string{target}, nil
	}
	m, err := filepath.Glob(target)
	if err != nil {
		return nil, err
	}
	kept := m[:0]
	for _, p := range m {
		if !systemDirs[p] && p != "/gatehouse" {
			kept = append(kept, p)
		}
	}
	m = kept
	if len(m) == 0 {
		return nil, fs.ErrNotExist
	}
	if len(m) > findRoots {
		m = m[:findRoots]
	}
	return m, nil
}

// mountPoints lists the mount points the sandbox sees, system folders and
// the probe's own /gatehouse excepted.
func mountPoints() ([]string, error) {
	fh, err := os.Open("/proc/self/mounts")
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	var out []string
	seen := map[string]bool{}
	sc := bufio.NewScanner(fh)
	for sc.Scan() && len(out) < findRoots {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		mp := strings.ReplaceAll(fields[1], `\040`, " ")
		top := "/" + strings.SplitN(strings.TrimPrefix(mp, "/"), "/", 2)[0]
		if mp == "/" || systemDirs[top] || top == "/gatehouse" || seen[mp] {
			continue
		}
		seen[mp] = true
		out = append(out, mp)
	}
	if len(out) == 0 {
		return nil, errors.New("no mount point outside the system folders")
	}
	return out, sc.Err()
}
