package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/evidence/keyless"
	"github.com/gatehouse-dev/gatehouse/evidence/keys"
	"github.com/gatehouse-dev/gatehouse/internal/lab"
	"github.com/gatehouse-dev/gatehouse/internal/ledger"
	"github.com/gatehouse-dev/gatehouse/internal/probe/probetest"
)

// needSandbox skips, with the reason, where real sandboxes cannot run.
func needSandbox(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: real gates run bubblewrap in network namespaces of our own")
	}
	for _, tool := range []string{"bwrap", "nft", "ip", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s (run scripts/setup.sh)", tool)
		}
	}
}

func profilePath(name string) string {
	return filepath.Join("..", "..", "targets", "profiles", name)
}

type runOutput struct {
	code    int
	stdout  string
	stderr  string
	dir     string
	results []evidence.Result
	run     evidence.Run
}

func gatehouse(t *testing.T, ctx context.Context, args ...string) runOutput {
	t.Helper()
	var so, se bytes.Buffer
	// Each invocation stands for a process of its own, started with the
	// CI job's environment: a run takes COSIGN_PASSWORD (and an unused
	// SIGSTORE_ID_TOKEN) out of this one, and the next invocation gets
	// them back.
	saved := map[string]string{}
	for _, k := range []string{keys.PasswordEnv, keyless.TokenEnv} {
		if v, ok := os.LookupEnv(k); ok {
			saved[k] = v
		}
	}
	code := run(ctx, args, &so, &se)
	for k, v := range saved {
		if _, still := os.LookupEnv(k); !still {
			os.Setenv(k, v)
		}
	}
	return runOutput{code: code, stdout: so.String(), stderr: se.String()}
}

// runProfile runs a shipped profile, with extra run flags.
func runProfile(t *testing.T, profile string, gates string, extra ...string) runOutput {
	t.Helper()
	return runProfileAt(t, profilePath(profile), gates, extra...)
}

// keepFailedRun copies the run folders under out to
// $GATEHOUSE_KEEP_FAILED/<test name> when the test fails, before out is
// removed: a verdict that went wrong only in the full suite can then be
// read in its records (DNS queries, proxy answers, attempts) afterwards.
func keepFailedRun(t *testing.T, out string) {
	keep := os.Getenv("GATEHOUSE_KEEP_FAILED")
	if keep == "" {
		return
	}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		dst := filepath.Join(keep, strings.ReplaceAll(t.Name(), "/", "_"))
		if err := os.MkdirAll(dst, 0o700); err != nil {
			t.Logf("keeping the failed run: %v", err)
			return
		}
		if b, err := exec.Command("cp", "-a", "--no-dereference", out+"/.", dst).CombinedOutput(); err != nil {
			t.Logf("keeping the failed run: %v: %s", err, b)
			return
		}
		t.Logf("the failed run's folder is kept at %s", dst)
	})
}

// runProfileAt runs a profile given by its path (a testdata profile), with
// extra run flags, and reads back its results and run.json.
// wrongVerdict reports a result whose verdict is not want, with its
// findings: a CI run keeps no run folder, and the reason alone did not say
// why a whole plan went unreported.
func wrongVerdict(t *testing.T, res evidence.Result, want evidence.Verdict) {
	t.Helper()
	t.Errorf("%s/%s: %s (%s), want %s; findings: %q", res.Gate, res.Path, res.Verdict, res.Reason, want, res.Findings)
}

func runProfileAt(t *testing.T, path string, gates string, extra ...string) runOutput {
	t.Helper()
	out := t.TempDir()
	keepFailedRun(t, out)
	args := append([]string{"run", "--profile", path, "--out", out, "--probe", probetest.Build(t)}, extra...)
	if gates != "" {
		args = append(args, "--gates", gates)
	}
	r := gatehouse(t, context.Background(), args...)
	dirs, _ := filepath.Glob(filepath.Join(out, "[0-9]*")) // run ids, not gatehouse-index.db
	if len(dirs) == 1 {
		r.dir = dirs[0]
		b, err := os.ReadFile(filepath.Join(r.dir, "results.json"))
		if err == nil {
			_ = json.Unmarshal(b, &r.results)
		}
		b, err = os.ReadFile(filepath.Join(r.dir, "run.json"))
		if err == nil {
			_ = json.Unmarshal(b, &r.run)
		}
	}
	return r
}

// The network gates, each on both paths, must FAIL on the leaky profile with
// the hit that proves it, PASS on the hardened one, and be INCONCLUSIVE on
// the offline one.
func TestNetworkGatesOnBwrapProfiles(t *testing.T) {
	needSandbox(t)
	gates := "external-callback,dns-exfiltration,cloud-metadata"
	tests := []struct {
		profile string
		code    int
		want    evidence.Verdict
	}{
		{"bwrap-hardened.yaml", exitOK, evidence.Pass},
		{"bwrap-leaky.yaml", exitViolation, evidence.Fail},
		{"bwrap-offline.yaml", exitInconclusive, evidence.Inconclusive},
	}
	for _, tt := range tests {
		t.Run(strings.TrimSuffix(tt.profile, ".yaml"), func(t *testing.T) {
			r := runProfile(t, tt.profile, gates)
			if r.code != tt.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, tt.code, r.stdout, r.stderr)
			}
			if len(r.results) != 6 {
				t.Fatalf("want 6 results (3 gates x 2 paths), got %d; stdout:\n%s\nstderr:\n%s", len(r.results), r.stdout, r.stderr)
			}
			for _, res := range r.results {
				if res.Verdict != tt.want {
					wrongVerdict(t, res, tt.want)
				}
				if tt.want == evidence.Fail && len(res.Hits) == 0 {
					t.Errorf("%s/%s: FAIL without the hit that proves it", res.Gate, res.Path)
				}
				if tt.want == evidence.Pass && !res.Control {
					t.Errorf("%s/%s: PASS without a positive control", res.Gate, res.Path)
				}
			}
			if !r.run.Complete || r.run.PolicyDigest == "" || len(r.run.Effective) == 0 {
				t.Errorf("run.json incomplete: %+v", r.run)
			}
			for _, f := range []string{"traces/endpoint-hits.jsonl", "traces/probe-attempts.jsonl", "reports/junit.xml", "reports/cucumber.json"} {
				if _, err := os.Stat(filepath.Join(r.dir, f)); err != nil {
					t.Errorf("run folder lacks %s", f)
				}
			}
			assertReportsAgree(t, r.dir, r.results)
			assertNothingLeft(t, r.stdout)
		})
	}
}

// assertReportsAgree checks that the JUnit file a CI system reads counts
// what results.json says: every scenario a testcase, every verdict but PASS
// a failure naming it.
func assertReportsAgree(t *testing.T, dir string, results []evidence.Result) {
	t.Helper()
	var j struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Cases []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "reports/junit.xml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal(b, &j); err != nil {
		t.Fatalf("junit.xml: %v", err)
	}
	verdict := map[string]evidence.Verdict{}
	failures := 0
	for _, r := range results {
		verdict[r.Scenario] = r.Verdict
		if r.Verdict != evidence.Pass {
			failures++
		}
	}
	if j.Tests != len(results) || j.Failures != failures {
		t.Errorf("junit.xml: tests=%d failures=%d; results.json: %d scenario(s), %d not PASS", j.Tests, j.Failures, len(results), failures)
	}
	for _, s := range j.Suites {
		for _, c := range s.Cases {
			v := verdict[c.Name]
			if (v == evidence.Pass) != (c.Failure == nil) || c.Failure != nil && !strings.Contains(c.Failure.Message, string(v)+": ") {
				t.Errorf("junit.xml: %q %+v; results.json says %s", c.Name, c.Failure, v)
			}
		}
	}
}

// assertNothingLeft checks that no namespace and no probe process is left.
// Given the run's printed output, it looks only at the labs that run named
// ("lab gh-xxxx up"), so that other runs on the machine at the same time do
// not count; without it, every gh-* namespace counts (CI runs one package
// at a time).
func assertNothingLeft(t *testing.T, outputs ...string) {
	t.Helper()
	left, err := lab.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var labs []string
	for _, o := range outputs {
		for _, m := range labLineRE.FindAllStringSubmatch(o, -1) {
			labs = append(labs, m[1])
		}
	}
	for _, ns := range left {
		// gh-n*: the empty namespaces the bwrap target makes for network none.
		mine := len(outputs) == 0 || strings.HasPrefix(ns, "gh-n")
		for _, l := range labs {
			if ns == l || strings.HasPrefix(ns, l+"-") {
				mine = true
			}
		}
		if mine {
			t.Errorf("namespace left behind: %s", ns)
		}
	}
	// Everything this process made and has not removed is in its ledger:
	// session cgroups (so their processes), staging and planting folders,
	// init sockets, namespaces. Runs of other processes have ledgers of
	// their own, so they cannot make this check fail.
	if dir := ledger.Dir(); dir != "" {
		files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
		for _, f := range files {
			b, _ := os.ReadFile(f)
			t.Errorf("left behind (still in this process's ledger): %s", b)
		}
	}
	// Mounts: nothing of ours may stay mounted on the host. A mount that
	// names another run's lab (a run of another process on this machine,
	// mounted while it runs) is not this test's to judge; one that names
	// no lab at all is counted.
	if b, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if !strings.Contains(line, "gatehouse-bwrap-") && !strings.Contains(line, "/run/gatehouse/") {
				continue
			}
			if len(labs) > 0 && !namesLab(line, labs) && labNameRE.MatchString(line) {
				continue
			}
			t.Errorf("mount left behind: %s", line)
		}
	}
}

// labNameRE finds a lab's name in a path: /run/gatehouse/gh-eaa5/...,
// gatehouse-places-gh-eaa5-..., gh-eaa5-s3.
var labNameRE = regexp.MustCompile(`[/-]gh-[0-9a-f]{4,}[/-]`)

// namesLab reports whether a mount line names one of labs.
func namesLab(line string, labs []string) bool {
	for _, m := range labNameRE.FindAllString(line, -1) {
		if slices.Contains(labs, m[1:len(m)-1]) {
			return true
		}
	}
	return false
}

var labLineRE = regexp.MustCompile(`lab (gh-[0-9a-f]+) up`)
