package targettest

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/targets"
)

const variantEnv = "GH_TARGETTEST_VARIANT"

// TestSuiteHelper runs the suite against one memTarget variant. It only does
// something when TestSuiteCatchesBrokenTargets re-runs this binary.
func TestSuiteHelper(t *testing.T) {
	flaw, ok := os.LookupEnv(variantEnv)
	if !ok {
		t.Skip("helper: run by TestSuiteCatchesBrokenTargets in a child process")
	}
	Run(t, func(t *testing.T) (targets.Target, targets.Spec) {
		return memTarget(flaw), targets.Spec{Name: "suite", Path: targets.PathNormal}
	})
}

var failedSubtest = regexp.MustCompile(`--- FAIL: TestSuiteHelper/(\S+)`)

// TestSuiteCatchesBrokenTargets runs the suite against a correct fake (it
// must pass) and against fakes with one flaw each (exactly the matching
// subtest must fail).
func TestSuiteCatchesBrokenTargets(t *testing.T) {
	for _, tc := range []struct{ flaw, fails string }{
		{"", ""},
		{"exit-as-error", "exit_nonzero_is_data"},
		{"drops-env", "env_reaches_command"},
		{"ignores-cancel", "cancel_kills_command"},
		{"copy-in-lost", "copy_in_then_read_back"},
		{"inspect-empty", "inspect_reports_runtime_and_argv"},
		// The suite's cleanup Stop comes after the test's own: a second Stop too.
		{"stop-twice-errors", "stop_twice_is_fine exec_after_stop_errors"},
		{"exec-after-stop", "exec_after_stop_errors"},
		{"sandbox-per-exec", "one_session_is_one_sandbox"},
	} {
		name := tc.flaw
		if name == "" {
			name = "correct"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(os.Args[0], "-test.run=^TestSuiteHelper$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), variantEnv+"="+tc.flaw)
			out, err := cmd.CombinedOutput()
			var failed []string
			for _, m := range failedSubtest.FindAllStringSubmatch(string(out), -1) {
				failed = append(failed, m[1])
			}
			if tc.fails == "" {
				if err != nil || len(failed) > 0 {
					t.Fatalf("the suite failed a correct target (%v): %v\n%s", err, failed, out)
				}
				return
			}
			if err == nil || strings.Join(failed, " ") != tc.fails {
				t.Fatalf("flaw %s: failed subtests %v (err %v), want exactly [%s]\n%s", tc.flaw, failed, err, tc.fails, out)
			}
		})
	}
}
