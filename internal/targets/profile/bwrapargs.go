package profile

import (
	"io/fs"
	"path"
	"path/filepath"
	"strings"
)

// ArgFile reads the file an argument of the kind's section names, if it
// names one: an operand starting with "./", or an absolute path inside the
// profile's folder on disk (a folder or a missing path there is a host
// path, not a policy file). It returns the file's key in Files, "" when
// the argument names none.
func (l *Loading) ArgFile(a string) (string, error) { return l.v.argFile(a) }

// RecordArgFile records that Bwrap.Args[i] names the file key
// (Profile.ArgFile).
func (l *Loading) RecordArgFile(i int, key string) { l.v.p.refs[i] = key }

func (v *validator) argFile(a string) (string, error) {
	switch {
	case strings.HasPrefix(a, "./"):
		return v.readRef(a)
	case v.hostDir != "" && filepath.IsAbs(a) && strings.HasPrefix(a, v.hostDir+string(filepath.Separator)):
		rel, err := filepath.Rel(v.hostDir, a)
		if err != nil {
			return "", err
		}
		st, err := fs.Stat(v.fsys, path.Join(v.dir, filepath.ToSlash(rel)))
		if err != nil || !st.Mode().IsRegular() {
			return "", nil // a folder or missing: a host path, not a policy file
		}
		return v.readRef(rel)
	}
	return "", nil
}
