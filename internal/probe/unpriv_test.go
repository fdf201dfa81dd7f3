package probe_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/probe/probetest"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// TestBinaryUnprivilegedICMP runs the probe as nobody in a fresh network
// namespace (only its own loopback, gone when the process exits): with
// ping sockets disabled the kernel will not make the socket, so nothing can
// leave (unreachable, like no route: no packet for the accounting to
// count); with them enabled it completes.
func TestBinaryUnprivilegedICMP(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create a network namespace and drop to nobody")
	}
	for _, tool := range []string{"unshare", "setpriv", "ip", "sysctl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	// Build's folder is private to root; nobody needs a readable copy.
	dir, err := os.MkdirTemp("", "gatehouse-probe-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := filepath.Join(dir, "probe")
	data, err := os.ReadFile(probetest.Build(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	plan := wire.Plan{TimeoutMS: 1000, Steps: []wire.Step{{ID: "ping", Kind: wire.KindICMP, Target: "127.0.0.1", Payload: "nobody"}}}
	in, _ := json.Marshal(plan)
	for _, tc := range []struct{ groups, want string }{
		{"1 0", wire.OutcomeUnreachable},
		{"0 2147483647", wire.OutcomeCompleted},
	} {
		script := `ip link set lo up && sysctl -qw net.ipv4.ping_group_range="$1" && exec setpriv --reuid=65534 --regid=65534 --clear-groups "$2" run`
		cmd := exec.CommandContext(t.Context(), "unshare", "--net", "--", "sh", "-c", script, "sh", tc.groups, bin)
		cmd.Stdin = bytes.NewReader(in)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("ping_group_range %q: %v: %s", tc.groups, err, stderr.String())
		}
		reps, problems, err := wire.Decode(bytes.NewReader(out), plan, wire.DefaultLimits())
		if err != nil || len(reps) != 1 {
			t.Fatalf("ping_group_range %q: decode %v %q: %q", tc.groups, err, problems, out)
		}
		expect(t, reps[0], tc.want, "")
	}
}
