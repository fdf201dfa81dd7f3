package main

import (
	"encoding/json"
	"flag"
	"io"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/evidence/bundle"
	"github.com/gatehouse-dev/gatehouse/evidence/comparison"
	"github.com/gatehouse-dev/gatehouse/evidence/diff"
	"github.com/gatehouse-dev/gatehouse/evidence/gate"
	"github.com/gatehouse-dev/gatehouse/evidence/index"
	htmlreport "github.com/gatehouse-dev/gatehouse/evidence/report"
)

// Pipelines read --output json, not the text: one document per command,
// its shape named by "schema" and described by docs/schemas/<verb>.v1.json
// (the tests validate real outputs against them). Exit codes are the same
// as with text; a usage error (exit 2) prints no document.

// outputFlag registers --output text|json.
func outputFlag(fl *flag.FlagSet) *string {
	return fl.String("output", "text", "text, or json (one document; schema in docs/schemas/)")
}

func checkOutput(verb, v string) error {
	if v != "text" && v != "json" {
		return usagef("%s: --output %q: say text or json", verb, v)
	}
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// resultRow is a verdict as the verbs' documents give it.
type resultRow struct {
	Gate     string           `json:"gate"`
	Path     string           `json:"path"`
	Verdict  evidence.Verdict `json:"verdict"`
	Control  bool             `json:"positive_control"`
	Reason   string           `json:"reason"`
	Detected string           `json:"detection"`
}

type verifyDoc struct {
	Schema     string      `json:"schema"`
	Bundle     string      `json:"bundle"`
	Verified   bool        `json:"verified"`
	Error      string      `json:"error,omitempty"`
	Signer     string      `json:"signer,omitempty"`
	Files      int         `json:"files,omitempty"`
	Run        *runSummary `json:"run,omitempty"`
	TestResult string      `json:"test_result,omitempty"`
	Results    []resultRow `json:"results"`
	NotProven  []string    `json:"not_proven"`
}

type runSummary struct {
	ID           string    `json:"id"`
	Target       string    `json:"target"`
	Profile      string    `json:"profile"`
	ProfileFile  string    `json:"profile_file"`
	PolicyDigest string    `json:"policy_digest"`
	ImageDigest  string    `json:"image_digest"`
	Model        string    `json:"model"`
	Agent        string    `json:"agent"`
	Corpus       string    `json:"corpus_version"`
	Harness      string    `json:"harness_version"`
	Commit       string    `json:"commit"`
	Pipeline     string    `json:"pipeline"`
	Start        time.Time `json:"start"`
	End          time.Time `json:"end"`
	Seed         int64     `json:"seed"`
}

func summarizeRun(r evidence.Run) *runSummary {
	return &runSummary{ID: r.ID, Target: r.Target, Profile: r.Profile, ProfileFile: r.ProfileFile, PolicyDigest: r.PolicyDigest,
		ImageDigest: r.ImageDigest, Model: r.Model, Agent: r.Agent, Corpus: r.Corpus, Harness: r.Harness, Commit: r.Commit,
		Pipeline: r.Pipeline, Start: r.Start, End: r.End, Seed: r.Seed}
}

func rows(rs []evidence.Result) []resultRow {
	out := []resultRow{}
	for _, r := range rs {
		out = append(out, resultRow{Gate: r.Gate, Path: r.Path, Verdict: r.Verdict, Control: r.Control, Reason: evidence.Redact(r.Reason), Detected: evidence.DetectionCell(r)})
	}
	return out
}

func verifiedDoc(path string, v *bundle.Verified, err error) verifyDoc {
	d := verifyDoc{Schema: "gatehouse.verify/v1", Bundle: path, Results: []resultRow{}, NotProven: []string{}}
	if err != nil {
		d.Error = explain(err)
		return d
	}
	d.Verified, d.Signer, d.Files = true, v.Signer, len(v.Files)
	d.Run, d.TestResult = summarizeRun(v.Run), v.TestResult.Result
	d.Results = rows(v.Results)
	d.NotProven = append(d.NotProven, htmlreport.NotProven(v.Run)...)
	return d
}

type gateDoc struct {
	Schema   string   `json:"schema"`
	Policy   string   `json:"policy"`
	File     string   `json:"policy_file"`
	Image    string   `json:"image,omitempty"`
	Decision string   `json:"decision"`      // allowed | refused
	Run      *gateRun `json:"run,omitempty"` // the newest deciding run
	// Runs are every run the decision rests on, newest first, with the
	// gates and paths each decided: several for the shards of a group.
	Runs     []gateShard   `json:"runs,omitempty"`
	Refusals []gateRefusal `json:"refusals"`
}

type gateShard struct {
	gateRun
	Group   string   `json:"group,omitempty"`
	Shard   string   `json:"shard,omitempty"`
	Decides []string `json:"decides"` // "gate/path"
}

type gateRun struct {
	ID     string    `json:"id"`
	Dir    string    `json:"dir"`
	Ended  time.Time `json:"ended"`
	Signer string    `json:"signer"`
}

type gateRefusal struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func decisionDoc(req gate.Request, file string, d gate.Decision, signer string) gateDoc {
	doc := gateDoc{Schema: "gatehouse.gate/v1", Policy: req.PolicyDigest, File: file, Image: req.ImageDigest, Decision: "refused", Refusals: []gateRefusal{}}
	if d.Pass {
		doc.Decision = "allowed"
		doc.Run = &gateRun{ID: d.Run.ID, Dir: d.Run.Dir, Ended: d.Run.Ended, Signer: signer}
		for _, r := range d.Runs {
			sh := gateShard{gateRun: gateRun{ID: r.ID, Dir: r.Dir, Ended: r.Ended, Signer: signer}, Group: r.Group, Shard: r.Shard, Decides: []string{}}
			for _, x := range d.Decided {
				if x.RunID == r.ID {
					sh.Decides = append(sh.Decides, x.Gate+"/"+x.Path)
				}
			}
			doc.Runs = append(doc.Runs, sh)
		}
	}
	for _, r := range d.Refusals {
		doc.Refusals = append(doc.Refusals, gateRefusal{Code: string(r.Code), Message: r.Message})
	}
	return doc
}

type historyDoc struct {
	Schema string       `json:"schema"`
	DB     string       `json:"db"`
	Runs   []historyRun `json:"runs"`
}

type historyRun struct {
	ID           string    `json:"id"`
	Ended        time.Time `json:"ended"`
	Target       string    `json:"target"`
	Profile      string    `json:"profile"`
	PolicyDigest string    `json:"policy_digest"`
	ImageDigest  string    `json:"image_digest"`
	Verdict      string    `json:"verdict"`
	Passed       int       `json:"passed"`
	Failed       int       `json:"failed"`
	Other        int       `json:"other"`
	SignedBy     string    `json:"signed_by"` // key fingerprint or keyless identity; "" = unsigned
	Dir          string    `json:"dir"`
}

func historyRows(db string, runs []index.Run) historyDoc {
	d := historyDoc{Schema: "gatehouse.history/v1", DB: db, Runs: []historyRun{}}
	for _, r := range runs {
		d.Runs = append(d.Runs, historyRun{ID: r.ID, Ended: r.Ended, Target: r.Target, Profile: r.Profile, PolicyDigest: r.PolicyDigest,
			ImageDigest: r.ImageDigest, Verdict: r.Verdict, Passed: r.Passed, Failed: r.Failed, Other: r.Other, SignedBy: r.KeyFingerprint, Dir: r.Dir})
	}
	return d
}

type diffDoc struct {
	Schema    string       `json:"schema"`
	A         diffSide     `json:"a"`
	B         diffSide     `json:"b"`
	Regressed bool         `json:"regressed"`
	Gates     []diffGate   `json:"gates"`
	Changes   []diffChange `json:"changes"`
}

type diffSide struct {
	Bundle       string `json:"bundle"`
	Run          string `json:"run"`
	Profile      string `json:"profile"`
	PolicyDigest string `json:"policy_digest"`
	Verified     bool   `json:"verified"`
}

type diffGate struct {
	Gate      string  `json:"gate"`
	Path      string  `json:"path"`
	A         string  `json:"a"` // "" when absent from A
	B         string  `json:"b"`
	AMS       float64 `json:"a_ms"`
	BMS       float64 `json:"b_ms"`
	Changed   bool    `json:"changed"`
	Regressed bool    `json:"regressed"`
	BReason   string  `json:"b_reason,omitempty"`
}

type diffChange struct {
	Section string `json:"section"`
	Key     string `json:"key"`
	Diff    string `json:"diff"`
}

func diffReport(paths []string, sides [2]diff.Side, verified [2]bool, r diff.Report) diffDoc {
	d := diffDoc{Schema: "gatehouse.diff/v1", Regressed: r.Regressed(), Gates: []diffGate{}, Changes: []diffChange{}}
	for i, s := range sides {
		side := diffSide{Bundle: paths[i], Run: s.Run.ID, Profile: s.Run.Profile, PolicyDigest: s.Run.PolicyDigest, Verified: verified[i]}
		if i == 0 {
			d.A = side
		} else {
			d.B = side
		}
	}
	for _, g := range r.Gates {
		dg := diffGate{Gate: g.Gate, Path: g.Path, A: string(g.A), B: string(g.B), AMS: g.AMS, BMS: g.BMS, Changed: g.Changed(), Regressed: g.Regressed()}
		if g.Changed() {
			dg.BReason = evidence.Redact(g.BReason)
		}
		d.Gates = append(d.Gates, dg)
	}
	for _, c := range r.Changes {
		d.Changes = append(d.Changes, diffChange{Section: c.Section, Key: c.Key, Diff: c.Diff})
	}
	return d
}

type compareDoc struct {
	Schema     string                 `json:"schema"`
	Files      []string               `json:"files"` // the matrix as written: .json, .txt, .html
	Comparison *comparison.Comparison `json:"comparison"`
}
