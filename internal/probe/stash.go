package probe

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

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

func doStash(s wire.Step, rep *wire.Report) error {
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
