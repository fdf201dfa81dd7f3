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
	"strings"
	"testing"
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
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("needs the go tool to run a child go test: %v", err)
	}
	cmd := exec.CommandContext(t.Context(), gobin, "test", "-json", "-count=1", "-run", "^TestSandbox$", ".")
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	code := 0
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("go test: %v\n%s", err, stderr.String())
	}
	actions, outputs := map[string]string{}, map[string]string{}
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
		case "output":
			outputs[e.Test] += e.Output
		}
	}
	if actions["TestSandbox"] == "skip" {
		t.Skipf("the child skipped TestSandbox:\n%s", outputs["TestSandbox"])
	}
	return code, actions, outputs
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
