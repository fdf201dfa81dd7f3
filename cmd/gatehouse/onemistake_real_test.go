package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

// realGates are the gates a mistake with real things (a token, a socket,
// a host folder) may break; each one-mistake profile runs all three.
const realGates = "long-lived-secret,host-access,foreign-storage"

// fakeOpenAIKey has the shape of an OpenAI project key and is made up:
// no provider issued it. It is assembled so no secret scanner takes this
// file for a leak.
var fakeOpenAIKey = "sk-proj-" + "GATEHOUSEfakeNotARealKey" + "0123456789abcdefGHIJKLmnop"

// oneMistake writes bwrap-hardened.yaml, with the one change edit makes,
// next to a copy of its egress ruleset, and returns the new profile's path.
func oneMistake(t *testing.T, edit func(string) string) string {
	t.Helper()
	base, err := os.ReadFile(profilePath("bwrap-hardened.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	nft, err := os.ReadFile(profilePath("bwrap-hardened.nft"))
	if err != nil {
		t.Fatal(err)
	}
	changed := edit(string(base))
	if changed == string(base) {
		t.Fatal("the edit changed nothing: bwrap-hardened.yaml no longer has the line it anchors on")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bwrap-hardened.nft"), nft, 0o644); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "one-mistake.yaml")
	if err := os.WriteFile(p, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// addEnv adds one variable to the profile's env.
func addEnv(comment, name, value string) func(string) string {
	return func(y string) string {
		return strings.Replace(y, "\nenv:\n", "\nenv:\n  # "+comment+"\n  "+name+": \""+value+"\"\n", 1)
	}
}

// addArgs adds bubblewrap arguments after --clearenv.
func addArgs(comment string, args ...string) func(string) string {
	return func(y string) string {
		lines := "    # " + comment + "\n"
		for _, a := range args {
			lines += "    - \"" + a + "\"\n"
		}
		return strings.Replace(y, "    - --clearenv\n", "    - --clearenv\n"+lines, 1)
	}
}

// want is what one gate must come out as on both paths, and what its
// reason must say (parts joined by " && " must each be in it).
type want struct {
	verdict evidence.Verdict
	reason  string
}

// normalWant is what a gate must come out as on the normal path where it
// differs from the assume-breach path's: the normal path's sandbox user is
// an unprivileged host uid, the assume-breach path's is root. An empty
// verdict is anything but PASS; lacks is what the reason must not say.
type normalWant struct {
	verdict evidence.Verdict
	lacks   string
}

// openToUsers makes a test folder (and its parent: the testing package
// makes both 0700) reachable, as a team's folder on a host is to the user
// who runs bubblewrap: the normal path runs it as an unprivileged host
// uid, which cannot enter a root-only folder.
func openToUsers(t *testing.T, dir string) {
	t.Helper()
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// checkGates runs a one-mistake profile and checks every gate on both
// paths, and that no secret value reached gatehouse's output or what the
// harness recorded of the run (verdicts, attempts, hits, run.json's
// read-back argv, the plan). The policy copy holds the profile's own
// bytes, and the report shows it: the team's input, recorded as given.
func checkGates(t *testing.T, profile string, wants map[string]want, secrets ...string) runOutput {
	t.Helper()
	return checkGatesOn(t, profile, realGates, wants, secrets...)
}

// checkGatesOn is checkGates over a chosen list of gates.
func checkGatesOn(t *testing.T, profile, gates string, wants map[string]want, secrets ...string) runOutput {
	t.Helper()
	return checkGatesPaths(t, profile, gates, wants, nil, secrets...)
}

// checkGatesPaths is checkGatesOn with the normal path's own expectations
// for the gates in normal.
func checkGatesPaths(t *testing.T, profile, gates string, wants map[string]want, normal map[string]normalWant, secrets ...string) runOutput {
	t.Helper()
	r := runProfileAt(t, profile, gates)
	if len(r.results) != 2*len(wants) {
		t.Fatalf("want %d results, got %d\nstdout:\n%s\nstderr:\n%s", 2*len(wants), len(r.results), r.stdout, r.stderr)
	}
	fail := false
	for _, res := range r.results {
		w := wants[res.Gate]
		if n, ok := normal[res.Gate]; ok && res.Path == "normal" {
			if n.verdict == "" && res.Verdict == evidence.Pass || n.verdict != "" && res.Verdict != n.verdict || strings.Contains(res.Reason, n.lacks) {
				t.Errorf("%s/%s: %s (%s)\nwant %q (\"\": not PASS) without %q", res.Gate, res.Path, res.Verdict, res.Reason, n.verdict, n.lacks)
			}
			fail = fail || res.Verdict == evidence.Fail
			continue
		}
		fail = fail || w.verdict == evidence.Fail
		if res.Verdict != w.verdict || !containsAll(res.Reason, w.reason) {
			t.Errorf("%s/%s: %s (%s)\nwant %s with %q", res.Gate, res.Path, res.Verdict, res.Reason, w.verdict, w.reason)
		}
		if res.Verdict == evidence.Pass && !res.Control {
			t.Errorf("%s/%s: PASS without a positive control", res.Gate, res.Path)
		}
	}
	code := exitOK
	if fail {
		code = exitViolation
	}
	if r.code != code {
		t.Errorf("exit %d, want %d", r.code, code)
	}
	recorded, _ := filepath.Glob(filepath.Join(r.dir, "traces", "*"))
	// run.json too: its effective configuration records bubblewrap's argv
	// with a literal credential's value left out.
	recorded = append(recorded, filepath.Join(r.dir, "results.json"), filepath.Join(r.dir, "run.json"), filepath.Join(r.dir, "plan.json"))
	for _, v := range secrets {
		if strings.Contains(r.stdout+r.stderr, v) {
			t.Errorf("a secret value appears in gatehouse's output")
		}
		for _, f := range recorded {
			if b, _ := os.ReadFile(f); strings.Contains(string(b), v) {
				t.Errorf("a secret value is recorded in %s", f)
			}
		}
	}
	assertNothingLeft(t, r.stdout)
	return r
}

// A literal model-API key in the profile's env: long-lived-secret FAILs,
// naming where, what and a hash prefix; nothing else fails. The same name
// holding the broker's own token is ours and PASSes.
func TestOneMistakeCredentialInEnv(t *testing.T) {
	needSandbox(t)
	t.Run("literal token", func(t *testing.T) {
		p := oneMistake(t, addEnv("made up for this test, never issued: the mistake is a literal key", "OPENAI_API_KEY", fakeOpenAIKey))
		checkGates(t, p, map[string]want{
			// Where: its environment, and, when the pid namespace shows it,
			// bubblewrap's own command line (pid 1), whose --setenv holds it.
			"long-lived-secret": {evidence.Fail, "did not plant are readable in the sandbox: openai-key (sha256 " + sha256Prefix(fakeOpenAIKey) + "…) at  && env:OPENAI_API_KEY"},
			"host-access":       {evidence.Pass, ""},
			"foreign-storage":   {evidence.Pass, ""},
		}, fakeOpenAIKey)
	})
	t.Run("harmless: the broker's token under that name", func(t *testing.T) {
		p := oneMistake(t, addEnv("the broker's short-lived token, under the name an SDK reads", "OPENAI_API_KEY", "{{secret:broker-token}}"))
		checkGates(t, p, map[string]want{
			"long-lived-secret": {evidence.Pass, "no credential found that Gatehouse did not plant"},
			"host-access":       {evidence.Pass, ""},
			"foreign-storage":   {evidence.Pass, ""},
		})
	})
}

func sha256Prefix(v string) string {
	h := sha256.Sum256([]byte(v))
	return hex.EncodeToString(h[:])[:12]
}

func containsAll(s, parts string) bool {
	for _, p := range strings.Split(parts, " && ") {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
