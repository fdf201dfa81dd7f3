package bundle_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/evidence/keys"
)

var (
	keyOnce         sync.Once
	keyPriv, keyPub []byte
	otherPub        []byte
	testSigner      *keys.Signer
	testVerifier    *keys.Verifier
	keyErr          error
)

// testKeys makes two cosign key pairs once per test binary: decrypting a
// cosign key runs scrypt, which is slow on purpose.
func testKeys(tb testing.TB) (*keys.Signer, *keys.Verifier, []byte) {
	tb.Helper()
	keyOnce.Do(func() {
		keyPriv, keyPub, keyErr = keys.Generate([]byte("test-password"))
		if keyErr != nil {
			return
		}
		_, otherPub, keyErr = keys.Generate([]byte("other"))
		if keyErr != nil {
			return
		}
		testSigner, keyErr = keys.LoadSigner(keyPriv, []byte("test-password"))
		if keyErr != nil {
			return
		}
		testVerifier, keyErr = keys.NewVerifier(keyPub)
	})
	if keyErr != nil {
		tb.Fatal(keyErr)
	}
	return testSigner, testVerifier, otherPub
}

// writeRun writes a complete run folder with n scenarios per gate on both
// paths and hits lines of traces, as the lead's runner lays it out.
func writeRun(tb testing.TB, dir string, gates, hits int, image string) {
	tb.Helper()
	put := func(rel string, b []byte) {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	policy := map[string][]byte{
		"profile.yaml": []byte("name: strict\negress: egress.nft\nseccomp: seccomp.json\n"),
		"egress.nft":   []byte("table inet sandbox { chain out { type filter hook output priority 0; policy drop; } }\n"),
		"seccomp.json": []byte(`{"defaultAction":"SCMP_ACT_ERRNO"}` + "\n"),
	}
	pf := map[string]string{}
	for name, b := range policy {
		put("policy/"+name, b)
		s := sha256.Sum256(b)
		pf[name] = "sha256:" + hex.EncodeToString(s[:])
	}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var results []evidence.Result
	var gateNames []string
	var hitLines, attLines strings.Builder
	for g := 0; g < gates; g++ {
		gate := fmt.Sprintf("gate-%02d", g)
		gateNames = append(gateNames, gate)
		for _, path := range []string{"normal", "assume-breach"} {
			results = append(results, evidence.Result{Gate: gate, Scenario: "blocks egress", Path: path,
				Session: gate + "-" + path, Verdict: evidence.Pass, Reason: "no forbidden hits",
				Control: true, Attempts: 3, Start: t0, DurationMS: 12.5})
		}
	}
	for i := 0; i < hits; i++ {
		h, _ := json.Marshal(evidence.Hit{Time: t0, Endpoint: "callback", Proto: "http",
			Src: "10.0.0.2", Dst: "203.0.113.10:80", Session: "s", Summary: fmt.Sprintf("GET /%d", i)})
		hitLines.Write(append(h, '\n'))
		a, _ := json.Marshal(evidence.Attempt{Session: "s", Scenario: "blocks egress", ID: fmt.Sprint(i),
			Kind: "http", Target: "203.0.113.10:80", Outcome: "timeout", Start: t0, DurationMS: 1})
		attLines.Write(append(a, '\n'))
	}
	run := evidence.Run{ID: filepath.Base(dir), Harness: "test", Target: "process", Profile: "strict",
		ProfileFile: "profile.yaml", PolicyDigest: "sha256:" + strings.Repeat("ab", 32), PolicyFiles: pf,
		ImageDigest: image, Corpus: "v1", Gates: gateNames, Seed: 7,
		Effective: map[string]any{"normal": map[string]any{"runtime": "bwrap"}},
		Start:     t0, End: t0.Add(time.Minute), Complete: true}
	rb, _ := json.MarshalIndent(run, "", "  ")
	put("run.json", rb)
	resb, _ := json.MarshalIndent(results, "", "  ")
	put("results.json", resb)
	put("traces/endpoint-hits.jsonl", []byte(hitLines.String()))
	put("traces/probe-attempts.jsonl", []byte(attLines.String()))
	put("reports/junit.xml", []byte("<testsuites></testsuites>\n"))
	put("reports/cucumber.json", []byte("[]\n"))
}
