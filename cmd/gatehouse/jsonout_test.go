package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// validDoc checks that out is exactly one JSON document valid against
// docs/schemas/<name>.v1.json, and returns it decoded.
func validDoc(t *testing.T, name, out string) map[string]any {
	t.Helper()
	path := filepath.Join("..", "..", "docs", "schemas", name+".v1.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource(path, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	dec := json.NewDecoder(strings.NewReader(out))
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%s output is not JSON: %v\n%s", name, err, out)
	}
	if dec.More() {
		t.Fatalf("%s output holds more than one document:\n%s", name, out)
	}
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(inst); err != nil {
		t.Fatalf("%s output does not match its schema: %v\n%s", name, err, out)
	}
	m, _ := v.(map[string]any)
	return m
}

// The schemas refuse what they must: a document that breaks its contract
// (a refused gate with no reason, an unknown verdict) is invalid, so the
// validation below can fail.
func TestSchemasRefuseBrokenDocuments(t *testing.T) {
	for _, tt := range []struct{ name, doc string }{
		{"gate", `{"schema":"gatehouse.gate/v1","policy":"sha256:` + strings.Repeat("a", 64) + `","policy_file":"p.yaml","decision":"refused","refusals":[]}`},
		{"gate", `{"schema":"gatehouse.gate/v1","policy":"sha256:` + strings.Repeat("a", 64) + `","policy_file":"p.yaml","decision":"allowed","refusals":[]}`},
		{"verify", `{"schema":"gatehouse.verify/v1","bundle":"x","verified":true,"results":[],"not_proven":[]}`},
		{"diff", `{"schema":"gatehouse.diff/v1","a":{},"b":{},"regressed":false,"gates":[{"gate":"g","path":"normal","a":"MAYBE","b":"PASS","a_ms":1,"b_ms":1,"changed":true,"regressed":false}],"changes":[]}`},
		{"history", `{"schema":"gatehouse.history/v1","db":"x","runs":[{"id":"r"}]}`},
		{"run", `{"schema":"gatehouse.run/v1","id":"r","folder":"d","signed":false,"signer":"","index":"i","decision":"pass","exit_code":0,"results":[{"gate":"g","path":"normal","verdict":"FAIL","positive_control":true,"reason":"","detection":"not measured","response":"","duration_ms":1}]}`},
		{"run", `{"schema":"gatehouse.run/v1","id":"r","folder":"d","signed":true,"signer":"","index":"i","decision":"inconclusive","exit_code":3,"results":[]}`},
		{"run", `{"schema":"gatehouse.run/v1","id":"r","folder":"d","signed":false,"signer":"","index":"i","decision":"fail","exit_code":0,"results":[{"gate":"g","path":"normal","verdict":"FAIL","positive_control":true,"reason":"","detection":"not measured","response":"","duration_ms":1}]}`},
	} {
		if err := schemaCheck(t, tt.name, tt.doc); err == nil {
			t.Errorf("%s schema accepted a broken document: %s", tt.name, tt.doc)
		}
	}
}

// schemaCheck is validDoc's validation alone, returning the error.
func schemaCheck(t *testing.T, name, out string) error {
	t.Helper()
	path := filepath.Join("..", "..", "docs", "schemas", name+".v1.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(path, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(path)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(out))
	if err != nil {
		return err
	}
	return sch.Validate(inst)
}

// testJSONOutputs runs each evidence verb with --output json over the real
// signed runs: one document on stdout, valid against its schema, saying
// what the text says, with the same exit code.
func testJSONOutputs(t *testing.T, e *evidenceRuns) {
	ctx := context.Background()
	r := gatehouse(t, ctx, "verify", "--key", e.pub, "--output", "json", e.leaky.dir)
	d := validDoc(t, "verify", r.stdout)
	if r.code != exitOK || d["verified"] != true || d["test_result"] != "FAILED" {
		t.Errorf("verify leaky: exit %d, %v", r.code, d)
	}
	bad := copyRun(t, e.hard.dir)
	if err := os.WriteFile(filepath.Join(bad, "results.json"), []byte("[]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = gatehouse(t, ctx, "verify", "--key", e.pub, "--output", "json", bad)
	d = validDoc(t, "verify", r.stdout)
	if r.code != exitViolation || d["verified"] != false || d["error"] == "" {
		t.Errorf("verify tampered: exit %d, %v", r.code, d)
	}

	r = gatehouse(t, ctx, "gate", "--key", e.pub, "--policy", profilePath("bwrap-leaky.yaml"), "--db", e.db, "--require", "external-callback", "--output", "json")
	d = validDoc(t, "gate", r.stdout)
	if r.code != exitViolation || d["decision"] != "refused" {
		t.Errorf("gate leaky: exit %d, %v", r.code, d)
	}
	r = gatehouse(t, ctx, "gate", "--key", e.pub, "--policy", profilePath("bwrap-hardened.yaml"), "--db", e.db, "--require", "external-callback", "--output", "json")
	d = validDoc(t, "gate", r.stdout)
	if r.code != exitOK || d["decision"] != "allowed" {
		t.Errorf("gate hardened: exit %d, %v\n%s", r.code, d, r.stderr)
	}

	r = gatehouse(t, ctx, "history", "--db", e.db, "--output", "json")
	d = validDoc(t, "history", r.stdout)
	if runs, _ := d["runs"].([]any); r.code != exitOK || len(runs) != 3 {
		t.Errorf("history: exit %d, %v", r.code, d)
	}

	r = gatehouse(t, ctx, "diff", "--key", e.pub, "--output", "json", e.hard.dir+".tar.gz", e.leaky.dir)
	if _, err := os.Stat(e.hard.dir + ".tar.gz"); err != nil {
		r = gatehouse(t, ctx, "diff", "--key", e.pub, "--output", "json", e.hard.dir, e.leaky.dir)
	}
	d = validDoc(t, "diff", r.stdout)
	if r.code != exitViolation || d["regressed"] != true {
		t.Errorf("diff hardened -> leaky: exit %d, %v", r.code, d)
	}

	r = gatehouse(t, ctx, "compare", "--run", e.hard.dir, "--run", e.leaky.dir, "--out", t.TempDir(), "--output", "json")
	d = validDoc(t, "compare", r.stdout)
	if c, _ := d["comparison"].(map[string]any); r.code != exitOK || c == nil || len(c["profiles"].([]any)) != 2 {
		t.Errorf("compare: exit %d, %v\n%s", r.code, d, r.stderr)
	}

	for _, verb := range [][]string{{"verify", "--key", e.pub, e.hard.dir}, {"history", "--db", e.db}, {"gate", "--key", e.pub, "--policy", profilePath("bwrap-hardened.yaml"), "--db", e.db}} {
		r = gatehouse(t, ctx, append(verb, "--output", "yaml")...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "say text or json") {
			t.Errorf("%s --output yaml: exit %d, %q", verb[0], r.code, r.stderr)
		}
	}
}
