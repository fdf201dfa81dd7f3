package features

import (
	"bytes"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"

	gherkin "github.com/cucumber/gherkin/go/v42"
)

// Gates parses every *.feature file at the root of fsys and returns the gate
// names they declare (a feature's first tag). A file that does not parse, or
// a feature without a gate tag, is an error naming the file and line, so a
// malformed feature is refused before anything runs.
func Gates(fsys fs.FS) ([]string, error) {
	names, err := fs.Glob(fsys, "*.feature")
	if err != nil {
		return nil, fmt.Errorf("features: %w", err)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("features: no .feature files found")
	}
	seen := map[string]string{}
	var gates []string
	for _, n := range names {
		b, err := fs.ReadFile(fsys, n)
		if err != nil {
			return nil, fmt.Errorf("features: %w", err)
		}
		id := 0
		doc, err := gherkin.ParseGherkinDocument(bytes.NewReader(b), func() string { id++; return strconv.Itoa(id) })
		if err != nil {
			return nil, fmt.Errorf("features: %s: %w", path.Base(n), err)
		}
		if doc.Feature == nil {
			return nil, fmt.Errorf("features: %s: no Feature", n)
		}
		if len(doc.Feature.Tags) == 0 {
			return nil, fmt.Errorf("features: %s:%d: the feature needs a gate tag such as @external-callback", n, doc.Feature.Location.Line)
		}
		g := doc.Feature.Tags[0].Name[1:]
		if prev, dup := seen[g]; dup {
			return nil, fmt.Errorf("features: gate %q is declared by both %s and %s", g, prev, n)
		}
		seen[g] = n
		gates = append(gates, g)
	}
	sort.Strings(gates)
	return gates, nil
}
