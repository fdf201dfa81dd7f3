package main

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/evidence/keyless"
	"github.com/gatehouse-dev/gatehouse/evidence/keyless/keylesstest"
	"github.com/gatehouse-dev/gatehouse/internal/probe/probetest"
)

const (
	klIdentity = "ci@gatehouse.test"
	klIssuer   = "https://token.actions.githubusercontent.com"
)

// keylessRun makes a real (unsigned) run of the hardened profile, then
// feeds its files through run's own seal path (seal: report, Seal, rename,
// self-verify, index) with a keyless signer whose Fulcio and Rekor are the
// in-process virtual Sigstore. Only the HTTP clients differ from
// 'run --keyless'. It returns the sealed folder, its index and the trusted
// root file.
func keylessRun(t *testing.T) (dir, db, trustedRoot string) {
	t.Helper()
	ctx := context.Background()
	tmp := t.TempDir()
	r := gatehouse(t, ctx, "run", "--profile", profilePath("bwrap-hardened.yaml"), "--gates", "external-callback",
		"--out", filepath.Join(tmp, "unsigned"), "--probe", probetest.Build(t), "--quiet")
	m := regexp.MustCompile(`(?m)^evidence: (.+)$`).FindStringSubmatch(r.stdout)
	if r.code != exitOK || m == nil {
		t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	src := m[1]

	vs, err := keylesstest.New()
	if err != nil {
		t.Fatal(err)
	}
	trustedRoot = filepath.Join(tmp, "trusted_root.json")
	tr, err := vs.WriteTrustedRoot(trustedRoot, false)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := vs.Services(klIdentity, klIssuer)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(keyless.TokenEnv, keylesstest.Token) // the token goes the production way
	svc.Token = keyless.Token("")
	s, err := keyless.NewSigner(svc, tr)
	if err != nil {
		t.Fatal(err)
	}

	out := filepath.Join(tmp, "signed")
	folder, err := evidence.Create(out, filepath.Base(src))
	if err != nil {
		t.Fatal(err)
	}
	err = fs.WalkDir(os.DirFS(src), ".", func(rel string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(filepath.Join(src, rel))
		if err != nil {
			return err
		}
		return folder.WriteFile(rel, b)
	})
	if err != nil {
		t.Fatal(err)
	}
	var note bytes.Buffer
	dir, err = seal(ctx, runFlags{out: out}, keylessSealer{s}, folder, &note)
	if err != nil {
		t.Fatalf("keyless seal: %v", err)
	}
	if !strings.Contains(note.String(), "signed:   keyless "+klIdentity) {
		t.Errorf("seal note %q does not name the certificate identity", note.String())
	}
	return dir, filepath.Join(out, "gatehouse-index.db"), trustedRoot
}

// TestEvidenceKeyless verifies and gates a keylessly sealed real run through
// the CLI, offline, against the virtual Sigstore's trusted root file.
func TestEvidenceKeyless(t *testing.T) {
	needSandbox(t)
	dir, db, trFile := keylessRun(t)
	ctx := context.Background()
	ok := []string{"--certificate-identity", klIdentity, "--certificate-oidc-issuer", klIssuer, "--trusted-root", trFile}
	with := func(flag, val string) []string {
		out := append([]string(nil), ok...)
		for i := range out {
			if out[i] == flag {
				out[i+1] = val
			}
		}
		return out
	}
	tampered := copyRun(t, dir)
	hits := filepath.Join(tampered, "traces", "endpoint-hits.jsonl")
	if b, err := os.ReadFile(hits); err != nil || os.WriteFile(hits, append(b, '\n'), 0o644) != nil {
		t.Fatal(err)
	}
	policy := profilePath("bwrap-hardened.yaml")
	tests := []struct {
		name string
		args []string
		code int
		want []string // in stdout+stderr
	}{
		{"right identity and issuer verify", append([]string{"verify", dir}, ok...), exitOK,
			[]string{"VERIFIED", "signed by keyless " + klIdentity + " (issuer " + klIssuer + ")", "external-callback    normal        PASS"}},
		{"--keyless is accepted with the identity flags", append([]string{"verify", dir, "--keyless"}, ok...), exitOK, []string{"VERIFIED"}},
		{"wrong identity", append([]string{"verify", dir}, with("--certificate-identity", "mallory@gatehouse.test")...), exitViolation,
			[]string{"NOT VERIFIED", `certificate identity is "` + klIdentity + `"`, `want "mallory@gatehouse.test"`}},
		{"wrong issuer", append([]string{"verify", dir}, with("--certificate-oidc-issuer", "https://accounts.google.com")...), exitViolation,
			[]string{"NOT VERIFIED", `(issuer "https://accounts.google.com")`}},
		{"tampered file", append([]string{"verify", tampered}, ok...), exitViolation,
			[]string{"NOT VERIFIED", "digest mismatch: traces/endpoint-hits.jsonl"}},
		{"--key and keyless", append([]string{"verify", dir, "--key", trFile}, ok...), exitUsage, []string{"mutually exclusive"}},
		{"keyless without a trusted root", []string{"verify", dir, "--certificate-identity", klIdentity, "--certificate-oidc-issuer", klIssuer},
			exitUsage, []string{"needs --trusted-root"}},
		{"--keyless alone", []string{"verify", dir, "--keyless"}, exitUsage,
			[]string{"--certificate-identity, --certificate-oidc-issuer, --trusted-root"}},
		{"gate passes on the keyless run", append([]string{"gate", "--policy", policy, "--db", db, "--require", "external-callback"}, ok...), exitOK,
			[]string{"PASS: release allowed by run " + filepath.Base(dir), "signed by keyless " + klIdentity}},
		{"gate refuses another identity", append([]string{"gate", "--policy", policy, "--db", db, "--require", "external-callback"}, with("--certificate-identity", "mallory@gatehouse.test")...),
			exitViolation, []string{"[bad-signature]", `certificate identity is "` + klIdentity + `"`}},
		{"gate: --key and keyless", append([]string{"gate", "--policy", policy, "--db", db, "--key", trFile}, ok...), exitUsage,
			[]string{"gate: --key and keyless"}},
		{"history names the keyless signer", []string{"history", "--db", db}, exitOK, []string{"keyless:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := gatehouse(t, ctx, tt.args...)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, tt.code, r.stdout, r.stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.stdout+r.stderr, w) {
					t.Errorf("output lacks %q:\n%s%s", w, r.stdout, r.stderr)
				}
			}
		})
	}
}

// TestEvidenceKeylessUsage: run's keyless flags are checked before the run
// starts (no root, no lab needed), and nothing is contacted.
func TestEvidenceKeylessUsage(t *testing.T) {
	ctx := context.Background()
	t.Setenv(keyless.TokenEnv, "")
	// compare builds runFlags without registering the signing flags: zero
	// values must mean "unsigned", not "keyless flags without --keyless".
	if s, err := loadSealer("run", "", signFlags{}); s != nil || err != nil {
		t.Errorf("loadSealer of zero flags = %v, %v; want nil, nil", s, err)
	}
	vs, err := keylesstest.New()
	if err != nil {
		t.Fatal(err)
	}
	trFile := filepath.Join(t.TempDir(), "trusted_root.json")
	if _, err := vs.WriteTrustedRoot(trFile, false); err != nil {
		t.Fatal(err)
	}
	tokFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokFile, []byte(keylesstest.Token), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"run", "--profile", profilePath("bwrap-hardened.yaml"), "--out", t.TempDir(), "--probe", probetest.Build(t)}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no trusted root", []string{"--keyless"}, "--keyless needs --trusted-root"},
		{"--key and --keyless", []string{"--keyless", "--trusted-root", trFile, "--key", trFile}, "mutually exclusive"},
		{"no token", []string{"--keyless", "--trusted-root", trFile}, keyless.TokenEnv},
		{"keyless flags without --keyless", []string{"--trusted-root", trFile}, "go with --keyless"},
		{"token file that is not a JWT", []string{"--keyless", "--trusted-root", trFile, "--oidc-token-file", trFile}, "not a JWT"},
		{"missing trusted root file", []string{"--keyless", "--trusted-root", filepath.Join(t.TempDir(), "none.json"),
			"--oidc-token-file", tokFile}, "--trusted-root"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := gatehouse(t, ctx, append(base, tt.args...)...)
			if r.code != exitUsage || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("exit %d (want %d), stderr lacks %q:\n%s", r.code, exitUsage, tt.want, r.stderr)
			}
		})
	}
}
