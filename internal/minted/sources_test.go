package minted_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// randomOK are the files that may draw random values themselves, and why
// those values are no secret a printer must hide. Everything else makes
// its values with minted.New, so that printing redacts them; a new file
// that draws random bytes fails this test until it does the same or says
// here why it need not.
var randomOK = map[string]string{
	"internal/minted/minted.go":                "the one place values are made and registered",
	"internal/auid/auid.go":                    "an audit uid number for the run's processes",
	"internal/ledger/ledger.go":                "the ledger folder's name",
	"internal/runner/runner.go":                "the run id, printed on purpose",
	"internal/lab/lab.go":                      "the lab's namespace id",
	"internal/lab/tls.go":                      "self-signed TLS keys, never printed",
	"internal/lab/labproxy/labproxy.go":        "a self-signed TLS key, never printed",
	"internal/lab/intake/token.go":             "the minter's signing key (never printed) and a token's jti (inside the token, which Mint registers)",
	"internal/lab/intake/contract/client.go":   "markers and identifiers of one contract run, not credentials",
	"internal/probe/icmp.go":                   "an ICMP echo id",
	"internal/untrusted/untrusted.go":          "a temporary file's name, renamed over its target",
	"internal/steps/multi_channels.go":         "a System V shared memory key",
	"internal/steps/persist.go":                "a scenario tag in note file names, printed on purpose",
	"internal/targets/bwrap/isolated.go":       "a network namespace name",
	"internal/targets/bwrap/stage.go":          "a staging folder name",
	"internal/targets/exec/stage.go":           "a staging folder name",
	"internal/targets/docker/netns.go":         "container and namespace names",
	"targets/targettest/targettest.go":         "names of a conformance test's files",
	"evidence/keyless/keylesstest/services.go": "ECDSA signatures of a test's stand-in Fulcio and Rekor",
}

func TestRandomValuesAreMinted(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == "testdata" || n == "vendor" || (strings.HasPrefix(n, ".") && path != root) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if p == "crypto/rand" || p == "math/rand" || p == "math/rand/v2" {
				rel, _ := filepath.Rel(root, path)
				found = append(found, filepath.ToSlash(rel))
				break
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) == 0 {
		t.Fatal("no file imports crypto/rand: the walk looked in the wrong place")
	}
	for _, f := range found {
		if _, ok := randomOK[f]; !ok {
			t.Errorf("%s draws random values itself: make them with minted.New (so printing redacts them) or add it to randomOK with why they are no secret", f)
		}
	}
	for f := range randomOK {
		if !slices.Contains(found, f) {
			t.Errorf("%s is in randomOK but draws no random values: remove it", f)
		}
	}
}
