package probe_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

func TestFiles(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte(strings.Repeat("s", 5000)), 0o600); err != nil {
		t.Fatal(err)
	}
	for i := range 250 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d", i)), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	small := filepath.Join(dir, "small")
	if err := os.Mkdir(small, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"b", "a"} {
		if err := os.WriteFile(filepath.Join(small, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/proc/sys/kernel/core_pattern", filepath.Join(dir, "sneaky")); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// The read step blocks in open(2) until a writer comes; be that writer
	// so the abandoned goroutine ends with the test.
	t.Cleanup(func() {
		if fd, err := syscall.Open(fifo, syscall.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			syscall.Close(fd)
		}
	})
	out := filepath.Join(dir, "out")
	if err := os.WriteFile(out, []byte("old content that is longer"), 0o644); err != nil {
		t.Fatal(err)
	}

	reps := runPlan(t, 500,
		wire.Step{ID: "read", Kind: wire.KindRead, Target: secret},
		wire.Step{ID: "missing", Kind: wire.KindRead, Target: filepath.Join(dir, "nope")},
		wire.Step{ID: "fifo", Kind: wire.KindRead, Target: fifo}, // blocks in open: must time out
		wire.Step{ID: "list", Kind: wire.KindList, Target: small},
		wire.Step{ID: "biglist", Kind: wire.KindList, Target: dir},
		wire.Step{ID: "new", Kind: wire.KindWrite, Target: filepath.Join(dir, "new"), Payload: "canary"},
		wire.Step{ID: "trunc", Kind: wire.KindWrite, Target: out, Payload: "new"},
		wire.Step{ID: "proc", Kind: wire.KindWrite, Target: "/proc/sysrq-trigger", Payload: "c"},
		wire.Step{ID: "sys", Kind: wire.KindWrite, Target: "/sys/kernel/../kernel/x", Payload: "c"},
		wire.Step{ID: "symlink", Kind: wire.KindWrite, Target: filepath.Join(dir, "sneaky"), Payload: "|x"},
		wire.Step{ID: "device", Kind: wire.KindWrite, Target: "/dev/null", Payload: "x"},
		wire.Step{ID: "fifowrite", Kind: wire.KindWrite, Target: fifo, Payload: "x"},
	)
	expect(t, reps["read"], wire.OutcomeCompleted, strings.Repeat("s", wire.MaxExcerptLen))
	if b := reps["read"].Bytes; b != 4096 {
		t.Errorf("read %d bytes, want the 4096 cap", b)
	}
	expect(t, reps["missing"], wire.OutcomeError, "")
	expect(t, reps["fifo"], wire.OutcomeTimeout, "")
	expect(t, reps["list"], wire.OutcomeCompleted, "a\nb")
	if b := reps["biglist"].Bytes; b != 200 {
		t.Errorf("biglist named %d entries, want the 200 cap", b)
	}
	expect(t, reps["new"], wire.OutcomeCompleted, "")
	expect(t, reps["trunc"], wire.OutcomeCompleted, "")
	for path, want := range map[string]string{filepath.Join(dir, "new"): "canary", out: "new"} {
		got, err := os.ReadFile(path)
		if err != nil || string(got) != want {
			t.Errorf("%s holds %q (%v), want %q", path, got, err, want)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "new")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("new file mode %v (%v), want 0600", fi.Mode(), err)
	}
	for _, id := range []string{"proc", "sys", "symlink", "device", "fifowrite"} {
		r := reps[id]
		if r.Outcome != wire.OutcomeDenied || !strings.HasPrefix(r.Error, wire.RefusePrefix) {
			t.Errorf("%s: outcome %q error %q, want a refusal", id, r.Outcome, r.Error)
		}
	}
}
