package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"sort"
	"strconv"
	"strings"
)

// IsInternal says whether a package (relative to the module) is under an
// internal folder, so that no other module can import it.
func IsInternal(pkg string) bool {
	return pkg == "internal" || strings.HasPrefix(pkg, "internal/") || strings.Contains("/"+pkg+"/", "/internal/")
}

// Public is what is wrong with the public surface of the module at root:
// a package outside internal/ that allowed does not list (a new public
// package is a promise to every team that imports it, so it is added on
// purpose or goes under internal/), and an entry of allowed that is no
// longer a public package. Each problem is one sentence saying what to do.
func Public(root string, allowed []string) ([]string, error) {
	ims, err := Imports(root)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range sortedKeys(ims) {
		if !IsInternal(p) && !contains(allowed, p) {
			out = append(out, fmt.Sprintf("package %s is public (outside internal/) but not in the public list: add it to the list deliberately, since teams may then import it, or move it under internal/", p))
		}
	}
	for _, p := range allowed {
		if _, ok := ims[p]; !ok || IsInternal(p) {
			out = append(out, fmt.Sprintf("stale public entry: %s is not a public package of the module; delete it from the public list", p))
		}
	}
	return out, nil
}

// Exposed finds, in each public package of the module at root (outside
// internal/, and not a command: package main cannot be imported), the
// exported declarations of non-test files that mention a type of one of
// the module's internal packages. Another module cannot name such a type,
// so a function taking one cannot be called with a value it made, nor a
// field of that type be set. What counts: the signatures of exported
// functions and of exported methods of exported types, the exported
// fields and methods of exported types, the types of exported variables
// and constants (written, or the type of a composite literal), type
// parameters' constraints. A type the package re-exports by an alias
// (type Spec = run.Spec) can be named, so its mentions count as public.
// Types are matched by name, without type-checking: a variable whose type
// is inferred from a call is not seen.
func Exposed(root string) ([]string, error) {
	mod, err := modulePath(root)
	if err != nil {
		return nil, err
	}
	type file struct {
		name string
		f    *ast.File
	}
	pkgs := map[string][]file{}
	fset := token.NewFileSet()
	err = walkGo(root, false, func(rel string, src []byte) error {
		pkg := path.Dir(rel)
		if IsInternal(pkg) {
			return nil
		}
		f, err := parser.ParseFile(fset, rel, src, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if f.Name.Name != "main" {
			pkgs[pkg] = append(pkgs[pkg], file{rel, f})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, pkg := range sortedKeys(pkgs) {
		files := pkgs[pkg]
		// the internal types this package aliases under an exported name
		aliased := map[string]bool{}
		for _, fl := range files {
			locals := internalImports(root, mod, fl.f)
			for _, d := range fl.f.Decls {
				if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.TYPE {
					for _, s := range g.Specs {
						ts := s.(*ast.TypeSpec)
						if ts.Assign.IsValid() && ts.Name.IsExported() {
							if q, ok := internalName(ts.Type, locals); ok {
								aliased[q] = true
							}
						}
					}
				}
			}
		}
		for _, fl := range files {
			locals := internalImports(root, mod, fl.f)
			report := func(decl string, n ast.Node) {
				if n == nil || len(locals) == 0 {
					return
				}
				ast.Inspect(n, func(n ast.Node) bool {
					if q, ok := internalName(n, locals); ok && !aliased[q] {
						out = append(out, fmt.Sprintf("%s:%d: %s mentions %s, which a team cannot name: keep that type in a public package, or alias it in %s (type X = ...)",
							fl.name, fset.Position(n.Pos()).Line, decl, q, pkg))
						return false
					}
					return true
				})
			}
			for _, d := range fl.f.Decls {
				exportedDecl(d, report)
			}
		}
	}
	return out, nil
}

// exportedDecl calls report with each part of d that another package
// sees: what is exported, named after the declaration it belongs to.
func exportedDecl(d ast.Decl, report func(decl string, n ast.Node)) {
	switch d := d.(type) {
	case *ast.FuncDecl:
		name := d.Name.Name
		if !d.Name.IsExported() {
			return
		}
		if d.Recv != nil && len(d.Recv.List) > 0 {
			recv := baseTypeName(d.Recv.List[0].Type)
			if !ast.IsExported(recv) {
				return
			}
			name = recv + "." + name
		}
		report(name, d.Type)
	case *ast.GenDecl:
		for _, s := range d.Specs {
			switch s := s.(type) {
			case *ast.TypeSpec:
				if !s.Name.IsExported() || s.Assign.IsValid() {
					continue
				}
				if s.TypeParams != nil {
					report(s.Name.Name, s.TypeParams)
				}
				exportedParts(s.Name.Name, s.Type, report)
			case *ast.ValueSpec:
				for i, n := range s.Names {
					if !n.IsExported() {
						continue
					}
					report(n.Name, s.Type)
					if i < len(s.Values) {
						ast.Inspect(s.Values[i], func(v ast.Node) bool {
							if c, ok := v.(*ast.CompositeLit); ok {
								report(n.Name, c.Type)
							}
							return true
						})
					}
				}
			}
		}
	}
}

// exportedParts reports the parts of a type definition another package
// sees: a struct's exported fields (an embedded one is named after its
// type), an interface's exported methods and embedded types, anything
// else whole.
func exportedParts(name string, t ast.Expr, report func(decl string, n ast.Node)) {
	var fields *ast.FieldList
	iface := false
	switch t := t.(type) {
	case *ast.StructType:
		fields = t.Fields
	case *ast.InterfaceType:
		fields, iface = t.Methods, true
	default:
		report(name, t)
		return
	}
	for _, f := range fields.List {
		if len(f.Names) == 0 {
			if iface || ast.IsExported(baseTypeName(f.Type)) {
				report(name+"."+baseTypeName(f.Type), f.Type)
			}
			continue
		}
		for _, n := range f.Names {
			if n.IsExported() {
				report(name+"."+n.Name, f.Type)
			}
		}
	}
}

// baseTypeName is the name of a receiver's or embedded field's type
// (T, *T, pkg.T, T[P]).
func baseTypeName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return baseTypeName(e.X)
	case *ast.IndexExpr:
		return baseTypeName(e.X)
	case *ast.IndexListExpr:
		return baseTypeName(e.X)
	case *ast.SelectorExpr:
		return e.Sel.Name
	case *ast.Ident:
		return e.Name
	}
	return ""
}

// internalImports maps the names f uses for the module's internal
// packages to their paths relative to the module.
func internalImports(root, mod string, f *ast.File) map[string]string {
	out := map[string]string{}
	for _, im := range f.Imports {
		p, err := strconv.Unquote(im.Path.Value)
		if err != nil || !strings.HasPrefix(p, mod+"/") {
			continue
		}
		rel := strings.TrimPrefix(p, mod+"/")
		if !IsInternal(rel) {
			continue
		}
		name := packageName(root, rel)
		if im.Name != nil {
			name = im.Name.Name
		}
		if name != "_" && name != "." {
			out[name] = rel
		}
	}
	return out
}

// packageName is the name in the package clause of rel's first non-test
// file (an import without a name binds that, not the folder's name);
// the folder's name when none is read.
func packageName(root, rel string) string {
	name := path.Base(rel)
	_ = walkGo(root+"/"+rel, false, func(file string, src []byte) error {
		if strings.Contains(file, "/") {
			return nil // a subfolder: another package
		}
		f, err := parser.ParseFile(token.NewFileSet(), file, src, parser.PackageClauseOnly)
		if err == nil {
			name = f.Name.Name
			return errFound
		}
		return nil
	})
	return name
}

var errFound = fmt.Errorf("found")

// internalName is "internal/pkg.T" when n is a selector naming a type of
// an internal package through one of locals.
func internalName(n ast.Node, locals map[string]string) (string, bool) {
	sel, ok := n.(*ast.SelectorExpr)
	if !ok {
		return "", false
	}
	id, ok := sel.X.(*ast.Ident)
	if !ok {
		return "", false
	}
	p, ok := locals[id.Name]
	if !ok {
		return "", false
	}
	return p + "." + sel.Sel.Name, true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
