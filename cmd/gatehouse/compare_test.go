package main

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/gatehouse-dev/gatehouse/internal/ledger"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/evidence/comparison"
	"github.com/gatehouse-dev/gatehouse/internal/probe/probetest"
	"github.com/gatehouse-dev/gatehouse/internal/targets/docker"
)

// TestMain lets this test binary be the OCI runtime shim of the lab Docker
// daemons the docker tests start (the daemon runs os.Executable()).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == docker.ShimVerb {
		os.Exit(docker.ShimMain(os.Args[2:], os.Stderr))
	}
	// The test binary as the gatehouse command, for tests that need a
	// separate process (kill -9).
	if os.Getenv(asGatehouse) == "1" {
		main()
	}
	code := m.Run()
	probetest.Cleanup() // the probe built for the whole test binary
	ledger.Close()      // as main does: an empty ledger folder goes
	os.Exit(code)
}

func needDocker(t *testing.T) {
	t.Helper()
	needSandbox(t)
	for _, tool := range []string{"dockerd", "containerd", "runc"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s (scripts/docker-lab.sh installs docker.io)", tool)
		}
	}
	if _, err := os.Stat(docker.BusyboxPath); err != nil {
		t.Skip("needs busybox-static for the probe base image")
	}
}

// TestCompareDockerAndGVisor: one compare over the docker and gvisor
// profiles (and bwrap-hardened, the default) gives the expected matrix,
// records it, and leaves no daemon, mount, cgroup or namespace behind.
func TestCompareDockerAndGVisor(t *testing.T) {
	needDocker(t)
	want := map[string]evidence.Verdict{"bwrap-hardened": evidence.Pass, "docker-hardened": evidence.Pass, "docker-leaky": evidence.Fail}
	// The matrix includes gVisor: without runsc this test proves
	// less than it claims, so it skips (make test builds runsc first).
	if _, err := os.Stat(docker.RunscPath); err != nil {
		t.Skipf("runsc not installed (scripts/runsc.sh builds it; make test runs it): %v", err)
	}
	files := []string{"bwrap-hardened.yaml", "docker-hardened.yaml", "docker-leaky.yaml", "gvisor-hardened.yaml"}
	want["gvisor-hardened"] = evidence.Pass
	out := t.TempDir()
	args := []string{"compare", "--out", out, "--probe", probetest.Build(t), "--quiet",
		"--gates", "external-callback,dns-exfiltration,cloud-metadata"}
	for _, f := range files {
		args = append(args, "--profile", profilePath(f))
	}
	// Sealed runs: the matrix must point at evidence verify can check. The
	// leaky profile reaches the host, so compare --key refuses the lot;
	// the runs are compared unsigned and each sealed afterwards.
	key := filepath.Join(t.TempDir(), "cmp")
	t.Setenv("COSIGN_PASSWORD", "compare-test")
	if k := gatehouse(t, context.Background(), "keys", "generate", "--out", key); k.code != exitOK {
		t.Fatal(k.stderr)
	}
	if r := gatehouse(t, context.Background(), append(args, "--key", key+".key")...); r.code != exitUsage || !strings.Contains(r.stderr, "profile docker-leaky puts the host within the guest's reach") {
		t.Fatalf("compare --key with docker-leaky: exit %d, want 2 naming docker-leaky:\n%s", r.code, r.stderr)
	}
	r := gatehouse(t, context.Background(), args...)
	if r.code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	matches, _ := filepath.Glob(filepath.Join(out, "compare-*.json"))
	if len(matches) != 1 {
		t.Fatalf("matrix files: %v", matches)
	}
	for _, ext := range []string{".txt", ".html"} {
		if _, err := os.Stat(strings.TrimSuffix(matches[0], ".json") + ext); err != nil {
			t.Error(err)
		}
	}
	var cmp comparison.Comparison
	b, _ := os.ReadFile(matches[0])
	if err := json.Unmarshal(b, &cmp); err != nil {
		t.Fatal(err)
	}
	if len(cmp.Matrix) != 6 || len(cmp.Profiles) != len(files) {
		t.Fatalf("matrix has %d rows, %d profiles:\n%s", len(cmp.Matrix), len(cmp.Profiles), r.stdout)
	}
	for i, p := range cmp.Profiles {
		if p.ColdStart.N != 6 || p.ColdStart.MedianMS <= 0 || p.RunDir == "" {
			t.Errorf("%s: cold start %+v, run dir %q", p.Profile, p.ColdStart, p.RunDir)
		}
		if sl := gatehouse(t, context.Background(), "seal", "--key", key+".key", "--db", filepath.Join(filepath.Dir(p.RunDir), "gatehouse-index.db"), p.RunDir); sl.code != exitOK {
			t.Errorf("%s: seal: exit %d: %s", p.Profile, sl.code, sl.stderr)
		}
		if v := gatehouse(t, context.Background(), "verify", "--key", key+".pub", p.RunDir); v.code != exitOK || p.Sealed != "" {
			t.Errorf("%s: the matrix row's run does not verify once sealed (exit %d, sealed by compare %q): %s", p.Profile, v.code, p.Sealed, v.stderr)
		}
		for _, row := range cmp.Matrix {
			if got := evidence.Verdict(row.Verdicts[i]); got != want[p.Profile] {
				t.Errorf("%s %s/%s: %s, want %s", p.Profile, row.Gate, row.Path, got, want[p.Profile])
			}
			// What got through is named from the lab's record on every FAIL.
			if c := row.Cells[i]; (c.Verdict == "FAIL") != (len(c.Through) > 0) {
				t.Errorf("%s %s/%s: %s with through %v", p.Profile, row.Gate, row.Path, c.Verdict, c.Through)
			}
		}
		var results []evidence.Result
		b, _ := os.ReadFile(filepath.Join(p.RunDir, "results.json"))
		_ = json.Unmarshal(b, &results)
		for _, res := range results {
			if res.Verdict == evidence.Fail && len(res.Hits) == 0 {
				t.Errorf("%s %s/%s: FAIL without the hit that proves it", p.Profile, res.Gate, res.Path)
			}
			if res.Verdict == evidence.Pass && !res.Control {
				t.Errorf("%s %s/%s: PASS without a positive control", p.Profile, res.Gate, res.Path)
			}
		}
	}
	// The same columns again from the sealed run folders alone: no sandbox
	// runs, the verdicts are the same, the cold start is honestly unknown,
	// and each column names its SHA256SUMS digest.
	out2 := t.TempDir()
	again := []string{"compare", "--out", out2, "--quiet"}
	for _, p := range cmp.Profiles {
		again = append(again, "--run", p.RunDir)
	}
	r2 := gatehouse(t, context.Background(), again...)
	if r2.code != exitOK {
		t.Fatalf("compare --run: exit %d: %s", r2.code, r2.stderr)
	}
	m2, _ := filepath.Glob(filepath.Join(out2, "compare-*.json"))
	var cmp2 comparison.Comparison
	if len(m2) != 1 {
		t.Fatalf("compare --run wrote %v", m2)
	}
	b2, _ := os.ReadFile(m2[0])
	if err := json.Unmarshal(b2, &cmp2); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(matrixVerdicts(cmp2)) != fmt.Sprint(matrixVerdicts(cmp)) {
		t.Errorf("compare --run gives %v, the runs gave %v", matrixVerdicts(cmp2), matrixVerdicts(cmp))
	}
	for _, p := range cmp2.Profiles {
		if p.ColdStart.N != 0 || p.Sealed == "" {
			t.Errorf("%s from its folder: cold start %+v (not measured, must be empty), sealed %q", p.Profile, p.ColdStart, p.Sealed)
		}
	}
	assertNoDaemonLeft(t)
}

func matrixVerdicts(c comparison.Comparison) []string {
	var out []string
	for _, r := range c.Matrix {
		out = append(out, r.Gate+"/"+r.Path+"="+strings.Join(r.Verdicts, ","))
	}
	return out
}

// assertNoDaemonLeft: this process's lab daemon state, mounts and cgroups are gone.
func assertNoDaemonLeft(t *testing.T) {
	t.Helper()
	state := fmt.Sprintf("/run/ghd-%x", os.Getpid())
	if _, err := os.Stat(state); err == nil {
		t.Errorf("daemon state folder %s left behind", state)
	}
	if b, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(b), state) {
		t.Errorf("mounts under %s left behind", state)
	}
	if m, _ := filepath.Glob("/sys/fs/cgroup/*/gatehouse-" + filepath.Base(state)); len(m) > 0 {
		t.Errorf("cgroups left behind: %v", m)
	}
	if b, _ := exec.Command("pgrep", "-f", "dockerd.*"+state).Output(); len(b) > 0 {
		t.Errorf("dockerd left running: %s", b)
	}
}

func TestCompareNeedsTwoProfiles(t *testing.T) {
	r := gatehouse(t, context.Background(), "compare", "--profile", profilePath("docker-hardened.yaml"))
	if r.code != exitUsage || !strings.Contains(r.stderr, "at least two") {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
}

// compare --key loads the key once, before any run, for all its runs: the
// password has left the environment after the first load, and every
// column is still sealed.
func TestCompareLoadsTheKeyOnce(t *testing.T) {
	needSandbox(t)
	key := filepath.Join(t.TempDir(), "cmp")
	t.Setenv("COSIGN_PASSWORD", "compare-once")
	if k := gatehouse(t, context.Background(), "keys", "generate", "--out", key); k.code != exitOK {
		t.Fatal(k.stderr)
	}
	out := t.TempDir()
	r := gatehouse(t, context.Background(), "compare", "--out", out, "--probe", probetest.Build(t), "--quiet", "--gates", "external-callback",
		"--profile", profilePath("bwrap-hardened.yaml"), "--profile", profilePath("bwrap-offline.yaml"), "--key", key+".key", "--output", "json")
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	var doc struct {
		Comparison comparison.Comparison `json:"comparison"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	if len(doc.Comparison.Profiles) != 2 {
		t.Fatalf("columns: %+v", doc.Comparison.Profiles)
	}
	for _, p := range doc.Comparison.Profiles {
		// The run folder comes from the run's return value: an
		// INCONCLUSIVE run (bwrap-offline) is a column with verdicts, not
		// an error.
		if p.Error != "" || p.RunDir == "" || !p.Complete {
			t.Errorf("%s: error %q, run dir %q, complete %v", p.Profile, p.Error, p.RunDir, p.Complete)
		}
		if v := gatehouse(t, context.Background(), "verify", "--key", key+".pub", p.RunDir); v.code != exitOK || p.Sealed == "" {
			t.Errorf("%s: not sealed by compare (exit %d, sealed %q): %s", p.Profile, v.code, p.Sealed, v.stderr)
		}
	}
}
