package features

import (
	"bytes"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	gherkin "github.com/cucumber/gherkin/go/v42"
	messages "github.com/cucumber/messages/go/v34"
)

// Scenario is one scenario (or Scenario Outline, with all its example rows)
// of a gate: the unit a shard takes. Both paths of a gate's outline stay
// together, so one run holds the whole of a gate and a gate's two verdicts
// share a lab and a harness.
type Scenario struct {
	Gate string // the feature's gate tag
	Name string // as written, placeholders and all
	File string // the .feature file, relative to the features' root
	Line int    // the Scenario keyword's line
}

// Location is the scenario as godog selects it: "file.feature:LINE".
func (s Scenario) Location() string { return s.File + ":" + strconv.Itoa(s.Line) }

// Scenarios lists the scenarios of the given gates (all gates when gates
// is empty) sorted by gate, name and line: an order that depends only on
// the feature text, so every machine computes the same one.
func Scenarios(fsys fs.FS, gates []string) ([]Scenario, error) {
	names, err := fs.Glob(fsys, "*.feature")
	if err != nil {
		return nil, fmt.Errorf("features: %w", err)
	}
	want := map[string]bool{}
	for _, g := range gates {
		want[g] = true
	}
	var out []Scenario
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
		if doc.Feature == nil || len(doc.Feature.Tags) == 0 {
			return nil, fmt.Errorf("features: %s: no feature with a gate tag", n)
		}
		g := doc.Feature.Tags[0].Name[1:]
		if len(want) > 0 && !want[g] {
			continue
		}
		for _, sc := range scenariosOf(doc.Feature.Children) {
			out = append(out, Scenario{Gate: g, Name: sc.Name, File: n, Line: int(sc.Location.Line)})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Gate != b.Gate {
			return a.Gate < b.Gate
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.Line < b.Line
	})
	return out, nil
}

func scenariosOf(children []*messages.FeatureChild) []*messages.Scenario {
	var out []*messages.Scenario
	for _, c := range children {
		switch {
		case c.Scenario != nil:
			out = append(out, c.Scenario)
		case c.Rule != nil:
			for _, rc := range c.Rule.Children {
				if rc.Scenario != nil {
					out = append(out, rc.Scenario)
				}
			}
		}
	}
	return out
}

// Shard is the K-th of N parts of a run (1 <= K <= N). The zero value is
// the whole run.
type Shard struct{ K, N int }

// ParseShard reads "K/N".
func ParseShard(s string) (Shard, error) {
	k, n, ok := strings.Cut(s, "/")
	sh := Shard{}
	var err1, err2 error
	sh.K, err1 = strconv.Atoi(k)
	sh.N, err2 = strconv.Atoi(n)
	if !ok || err1 != nil || err2 != nil || sh.N < 1 || sh.K < 1 || sh.K > sh.N {
		return Shard{}, fmt.Errorf("shard %q: want K/N with 1 <= K <= N, e.g. 2/4", s)
	}
	return sh, nil
}

// String is "K/N"; "" for the whole run.
func (s Shard) String() string {
	if s.N == 0 {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.K, s.N)
}

// Select takes every N-th scenario of the sorted list, starting at the
// K-th: the shards of 1..N are disjoint and together are the whole list,
// and their sizes differ by at most one.
func (s Shard) Select(all []Scenario) []Scenario {
	if s.N <= 1 {
		return all
	}
	var out []Scenario
	for i := s.K - 1; i < len(all); i += s.N {
		out = append(out, all[i])
	}
	return out
}
