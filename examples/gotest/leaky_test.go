package gotest_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence/keys"
)

// event is one line of go test -json (test2json).
type event struct {
	Action string
	Test   string
	Output string
}

// goTest runs TestSandbox of this package in a child go test with env
// added, and returns its exit code, each test's final action and output.
func goTest(t *testing.T, env ...string) (int, map[string]string, map[string]string) {
	t.Helper()
	code, actions, outputs, _ := goTestN(t, 1, env...)
	return code, actions, outputs
}

// goTestN is goTest with -count=n; passes counts each test's passes.
func goTestN(t *testing.T, n int, env ...string) (code int, actions, outputs map[string]string, passes map[string]int) {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("needs the go tool to run a child go test: %v", err)
	}
	cmd := exec.CommandContext(t.Context(), gobin, "test", "-json", "-count="+strconv.Itoa(n), "-run", "^TestSandbox$", ".")
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("go test: %v\n%s", err, stderr.String())
	}
	actions, outputs, passes = map[string]string{}, map[string]string{}, map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Test == "" {
			continue
		}
		switch e.Action {
		case "pass", "fail", "skip":
			actions[e.Test] = e.Action
			if e.Action == "pass" {
				passes[e.Test]++
			}
		case "output":
			outputs[e.Test] += e.Output
		}
	}
	if actions["TestSandbox"] == "skip" {
		t.Skipf("the child skipped TestSandbox:\n%s", outputs["TestSandbox"])
	}
	return code, actions, outputs, passes
}

var subtests = []string{
	"TestSandbox/external-callback/normal", "TestSandbox/external-callback/assume-breach",
	"TestSandbox/dns-exfiltration/normal", "TestSandbox/dns-exfiltration/assume-breach",
	"TestSandbox/cloud-metadata/normal", "TestSandbox/cloud-metadata/assume-breach",
}

// The team's test against the leaky profile: every gate and path is a
// failing subtest quoting the hits that prove it, go test exits 1, and the
// run folder is kept for reading.
func TestLeakyProfileFailsEachGateAndPath(t *testing.T) {
	leaky, _ := filepath.Abs("../../targets/profiles/bwrap-leaky.yaml")
	code, actions, outputs := goTest(t, "GATEHOUSE_EXAMPLE_PROFILE="+leaky)
	if code != 1 {
		t.Errorf("go test exit %d, want 1", code)
	}
	if actions["TestSandbox"] != "fail" {
		t.Errorf("TestSandbox: %q, want fail", actions["TestSandbox"])
	}
	for _, name := range subtests {
		if actions[name] != "fail" {
			t.Errorf("%s: %q, want fail\n%s", name, actions[name], outputs[name])
			continue
		}
		if !strings.Contains(outputs[name], "FAIL (") || !strings.Contains(outputs[name], "hit: ") {
			t.Errorf("%s failed without a verdict and its proving hits:\n%s", name, outputs[name])
		}
	}
	kept := regexp.MustCompile(`run folder kept: (\S+)`).FindStringSubmatch(outputs["TestSandbox"])
	if kept == nil {
		t.Fatalf("the failing run did not say where its folder was kept:\n%s", outputs["TestSandbox"])
	}
	if runs, _ := filepath.Glob(filepath.Join(kept[1], "*", "results.json")); len(runs) != 1 {
		t.Errorf("kept folder %s holds %d run folders with results.json, want 1", kept[1], len(runs))
	}
	_ = os.RemoveAll(kept[1])
}

// A key next to the leaky profile's sandboxes is refused before anything
// runs: the test fails saying why and what to do instead, and no run
// folder is made.
func TestLeakyProfileRefusesAKey(t *testing.T) {
	leaky, _ := filepath.Abs("../../targets/profiles/bwrap-leaky.yaml")
	key := filepath.Join(t.TempDir(), "cosign.key") // never read: the refusal comes first
	code, actions, outputs := goTest(t, "GATEHOUSE_EXAMPLE_PROFILE="+leaky, "GATEHOUSE_EXAMPLE_KEY="+key)
	if code != 1 || actions["TestSandbox"] != "fail" {
		t.Errorf("go test exit %d, TestSandbox %q; want 1 and fail", code, actions["TestSandbox"])
	}
	out := outputs["TestSandbox"]
	for _, want := range []string{"Options.Key: --key refused: profile bwrap-leaky puts the host within the guest's reach", "gatehouse seal --key"} {
		if !strings.Contains(out, want) {
			t.Errorf("TestSandbox does not say %q:\n%s", want, out)
		}
	}
	for _, name := range subtests {
		if _, ran := actions[name]; ran {
			t.Errorf("%s ran next to the key", name)
		}
	}
}

// The hardened profile runs next to its key, and a second Run in the same
// test binary seals with the key the first one decrypted (the password
// has left the environment by then).
func TestHardenedProfileSealsEveryRunWithOneKey(t *testing.T) {
	pw := "example-pw"
	key, _, err := keys.GenerateFiles(filepath.Join(t.TempDir(), "cosign"), []byte(pw))
	if err != nil {
		t.Fatal(err)
	}
	code, _, outputs, passes := goTestN(t, 2, "GATEHOUSE_EXAMPLE_KEY="+key, keys.PasswordEnv+"="+pw)
	if code != 0 || passes["TestSandbox"] != 2 {
		t.Fatalf("go test -count=2: exit %d, TestSandbox passed %d times, want 0 and 2:\n%s", code, passes["TestSandbox"], outputs["TestSandbox"])
	}
}

// The offline profile proves nothing either way: with InconclusiveSkips
// every subtest skips with its reason and go test passes; without, they
// would fail (gatehousetest never turns nothing proven into a pass).
func TestOfflineProfileSkipsWhenAsked(t *testing.T) {
	offline, _ := filepath.Abs("../../targets/profiles/bwrap-offline.yaml")
	code, actions, outputs := goTest(t, "GATEHOUSE_EXAMPLE_PROFILE="+offline, "GATEHOUSE_EXAMPLE_INCONCLUSIVE_SKIPS=1")
	if code != 0 {
		t.Errorf("go test exit %d, want 0", code)
	}
	for _, name := range subtests {
		if actions[name] != "skip" || !strings.Contains(outputs[name], "INCONCLUSIVE (") {
			t.Errorf("%s: %q, want skip with INCONCLUSIVE and its reason\n%s", name, actions[name], outputs[name])
		}
	}
}
