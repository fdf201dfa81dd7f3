package docker_test

import (
	"context"
	"fmt"
	"github.com/gatehouse-dev/gatehouse/internal/ledger"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/targets/docker"
)

// One lab daemon per test binary (starting one takes seconds). It runs in
// a namespace made here, with only lo up and no route out.
var (
	labNetns  string // e.g. /run/netns/gh-d1a2b3c4
	labDaemon *docker.Daemon
	skipWhy   string
)

func TestMain(m *testing.M) {
	// The lab daemon runs this test binary as its OCI runtime shim.
	if len(os.Args) > 1 && os.Args[1] == docker.ShimVerb {
		os.Exit(docker.ShimMain(os.Args[2:], os.Stderr))
	}
	// A stand-in for a containerd shim left by a dead daemon (stale_test).
	if len(os.Args) > 1 && os.Args[1] == fakeShimVerb {
		time.Sleep(10 * time.Minute)
		os.Exit(0)
	}
	code := runMain(m)
	ledger.Close() // as main does: an empty ledger folder goes
	os.Exit(code)
}

// shim is the argv prefix of the runtime shim a run uses: the small
// gatehouse-oci-runtime binary, the one GATEHOUSE_OCI_RUNTIME names or else
// built here into dir (go build, about a second when cached). Only if that
// build fails, this test binary's own shim verb, said on stderr: it starts
// about 30 ms slower, which the cold start benchmark would count.
func shim(dir string) []string {
	if p := os.Getenv("GATEHOUSE_OCI_RUNTIME"); p != "" {
		return []string{p}
	}
	bin := filepath.Join(dir, docker.ShimBinary)
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, "github.com/gatehouse-dev/gatehouse/cmd/gatehouse-oci-runtime")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "docker test: build %s: %v: %s; the test binary is the shim\n", docker.ShimBinary, err, out)
		exe, err := os.Executable()
		if err != nil {
			panic(err)
		}
		return []string{exe, docker.ShimVerb}
	}
	return []string{bin}
}

func runMain(m *testing.M) int {
	skipWhy = prerequisites()
	if skipWhy != "" {
		return m.Run()
	}
	ctx := context.Background()
	// The daemon's own sealed namespace and /run/ghd-<pid>: the shape
	// ReapStale knows, so that `gatehouse lab down` takes back what a
	// killed test binary left (a namespace and /tmp state of its own were
	// left by a CI run cut off mid-package, and no sweep knew them).
	state := fmt.Sprintf("/run/ghd-%x", os.Getpid())
	startCtx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	var err error
	labDaemon, err = docker.StartDaemonWith(startCtx, docker.DaemonOptions{OwnNetns: true, StateDir: state, Shim: shim(state)})
	if err != nil {
		fmt.Fprintln(os.Stderr, "docker test:", err)
		return 1
	}
	labNetns = labDaemon.Netns()
	code := m.Run()
	if err := labDaemon.Stop(context.WithoutCancel(ctx)); err != nil {
		fmt.Fprintln(os.Stderr, "docker test: stop daemon:", err)
		return 1
	}
	return code
}

// prerequisites names what is missing to run a lab daemon, or "".
func prerequisites() string {
	if os.Geteuid() != 0 {
		return "needs root to create a network namespace and run dockerd"
	}
	for _, tool := range []string{"dockerd", "nsenter", "ip"} {
		if _, err := exec.LookPath(tool); err != nil {
			return tool + " not installed (scripts/docker-lab.sh installs docker.io)"
		}
	}
	if _, err := os.Stat(docker.BusyboxPath); err != nil {
		return "busybox-static not installed: " + err.Error()
	}
	return ""
}

// needLab skips a test that needs the lab daemon, with the reason.
func needLab(t testing.TB) {
	t.Helper()
	if skipWhy != "" {
		t.Skip(skipWhy)
	}
}

// needRunsc skips unless the lab daemon declared the runsc runtime.
func needRunsc(t testing.TB) {
	t.Helper()
	needLab(t)
	if _, err := os.Stat(docker.RunscPath); err != nil {
		t.Skip("runsc not installed (scripts/runsc.sh builds it): " + err.Error())
	}
}
