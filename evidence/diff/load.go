// Package diff compares two runs gate by gate: verdicts, timings, the
// effective configuration read back from the sandbox (runtime, capabilities,
// identity, mounts, network rules, command line) and the policy files, so a
// team sees what a runtime or policy change did. Differences are computed
// with go-cmp after removing what changes on every run (namespace inodes,
// session folder names, canaries).
package diff

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/evidence/bundle"
)

// Side is one run as the diff reads it.
type Side struct {
	Dir     string
	Run     evidence.Run
	Results []evidence.Result
	Policy  map[string][]byte // the files under policy/, by name
}

// Load reads a run folder (signed or not; verify it first if it matters).
func Load(dir string) (Side, error) {
	s := Side{Dir: dir, Policy: map[string][]byte{}}
	if err := readJSON(dir, evidence.RunFile, &s.Run); err != nil {
		return s, err
	}
	if err := readJSON(dir, evidence.ResultsFile, &s.Results); err != nil {
		return s, err
	}
	for name := range s.Run.PolicyFiles {
		if filepath.IsAbs(name) || !filepath.IsLocal(name) {
			return s, fmt.Errorf("diff: %s: policy file name %q is not a local path", dir, name)
		}
		b, err := bundle.ReadFile(dir, evidence.PolicyDir+"/"+filepath.ToSlash(name))
		if err != nil {
			return s, fmt.Errorf("diff: %w", err)
		}
		s.Policy[name] = b
	}
	return s, nil
}

// readJSON reads rel of the run folder dir as verify does (the folder
// may come from a hostile runner: no link followed, no FIFO opened,
// bounded).
func readJSON(dir, rel string, v any) error {
	b, err := bundle.ReadFile(dir, rel)
	if err != nil {
		return fmt.Errorf("diff: %s: %w", dir, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("diff: %s: %w", filepath.Join(dir, rel), err)
	}
	return nil
}

// mainPolicyFile is the profile itself among the policy files: the one named
// like run.json's profile_file, else the only .yaml one.
func mainPolicyFile(s Side) string {
	base := filepath.Base(s.Run.ProfileFile)
	if _, ok := s.Policy[base]; ok {
		return base
	}
	var yamls []string
	for n := range s.Policy {
		if ext := filepath.Ext(n); ext == ".yaml" || ext == ".yml" {
			yamls = append(yamls, n)
		}
	}
	sort.Strings(yamls)
	if len(yamls) == 1 {
		return yamls[0]
	}
	return ""
}
