package bundle

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

// Statement is an in-toto Statement v1. We marshal our own structs with
// encoding/json (stable output) rather than protojson, and sign exactly the
// bytes we produce.
type Statement[P any] struct {
	Type          string               `json:"_type"`
	Subject       []ResourceDescriptor `json:"subject"`
	PredicateType string               `json:"predicateType"`
	Predicate     P                    `json:"predicate"`
}

// ResourceDescriptor is the in-toto v1 ResourceDescriptor (the fields we use).
type ResourceDescriptor struct {
	Name   string            `json:"name,omitempty"`
	URI    string            `json:"uri,omitempty"`
	Digest map[string]string `json:"digest,omitempty"`
}

// TestResult is the predicate https://in-toto.io/attestation/test-result/v0.1.
type TestResult struct {
	Result        string               `json:"result"` // PASSED, WARNED or FAILED
	Configuration []ResourceDescriptor `json:"configuration,omitempty"`
	URL           string               `json:"url,omitempty"`
	PassedTests   []string             `json:"passedTests,omitempty"`
	WarnedTests   []string             `json:"warnedTests,omitempty"`
	FailedTests   []string             `json:"failedTests,omitempty"`
}

// RunPredicate is our own predicate (RunPredicateV1): the run description
// and each scenario's verdict per path, which test-result cannot express.
type RunPredicate struct {
	Run        evidence.Run  `json:"run"`
	Scenarios  []ScenarioRef `json:"scenarios"`
	SumsSHA256 string        `json:"sha256sums"`
}

// ScenarioRef is one scenario on one path, without the bulky hits (those are
// in results.json, which is a subject).
type ScenarioRef struct {
	Gate       string           `json:"gate"`
	Scenario   string           `json:"scenario"`
	Path       string           `json:"path"`
	Session    string           `json:"session,omitempty"`
	Verdict    evidence.Verdict `json:"verdict"`
	Reason     string           `json:"reason,omitempty"`
	Control    bool             `json:"positive_control"`
	Attempts   int              `json:"attempts"`
	Hits       int              `json:"hits"`
	DurationMS float64          `json:"duration_ms"`
}

// testResult aggregates per-path results into test-result names
// "<gate>/<scenario>": FAILED if it failed on any path, WARNED if any path
// was inconclusive or skipped, PASSED only if every path passed. No results
// at all is WARNED, never PASSED (fail closed).
func testResult(results []evidence.Result, config []ResourceDescriptor) TestResult {
	worst := map[string]int{} // 0 pass, 1 warn, 2 fail
	for _, r := range results {
		name := r.Gate + "/" + r.Scenario
		rank := 1
		switch r.Verdict {
		case evidence.Pass:
			rank = 0
		case evidence.Fail:
			rank = 2
		}
		if old, ok := worst[name]; !ok || rank > old {
			worst[name] = rank
		}
	}
	tr := TestResult{Result: "PASSED", Configuration: config}
	for name, rank := range worst {
		switch rank {
		case 0:
			tr.PassedTests = append(tr.PassedTests, name)
		case 1:
			tr.WarnedTests = append(tr.WarnedTests, name)
		default:
			tr.FailedTests = append(tr.FailedTests, name)
		}
	}
	sort.Strings(tr.PassedTests)
	sort.Strings(tr.WarnedTests)
	sort.Strings(tr.FailedTests)
	switch {
	case len(tr.FailedTests) > 0:
		tr.Result = "FAILED"
	case len(tr.WarnedTests) > 0 || len(worst) == 0:
		tr.Result = "WARNED"
	}
	return tr
}

func scenarioRefs(results []evidence.Result) []ScenarioRef {
	out := make([]ScenarioRef, 0, len(results))
	for _, r := range results {
		out = append(out, ScenarioRef{Gate: r.Gate, Scenario: r.Scenario, Path: r.Path,
			Session: r.Session, Verdict: r.Verdict, Reason: r.Reason, Control: r.Control,
			Attempts: r.Attempts, Hits: len(r.Hits), DurationMS: r.DurationMS})
	}
	return out
}

// subjects lists every evidence file and SHA256SUMS by digest, plus the
// sandbox image when the run names one.
func subjects(files []Entry, sumsDigest, image string) ([]ResourceDescriptor, error) {
	out := make([]ResourceDescriptor, 0, len(files)+2)
	for _, f := range files {
		out = append(out, ResourceDescriptor{Name: f.Path, Digest: map[string]string{"sha256": f.SHA256}})
	}
	out = append(out, ResourceDescriptor{Name: SumsFile, Digest: map[string]string{"sha256": sumsDigest}})
	if image != "" {
		hex, err := imageHex(image)
		if err != nil {
			return nil, err
		}
		out = append(out, ResourceDescriptor{Name: ImageSubject, Digest: map[string]string{"sha256": hex}})
	}
	return out, nil
}

// ImageSubject is the subject name of the sandbox image digest.
const ImageSubject = "image"

// imageHex accepts "sha256:<hex>" (as Docker prints it) and returns <hex>.
func imageHex(d string) (string, error) {
	h, ok := strings.CutPrefix(d, "sha256:")
	if !ok || !isHex64(h) {
		return "", fmt.Errorf("image digest %q: want sha256:<64 hex>", d)
	}
	return h, nil
}

// policyConfig describes the policy files in the bundle (policy/...) as
// test-result configuration.
func policyConfig(files []Entry) []ResourceDescriptor {
	var out []ResourceDescriptor
	for _, f := range files {
		if strings.HasPrefix(f.Path, evidence.PolicyDir+"/") {
			out = append(out, ResourceDescriptor{Name: f.Path, Digest: map[string]string{"sha256": f.SHA256}})
		}
	}
	return out
}
