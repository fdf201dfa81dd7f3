package probe

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// KindStash is the reusable-state gate's write: Target is a file path ("~/"
// is the agent's home); the probe makes the missing folders above it (0700)
// and appends Payload to it, and leaves it there. It appends rather than
// truncates so that a later session writing its own value to the same file
// (an AGENTS.md, a cache index) never erases what an earlier one left. The
// Excerpt is the path written, symlinks resolved. Like every write it is
// refused on kernel interfaces (see openForWrite).
const KindStash = "stash"

// expandHome turns a leading "~/" into the agent's home.
func expandHome(p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		return filepath.Join(homeDir(), rest)
	}
	if p == "~" {
		return homeDir()
	}
	return p
}

func doStash(s Step, rep *Report) error {
	p := expandHome(s.Target)
	missing := missingDirs(filepath.Dir(p))
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	for _, d := range missing {
		if real, err := filepath.EvalSymlinks(d); err == nil {
			made(rep, real)
		}
	}
	f, err := openForWrite(p)
	if err != nil {
		return err
	}
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		f.Close()
		return err
	}
	n, err := io.WriteString(f, s.Payload)
	rep.Bytes = n
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		rep.Excerpt = p
		if real, rerr := filepath.EvalSymlinks(p); rerr == nil {
			rep.Excerpt = real
		}
		wrote(rep, rep.Excerpt)
	}
	return err
}

// missingDirs are the folders above and including dir that are not there,
// deepest first: what MkdirAll is about to make.
func missingDirs(dir string) []string {
	var out []string
	for d := filepath.Clean(dir); d != "/" && d != "."; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); !errors.Is(err, os.ErrNotExist) {
			break
		}
		out = append(out, d)
	}
	return out
}
