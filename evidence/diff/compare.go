package diff

import (
	"fmt"
	"sort"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

// Gate is one scenario on one path in A and/or B. An empty verdict means
// the run does not have it.
type Gate struct {
	Gate, Path, Scenario string
	A, B                 evidence.Verdict
	AMS, BMS             float64 // durations
	AReason, BReason     string
}

// Changed reports whether the verdict differs.
func (g Gate) Changed() bool { return g.A != g.B }

// Regressed reports a PASS in A that is not a PASS in B.
func (g Gate) Regressed() bool { return g.A == evidence.Pass && g.B != evidence.Pass }

// Change is one difference in configuration or policy: Diff is go-cmp's
// report ("-" is A, "+" is B).
type Change struct {
	Section string // "run", "effective <path>", "policy"
	Key     string // e.g. "image_digest", "capabilities", "bwrap-hardened.nft"
	Diff    string
}

// Report is everything that differs between two runs.
type Report struct {
	A, B    Side
	Gates   []Gate // every scenario of either run, changed or not
	Changes []Change
}

// Regressed reports whether any scenario that passed in A does not in B.
func (r Report) Regressed() bool {
	for _, g := range r.Gates {
		if g.Regressed() {
			return true
		}
	}
	return false
}

// wholeStrings makes go-cmp report a changed string as one removed and one
// added line, not as a character-level join: a mount, a rule or a profile
// line is read as a whole.
var wholeStrings = cmp.Comparer(func(a, b string) bool { return a == b })

// Compare computes the report.
func Compare(a, b Side) Report {
	r := Report{A: a, B: b, Gates: gates(a.Results, b.Results)}
	r.Changes = append(r.Changes, runChanges(a.Run, b.Run)...)
	r.Changes = append(r.Changes, effectiveChanges(a.Run, b.Run)...)
	r.Changes = append(r.Changes, policyChanges(a, b)...)
	return r
}

func gates(a, b []evidence.Result) []Gate {
	type key struct{ gate, path, scenario string }
	by := map[key]*Gate{}
	var order []key
	get := func(x evidence.Result) *Gate {
		k := key{x.Gate, x.Path, x.Scenario}
		if by[k] == nil {
			by[k] = &Gate{Gate: x.Gate, Path: x.Path, Scenario: x.Scenario}
			order = append(order, k)
		}
		return by[k]
	}
	for _, x := range a {
		g := get(x)
		g.A, g.AMS, g.AReason = x.Verdict, x.DurationMS, x.Reason
	}
	for _, x := range b {
		g := get(x)
		g.B, g.BMS, g.BReason = x.Verdict, x.DurationMS, x.Reason
	}
	sort.SliceStable(order, func(i, j int) bool {
		if order[i].gate != order[j].gate {
			return order[i].gate < order[j].gate
		}
		if order[i].path != order[j].path {
			return order[i].path > order[j].path // normal first
		}
		return order[i].scenario < order[j].scenario
	})
	out := make([]Gate, 0, len(order))
	for _, k := range order {
		out = append(out, *by[k])
	}
	return out
}

func runChanges(a, b evidence.Run) []Change {
	type summary struct {
		Target, Profile, PolicyDigest, ImageDigest, Model, Agent, Corpus, Harness string
		Gates                                                                     []string
	}
	sa := summary{a.Target, a.Profile, a.PolicyDigest, a.ImageDigest, a.Model, a.Agent, a.Corpus, a.Harness, a.Gates}
	sb := summary{b.Target, b.Profile, b.PolicyDigest, b.ImageDigest, b.Model, b.Agent, b.Corpus, b.Harness, b.Gates}
	if d := cmp.Diff(sa, sb, wholeStrings); d != "" {
		return []Change{{Section: "run", Key: "what was tested", Diff: d}}
	}
	return nil
}

func effectiveChanges(a, b evidence.Run) []Change {
	paths := map[string]bool{}
	for p := range a.Effective {
		paths[p] = true
	}
	for p := range b.Effective {
		paths[p] = true
	}
	names := make([]string, 0, len(paths))
	for p := range paths {
		names = append(names, p)
	}
	sort.Sort(sort.Reverse(sort.StringSlice(names))) // normal before assume-breach
	var out []Change
	for _, p := range names {
		ca, cb := configOf(a.Effective[p]), configOf(b.Effective[p])
		fa, fb := ca.fields(), cb.fields()
		for i := range fa {
			if d := cmp.Diff(fa[i].V, fb[i].V, cmpopts.EquateEmpty(), wholeStrings); d != "" {
				out = append(out, Change{Section: "effective " + p, Key: fa[i].Name, Diff: d})
			}
		}
	}
	return out
}

// policyChanges compares the profiles with each other whatever their file
// names, then every other policy file by name.
func policyChanges(a, b Side) []Change {
	var out []Change
	if a.Run.PolicyDigest != b.Run.PolicyDigest {
		out = append(out, Change{Section: "policy", Key: "digest",
			Diff: fmt.Sprintf("-\t%s\n+\t%s\n", a.Run.PolicyDigest, b.Run.PolicyDigest)})
	}
	ma, mb := mainPolicyFile(a), mainPolicyFile(b)
	if ma != "" && mb != "" {
		if d := cmp.Diff(lines(string(a.Policy[ma])), lines(string(b.Policy[mb])), wholeStrings); d != "" {
			out = append(out, Change{Section: "policy", Key: "profile " + ma + " -> " + mb, Diff: d})
		}
	}
	seen := map[string]bool{}
	for _, m := range []map[string][]byte{a.Policy, b.Policy} {
		for n := range m {
			if n != ma && n != mb {
				seen[n] = true
			}
		}
	}
	sorted := make([]string, 0, len(seen))
	for n := range seen {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	for _, n := range sorted {
		fa, inA := a.Policy[n]
		fb, inB := b.Policy[n]
		key := n
		switch {
		case !inA:
			key += " (only in B)"
		case !inB:
			key += " (only in A)"
		}
		if d := cmp.Diff(lines(string(fa)), lines(string(fb)), cmpopts.EquateEmpty(), wholeStrings); d != "" || inA != inB {
			out = append(out, Change{Section: "policy", Key: key, Diff: d})
		}
	}
	return out
}
