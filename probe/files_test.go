package probe_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gatehouse-dev/gatehouse/probe"
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
		probe.Step{ID: "read", Kind: probe.KindRead, Target: secret},
		probe.Step{ID: "missing", Kind: probe.KindRead, Target: filepath.Join(dir, "nope")},
		probe.Step{ID: "fifo", Kind: probe.KindRead, Target: fifo}, // blocks in open: must time out
		probe.Step{ID: "list", Kind: probe.KindList, Target: small},
		probe.Step{ID: "biglist", Kind: probe.KindList, Target: dir},
		probe.Step{ID: "new", Kind: probe.KindWrite, Target: filepath.Join(dir, "new"), Payload: "canary"},
		probe.Step{ID: "trunc", Kind: probe.KindWrite, Target: out, Payload: "new"},
		probe.Step{ID: "proc", Kind: probe.KindWrite, Target: "/proc/sysrq-trigger", Payload: "c"},
		probe.Step{ID: "sys", Kind: probe.KindWrite, Target: "/sys/kernel/../kernel/x", Payload: "c"},
		probe.Step{ID: "symlink", Kind: probe.KindWrite, Target: filepath.Join(dir, "sneaky"), Payload: "|x"},
		probe.Step{ID: "device", Kind: probe.KindWrite, Target: "/dev/null", Payload: "x"},
		probe.Step{ID: "fifowrite", Kind: probe.KindWrite, Target: fifo, Payload: "x"},
	)
	expect(t, reps["read"], probe.OutcomeCompleted, strings.Repeat("s", probe.MaxExcerptLen))
	if b := reps["read"].Bytes; b != 4096 {
		t.Errorf("read %d bytes, want the 4096 cap", b)
	}
	expect(t, reps["missing"], probe.OutcomeError, "")
	expect(t, reps["fifo"], probe.OutcomeTimeout, "")
	expect(t, reps["list"], probe.OutcomeCompleted, "a\nb")
	if b := reps["biglist"].Bytes; b != 200 {
		t.Errorf("biglist named %d entries, want the 200 cap", b)
	}
	expect(t, reps["new"], probe.OutcomeCompleted, "")
	expect(t, reps["trunc"], probe.OutcomeCompleted, "")
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
		if r.Outcome != probe.OutcomeDenied || !strings.HasPrefix(r.Error, probe.RefusePrefix) {
			t.Errorf("%s: outcome %q error %q, want a refusal", id, r.Outcome, r.Error)
		}
	}
}
