// Package gatehousetest runs Gatehouse's gates from a team's own go test, in
// the style of net/http/httptest: one call, each gate and path a subtest.
//
//	func TestSandbox(t *testing.T) {
//		gatehousetest.Run(t, gatehousetest.Options{Profile: "sandbox/profile.yaml"})
//	}
//
// gives TestSandbox/external-callback/normal, .../assume-breach and so on:
// PASS passes, FAIL fails with the reason and the hits that prove it,
// INCONCLUSIVE fails with its reason (or skips, with InconclusiveSkips). A
// machine that cannot run the gates (not root, no bubblewrap, no user
// namespaces) skips the whole test with the reason and what to install.
//
// The run is the one `gatehouse run` makes (package runner): the same lab,
// suite, final judgement, run folder, seal and index, so the folder it leaves is
// evidence 'gatehouse verify' and 'gatehouse gate' read.
package gatehousetest

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/evidence/index"
	"github.com/gatehouse-dev/gatehouse/internal/doctor"
	"github.com/gatehouse-dev/gatehouse/internal/probe/probetest"
	"github.com/gatehouse-dev/gatehouse/internal/runner"
	"github.com/gatehouse-dev/gatehouse/internal/scratch"
	"github.com/gatehouse-dev/gatehouse/internal/targets/kinds"
	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
)

// Options says what to run. Only Profile is required; every zero value is
// a documented default.
type Options struct {
	// Profile is the sandbox profile YAML (docs/profiles.md).
	Profile string
	// Gates are the gates to run; nil: every gate in Features.
	Gates []string
	// Features is a folder of .feature files to run instead of the
	// built-in gates (a team's own, reusing the step vocabulary of
	// docs/ci.md); "": the built-in gates.
	Features string
	// Key is a cosign private key (its password from COSIGN_PASSWORD):
	// the run folder is sealed (SHA256SUMS, signed attestations), so
	// 'gatehouse verify' and 'gatehouse gate' accept it. "": unsigned.
	// The key is loaded once per test binary, before any sandbox starts,
	// and COSIGN_PASSWORD leaves the test process's environment then. A profile that puts the
	// host within the guest's reach (profile.HostReach), or shows the
	// guest the key file, fails the test instead: run it unsigned and seal
	// the folder in another job ('gatehouse seal', docs/ci.md).
	Key string
	// Out is the folder that receives the run folder, kept whatever the
	// outcome, with the SQLite index beside it. "": a temporary folder,
	// removed when the test passes and kept (its path logged) when it
	// fails or is skipped after the run.
	Out string
	// InconclusiveSkips makes an INCONCLUSIVE gate skip (with its reason)
	// instead of failing.
	InconclusiveSkips bool
	// Probe is the static gatehouse-probe binary; "": $GATEHOUSE_PROBE, or
	// built from this module once per test binary (needs the go tool).
	Probe string
	// Concurrency is how many scenarios run at once; 0: 2.
	Concurrency int
	// Seed orders the scenarios (0: file order); recorded in run.json.
	Seed int64
	// Progress receives the run's progress lines; nil: the test's log.
	Progress io.Writer
}

// Result is the finished run.
type Result struct {
	Dir     string // the run folder (its final name)
	Signed  bool   // sealed with Options.Key
	Run     evidence.Run
	Results []evidence.Result
}

// Run runs the gates against the profile and reports each gate and path as
// a subtest of t. It returns nil when the run could not start (the test is
// skipped or failed by then).
func Run(t *testing.T, opts Options) *Result {
	t.Helper()
	if opts.Profile == "" {
		t.Fatal("gatehousetest: Options.Profile is required")
	}
	prof, err := kinds.Load(opts.Profile)
	if err != nil {
		t.Fatalf("gatehousetest: %v", err)
	}
	if opts.Key != "" {
		// Before anything: no sandbox of this profile may run next to the key.
		if err := runner.CheckSigning(prof, opts.Key); err != nil {
			t.Fatalf("gatehousetest: Options.Key: %v", err)
		}
	}
	if reason := machineReason(t.Context(), prof.Target); reason != "" {
		t.Skipf("gatehousetest: this machine cannot run the %s target: %s", prof.Target, reason)
	}
	ctx := t.Context()
	spec, err := request(ctx, prof, opts)
	if err != nil {
		t.Fatalf("gatehousetest: %v", err)
	}
	var sealer runner.Sealer
	if opts.Key != "" {
		k, err := loadKey(opts.Key)
		if err != nil {
			t.Fatalf("gatehousetest: key %s: %v", opts.Key, err)
		}
		sealer = k
	}
	if spec.ProbePath = opts.Probe; spec.ProbePath == "" {
		spec.ProbePath = probetest.Build(t)
	}
	tgt, err := runner.NewTarget(prof.Target, prof, spec.ProbePath, nil)
	if ce := (*runner.ConfigError)(nil); errors.As(err, &ce) {
		t.Skipf("gatehousetest: %v", ce)
	} else if err != nil {
		t.Fatalf("gatehousetest: %v", err)
	}
	spec.Target = tgt
	if c, ok := tgt.(interface{ Close(context.Context) error }); ok {
		defer func() {
			if err := c.Close(context.WithoutCancel(ctx)); err != nil {
				t.Errorf("gatehousetest: close target: %v", err)
			}
		}()
	}
	spec.Progress = opts.Progress
	if spec.Progress == nil {
		spec.Progress = t.Output()
	}
	if err := runner.Sweep(ctx, spec.Progress); err != nil {
		t.Logf("gatehousetest: warning: %v", err)
	}
	if spec.Out == "" {
		// In the harness's root-only scratch folder, not the shared /tmp
		// a sandbox of the run may see: the evidence is written there
		// while sessions run. Not on the ledger: a failed run's is kept.
		parent, err := scratch.Dir()
		if err != nil {
			t.Fatal(err)
		}
		if spec.Out, err = os.MkdirTemp(parent, "gatehousetest-"); err != nil {
			t.Fatal(err)
		}
		// Kept when anything went wrong, so the evidence can be read.
		t.Cleanup(func() {
			if t.Failed() || t.Skipped() {
				t.Logf("gatehousetest: run folder kept: %s", spec.Out)
				return
			}
			_ = os.RemoveAll(spec.Out)
		})
	}
	out, err := runner.Execute(ctx, *spec)
	if err != nil {
		t.Fatalf("gatehousetest: the run could not finish: %v", err)
	}
	kept, err := runner.Finish(ctx, out.Folder, runner.Keeping{Sealer: sealer, Index: index.DefaultPath(spec.Out)})
	if err != nil {
		t.Fatalf("gatehousetest: %v", err)
	}
	dir := kept.Dir
	t.Logf("gatehousetest: evidence in %s", dir)
	res := &Result{Dir: dir, Signed: sealer != nil, Run: *out.Record, Results: out.Results}
	report(t, spec.Gates, res.Results, opts.InconclusiveSkips, dir)
	return res
}

// loaded are the keys this test binary has decrypted, by absolute path:
// the password leaves the environment at the first load, so a second Run
// with the same key reuses it.
var loaded struct {
	sync.Mutex
	keys map[string]runner.KeySealer
}

func loadKey(path string) (runner.KeySealer, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return runner.KeySealer{}, err
	}
	loaded.Lock()
	defer loaded.Unlock()
	if k, ok := loaded.keys[abs]; ok {
		return k, nil
	}
	k, err := runner.LoadKey(abs)
	if err != nil {
		return runner.KeySealer{}, err
	}
	if loaded.keys == nil {
		loaded.keys = map[string]runner.KeySealer{}
	}
	loaded.keys[abs] = k
	return k, nil
}

// request is the runner's request from opts, checked and made into a
// Spec by runner.NewSpec as `gatehouse run`'s flags are: the profile
// checked, the gates chosen from the features, the plan, the lab's
// addresses. What the evidence records of a go test: the probe, pipeline
// "go test", $GATEHOUSE_COMMIT.
func request(ctx context.Context, prof *profile.Profile, opts Options) (*runner.Spec, error) {
	abs, err := filepath.Abs(opts.Profile)
	if err != nil {
		return nil, err
	}
	req := runner.Request{
		Profile: prof, ProfileFile: abs, Gates: opts.Gates, Out: opts.Out, Concurrency: opts.Concurrency, Seed: opts.Seed,
		Signed: opts.Key != "", SignKey: opts.Key,
		Agent: "probe", Pipeline: "go test", Commit: os.Getenv("GATEHOUSE_COMMIT"),
	}
	if opts.Features != "" {
		req.Features = os.DirFS(opts.Features)
	}
	return runner.NewSpec(ctx, req)
}

// machineReason is why this machine cannot run target, from the doctor's
// checks that target needs; "" when it can.
func machineReason(ctx context.Context, target string) string {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var why []string
	for _, c := range doctor.Needed(ctx, doctor.System(), target) {
		if c.Status != doctor.OK {
			why = append(why, c.Line())
		}
	}
	return strings.Join(why, "; ")
}
