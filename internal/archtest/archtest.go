// Package archtest holds the checks that guard the shape of the code
// (docs/architecture.md): imports run only down the layers, a fenced
// package is imported only by the packages its fence names, no run of
// lines is copied between non-test Go files, every package outside
// internal/ is on a deliberate public list, and no public package's
// exported API mentions an internal type (public.go). Each check takes
// the root folder of a module, so a fixture tree under testdata exercises
// it the same way the repository's own tests do (archtest_test.go,
// public_test.go).
package archtest

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"hash/fnv"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// maxFile bounds what is read of one source file.
const maxFile = 4 << 20

// Layer is one row of a layer table: a name and the packages in it, as
// paths relative to the module ("lab", "internal/targets/profile"; "internal/..."
// is internal and everything under it). The most specific pattern wins.
type Layer struct {
	Name     string
	Packages []string
}

// Arrow is one package importing another, both relative to the module.
type Arrow struct{ From, To string }

func (a Arrow) String() string { return a.From + " → " + a.To }

// Exception is an arrow or a pair of files the table allows for now, and
// why (which issue will remove it).
type Exception struct {
	A, B string // Arrow: From and To; a duplicate run: the two files
	Why  string
}

// Pos is a line of a file relative to the root.
type Pos struct {
	File string
	Line int
}

// Run is a run of at least the asked number of lines found in two places:
// Lines lines (blank and comment-only lines not counted) from A and from B.
type Run struct {
	A, B       Pos
	AEnd, BEnd int // last line of each copy
	Lines      int
}

func (r Run) String() string {
	return fmt.Sprintf("%s:%d-%d and %s:%d-%d share %d lines", r.A.File, r.A.Line, r.AEnd, r.B.File, r.B.Line, r.BEnd, r.Lines)
}

// Problems is what the guard finds wrong in the module at root: imports
// that run up the layers (other than allowedUp), packages in no layer,
// runs of minRun or more lines shared by two non-test files (other than
// between the pairs in dupOK), and exceptions that no longer occur. Each
// problem is one sentence saying what to do.
func Problems(root string, layers []Layer, allowedUp []Exception, minRun int, dupOK []Exception) ([]string, error) {
	imports, err := Imports(root)
	if err != nil {
		return nil, err
	}
	var out []string
	up, unplaced := Upward(imports, layers)
	for _, p := range unplaced {
		out = append(out, fmt.Sprintf("package %s is in no layer: add it to the layer table", p))
	}
	seen := map[Arrow]bool{}
	for _, a := range up {
		seen[a] = true
		if !allowed(allowedUp, a.From, a.To) {
			out = append(out, fmt.Sprintf("%s imports a higher layer (%s → %s): move the code down, or the import out", a, layerName(layers, a.From), layerName(layers, a.To)))
		}
	}
	for _, e := range allowedUp {
		if !seen[Arrow{e.A, e.B}] {
			out = append(out, fmt.Sprintf("stale exception: %s → %s is no longer an upward import; delete it from the known upward imports", e.A, e.B))
		}
	}
	runs, err := Duplicates(root, minRun)
	if err != nil {
		return nil, err
	}
	found := map[[2]string]bool{}
	for _, r := range runs {
		found[pair(r.A.File, r.B.File)] = true
		if !allowed(dupOK, r.A.File, r.B.File) && !allowed(dupOK, r.B.File, r.A.File) {
			out = append(out, fmt.Sprintf("duplicated code: %s: make one of them use the other", r))
		}
	}
	for _, e := range dupOK {
		if !found[pair(e.A, e.B)] {
			out = append(out, fmt.Sprintf("stale exception: %s and %s no longer share a run of %d lines; delete the pair from the known duplicates", e.A, e.B, minRun))
		}
	}
	return out, nil
}

func allowed(es []Exception, a, b string) bool {
	for _, e := range es {
		if e.A == a && e.B == b {
			return true
		}
	}
	return false
}

func pair(a, b string) [2]string {
	if b < a {
		a, b = b, a
	}
	return [2]string{a, b}
}

// Imports reads the module at root (its go.mod names it) and returns, for
// each package with a non-test Go file, the module's own packages its
// non-test files import. Paths are relative to the module ("." for its
// root). Folders named testdata or vendor, or starting with . or _, are
// skipped, as the go command skips them.
func Imports(root string) (map[string][]string, error) { return imports(root, false) }

// imports is Imports, with the test files' imports too when tests is set.
func imports(root string, tests bool) (map[string][]string, error) {
	mod, err := modulePath(root)
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	fset := token.NewFileSet()
	err = walkGo(root, tests, func(rel string, src []byte) error {
		f, err := parser.ParseFile(fset, rel, src, parser.ImportsOnly)
		if err != nil {
			return err
		}
		pkg := path.Dir(rel)
		if _, ok := out[pkg]; !ok {
			out[pkg] = nil
		}
		for _, im := range f.Imports {
			p, err := strconv.Unquote(im.Path.Value)
			if err != nil {
				return fmt.Errorf("%s: %w", rel, err)
			}
			switch {
			case p == mod:
				p = "."
			case strings.HasPrefix(p, mod+"/"):
				p = strings.TrimPrefix(p, mod+"/")
			default:
				continue
			}
			if !contains(out[pkg], p) {
				out[pkg] = append(out[pkg], p)
			}
		}
		return nil
	})
	for _, ims := range out {
		sort.Strings(ims)
	}
	return out, err
}

// Fence is a package that only some packages may import: Importers are
// patterns as in Layer ("cmd/gatehouse-probe", "internal/probe/..."), and Why says
// what the fence keeps apart.
type Fence struct {
	Pkg       string
	Importers []string
	Why       string
}

// Fenced is what the fences find wrong in the module at root: a package
// that imports a fenced package its fence does not name (its test files
// count: a test that links the package links all of it too), and a fence
// around a package that is not there (it would guard nothing). Each
// problem is one sentence saying what to do.
func Fenced(root string, fences []Fence) ([]string, error) {
	ims, err := imports(root, true)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, f := range fences {
		if _, ok := ims[f.Pkg]; !ok {
			out = append(out, fmt.Sprintf("fence around %s: no such package; move the fence with the package", f.Pkg))
			continue
		}
		allowed := []Layer{{Packages: f.Importers}}
		var from []string
		for p, tos := range ims {
			if contains(tos, f.Pkg) && layerOf(allowed, p) < 0 {
				from = append(from, p)
			}
		}
		sort.Strings(from)
		for _, p := range from {
			out = append(out, fmt.Sprintf("%s imports %s, which only %s may import (%s): use what it imports instead", p, f.Pkg, strings.Join(f.Importers, ", "), f.Why))
		}
	}
	return out, nil
}

// Upward returns the imports that run from a lower layer to a higher one,
// and the packages no layer holds, both sorted.
func Upward(imports map[string][]string, layers []Layer) (up []Arrow, unplaced []string) {
	for from, tos := range imports {
		lf := layerOf(layers, from)
		if lf < 0 {
			unplaced = append(unplaced, from)
			continue
		}
		for _, to := range tos {
			if lt := layerOf(layers, to); lt > lf {
				up = append(up, Arrow{from, to})
			}
		}
	}
	sort.Slice(up, func(i, j int) bool { return up[i].String() < up[j].String() })
	sort.Strings(unplaced)
	return up, unplaced
}

// layerOf is the index of the layer holding pkg: an exact name first, else
// the longest "dir/..." pattern that covers it; -1 when none does.
func layerOf(layers []Layer, pkg string) int {
	best, bestLen := -1, -1
	for i, l := range layers {
		for _, p := range l.Packages {
			if p == pkg {
				return i
			}
			if dir, ok := strings.CutSuffix(p, "/..."); ok && (pkg == dir || strings.HasPrefix(pkg, dir+"/")) && len(dir) > bestLen {
				best, bestLen = i, len(dir)
			}
		}
	}
	return best
}

func layerName(layers []Layer, pkg string) string {
	if i := layerOf(layers, pkg); i >= 0 {
		return layers[i].Name
	}
	return "no layer"
}

// Duplicates finds every run of at least min lines that two non-test Go
// files under root share (or one file has twice). Lines are compared
// trimmed of surrounding white space; blank lines and comment-only lines
// (// lines and /* */ blocks) are left out, so a copy that was re-indented
// or re-commented is still found. Each maximal run is reported once.
func Duplicates(root string, min int) ([]Run, error) {
	if min < 1 {
		return nil, errors.New("archtest: a run is at least one line")
	}
	type file struct {
		name  string
		text  []string
		lines []int // original line number of each kept line
	}
	var files []file
	err := walkGo(root, false, func(rel string, src []byte) error {
		f := file{name: rel}
		f.text, f.lines = codeLines(src)
		files = append(files, f)
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Each window of min lines goes into a bucket by its hash; two places
	// in one bucket are compared line by line.
	type loc struct{ f, i int }
	windows := map[uint64][]loc{}
	for fi, f := range files {
		sums := make([]uint64, len(f.text))
		for i, l := range f.text {
			h := fnv.New64a()
			h.Write([]byte(l))
			sums[i] = h.Sum64()
		}
		for i := 0; i+min <= len(sums); i++ {
			h := fnv.New64a()
			for _, s := range sums[i : i+min] {
				h.Write(binary.LittleEndian.AppendUint64(nil, s))
			}
			k := h.Sum64()
			windows[k] = append(windows[k], loc{fi, i})
		}
	}
	same := func(a, b []string) bool {
		for i := range a {
			if a[i] != b[i] {
				return false
			}
		}
		return true
	}
	var runs []Run
	for _, locs := range windows {
		for x := 0; x < len(locs); x++ {
			for y := x + 1; y < len(locs); y++ {
				a, b := locs[x], locs[y]
				fa, fb := files[a.f], files[b.f]
				if a.f == b.f && b.i-a.i < min {
					continue // the same lines, or a copy overlapping itself
				}
				if !same(fa.text[a.i:a.i+min], fb.text[b.i:b.i+min]) {
					continue // two windows with one hash
				}
				if a.i > 0 && b.i > 0 && fa.text[a.i-1] == fb.text[b.i-1] {
					continue // not where the run starts: found from its start
				}
				n := min
				for a.i+n < len(fa.text) && b.i+n < len(fb.text) && fa.text[a.i+n] == fb.text[b.i+n] && (a.f != b.f || a.i+n < b.i) {
					n++
				}
				runs = append(runs, Run{
					A: Pos{fa.name, fa.lines[a.i]}, AEnd: fa.lines[a.i+n-1],
					B: Pos{fb.name, fb.lines[b.i]}, BEnd: fb.lines[b.i+n-1], Lines: n,
				})
			}
		}
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].String() < runs[j].String() })
	return runs, nil
}

// codeLines returns the lines of src that count, trimmed, with their
// line numbers.
func codeLines(src []byte) (text []string, lines []int) {
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(make([]byte, 64<<10), maxFile)
	inBlock := false
	for n := 1; sc.Scan(); n++ {
		l := strings.TrimSpace(sc.Text())
		if inBlock {
			if _, after, ok := strings.Cut(l, "*/"); ok {
				inBlock = false
				l = strings.TrimSpace(after)
			} else {
				continue
			}
		}
		if strings.HasPrefix(l, "/*") {
			if _, after, ok := strings.Cut(l[2:], "*/"); ok {
				l = strings.TrimSpace(after)
			} else {
				inBlock = true
				continue
			}
		}
		if l == "" || strings.HasPrefix(l, "//") {
			continue
		}
		text = append(text, l)
		lines = append(lines, n)
	}
	return text, lines
}

// walkGo calls fn with each non-test .go file under root (and each test
// file too when tests is set): its path relative to root, with slashes,
// and its bytes. Links are not followed.
func walkGo(root string, tests bool, fn func(rel string, src []byte) error) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !strings.HasSuffix(name, ".go") || (!tests && strings.HasSuffix(name, "_test.go")) {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		src, err := readBounded(p)
		if err != nil {
			return err
		}
		return fn(filepath.ToSlash(rel), src)
	})
}

func readBounded(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	if err == nil && len(b) > maxFile {
		err = fmt.Errorf("%s: more than %d bytes", p, maxFile)
	}
	return b, err
}

// modulePath is the module line of root/go.mod.
func modulePath(root string) (string, error) {
	b, err := readBounded(filepath.Join(root, "go.mod"))
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if m, ok := strings.CutPrefix(strings.TrimSpace(l), "module "); ok {
			return strings.Trim(strings.TrimSpace(m), `"`), nil
		}
	}
	return "", fmt.Errorf("%s: no module line", filepath.Join(root, "go.mod"))
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
