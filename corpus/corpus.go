// Package corpus holds the adversarial inputs the gates feed to an agent:
// documents carrying injected instructions. The corpus is versioned by the
// digest of its manifest and of every document, recorded in each run.
package corpus

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"sort"
)

//go:embed manifest.json docs/*.md
var files embed.FS

// Entry is one adversarial document.
type Entry struct {
	Name    string `json:"name"`
	File    string `json:"file"`
	Gate    string `json:"gate"`
	Injects string `json:"injects"` // what the injected instruction asks for, in plain words
}

type manifest struct {
	Version string  `json:"version"`
	Entries []Entry `json:"entries"`
}

func load() (manifest, error) {
	var m manifest
	b, err := files.ReadFile("manifest.json")
	if err != nil {
		return m, fmt.Errorf("corpus: %w", err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("corpus: manifest: %w", err)
	}
	return m, nil
}

// Get returns the entry and its bytes.
func Get(name string) (Entry, []byte, error) {
	m, err := load()
	if err != nil {
		return Entry{}, nil, err
	}
	for _, e := range m.Entries {
		if e.Name == name {
			b, err := files.ReadFile(e.File)
			if err != nil {
				return e, nil, fmt.Errorf("corpus: %s: %w", name, err)
			}
			return e, b, nil
		}
	}
	return Entry{}, nil, fmt.Errorf("corpus: no document named %q", name)
}

// Version is "<manifest version>+sha256:<digest of every file>", so any
// change to a document changes the recorded corpus version.
func Version() string {
	m, err := load()
	if err != nil {
		return "unreadable"
	}
	var names []string
	_ = fs.WalkDir(files, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			names = append(names, p)
		}
		return nil
	})
	sort.Strings(names)
	h := sha256.New()
	for _, n := range names {
		b, _ := files.ReadFile(n)
		sum := sha256.Sum256(b)
		fmt.Fprintf(h, "%s  %s\n", hex.EncodeToString(sum[:]), n)
	}
	return m.Version + "+sha256:" + hex.EncodeToString(h.Sum(nil))[:16]
}
