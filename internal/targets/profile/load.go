package profile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"

	"gopkg.in/yaml.v3"
)

// Error is a problem with one field of one profile file.
type Error struct {
	File  string
	Line  int    // 0 when unknown
	Field string // dotted path, e.g. "paths.normal.uid"; "" when unknown
	Err   error
}

func (e *Error) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc += ":" + strconv.Itoa(e.Line)
	}
	if e.Field != "" {
		return fmt.Sprintf("profile: %s: %s: %v", loc, e.Field, e.Err)
	}
	return fmt.Sprintf("profile: %s: %v", loc, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Load reads a profile file from disk and every file it references. Its
// target must name one of kinds (targets/kinds.All).
func Load(file string, kinds Kinds) (*Profile, error) {
	dir, err := filepath.Abs(filepath.Dir(file))
	if err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	}
	return load(os.DirFS(dir), filepath.Base(file), file, dir, kinds)
}

// LoadFS reads a profile from fsys (for example the embedded profiles);
// referenced files are read from the same fs.FS, next to the profile. Its
// target must name one of kinds.
func LoadFS(fsys fs.FS, name string, kinds Kinds) (*Profile, error) {
	return load(fsys, name, name, "", kinds)
}

func load(fsys fs.FS, name, label, hostDir string, kinds Kinds) (*Profile, error) {
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, &Error{File: label, Err: err}
	}
	p, err := decode(data, kinds)
	if err != nil {
		var pe *Error
		if errors.As(err, &pe) {
			pe.File = label
			return nil, pe
		}
		return nil, &Error{File: label, Err: err}
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, &Error{File: label, Err: err}
	}
	p.source = label
	p.main = path.Base(name)
	p.files = map[string][]byte{p.main: data}
	p.refs = map[int]string{}
	v := &validator{p: p, root: &root, fsys: fsys, dir: path.Dir(name), hostDir: hostDir, file: label, kinds: kinds}
	if err := v.run(); err != nil {
		return nil, err
	}
	return p, nil
}

// decode is strict: unknown fields, a second document and an empty file are
// all errors, because a typo in a policy must not silently weaken it. The
// kinds' sections are decoded into their own types with the rest.
func decode(data []byte, kinds Kinds) (*Profile, error) {
	secs, err := kinds.sectionTypes()
	if err != nil {
		return nil, err
	}
	doc := reflect.New(document(secs))
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	derr := dec.Decode(doc.Interface())
	if errors.Is(derr, io.EOF) {
		return nil, errors.New("empty profile")
	}
	var te *yaml.TypeError
	if derr != nil && !errors.As(derr, &te) {
		return nil, yamlError(derr)
	}
	p := doc.Elem().Field(0).Addr().Interface().(*Profile)
	// A key no field takes is unknown, reported where the decoder would
	// have put it among its own errors (the first by line wins); but not
	// in a profile whose target names none of kinds, where the key may be
	// the section of the missing kind and the target is what is wrong.
	if name, line := firstUnknown(doc.Elem(), data); name != "" {
		if _, ok := kinds.find(p.Target); ok && (te == nil || line < typeErrorLine(te)) {
			return nil, &Error{Line: line, Field: name, Err: errors.New("unknown field")}
		}
	}
	if derr != nil {
		return nil, yamlError(derr)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, errors.New("more than one YAML document")
	}
	p.sections = make(map[string]any, len(secs))
	for i, s := range secs {
		p.sections[s.Name] = doc.Elem().Field(2 + i).Addr().Interface()
	}
	return p, nil
}

// typeErrorLine is the line of the decoder's first error, 0 if unknown.
func typeErrorLine(te *yaml.TypeError) int {
	if len(te.Errors) == 0 {
		return 0
	}
	m := lineOnly.FindStringSubmatch(te.Errors[0])
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

var (
	unknownField = regexp.MustCompile(`line (\d+): field (\S+) not found`)
	lineOnly     = regexp.MustCompile(`line (\d+): (.*)`)
)

// yamlError turns yaml.v3's messages into an *Error with line and field.
func yamlError(err error) error {
	var pe *Error
	if errors.As(err, &pe) {
		return pe
	}
	msg := err.Error()
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	if m := unknownField.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		return &Error{Line: n, Field: m[2], Err: errors.New("unknown field")}
	}
	if m := lineOnly.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		return &Error{Line: n, Err: errors.New(m[2])}
	}
	return err
}

// UnmarshalYAML takes a mapping; a bare "true" is refused because it does
// not say where the process runs, and that decides what can read it.
func (s *SecretProcess) UnmarshalYAML(v *yaml.Node) error {
	if v.Kind == yaml.ScalarNode {
		var b bool
		if err := v.Decode(&b); err == nil && !b {
			*s = SecretProcess{}
			return nil
		}
		return &Error{Line: v.Line, Field: "secret_process", Err: errors.New(`say where the platform runs it and as whom: {where: inside, user: agent|other} or {where: outside} (false: there is none)`)}
	}
	type plain SecretProcess
	var p plain
	if err := v.Decode(&p); err != nil {
		return err
	}
	*s = SecretProcess(p)
	return nil
}

// UnmarshalYAML accepts only the known network kinds.
func (n *Network) UnmarshalYAML(v *yaml.Node) error {
	var s string
	if err := v.Decode(&s); err != nil {
		return err
	}
	switch Network(s) {
	case NetworkLab, NetworkNone, NetworkHost:
		*n = Network(s)
		return nil
	}
	return &Error{Line: v.Line, Field: "network", Err: fmt.Errorf("%q is not one of lab, none, host", s)}
}
