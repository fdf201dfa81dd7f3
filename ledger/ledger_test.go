package ledger_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/ledger"
)

// A child process records a folder and dies without cleaning up; a sweep
// removes the folder. A live process's folder is never touched.
func TestSweepRemovesOnlyWhatDeadProcessesLeft(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the ledger lives under /run/gatehouse")
	}
	dead := filepath.Join(t.TempDir(), "gatehouse-dead")
	live := filepath.Join(t.TempDir(), "gatehouse-live")
	for _, d := range []string{dead, live} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The dead owner: a child that records and exits.
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperRecord$")
	cmd.Env = append(os.Environ(), "GH_LEDGER_RECORD="+dead)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("helper: %v: %s", err, out)
	}
	// The live owner: this process.
	release, err := ledger.Record(ledger.Entry{Kind: ledger.Path, What: live})
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	sw, err := ledger.Sweep(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dead); err == nil {
		t.Errorf("the dead process's folder is still there (swept %+v)", sw)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("the live process's folder was removed: %v", err)
	}
	found := false
	for _, e := range sw.Removed {
		found = found || e.What == dead
	}
	if !found {
		t.Errorf("sweep does not report removing %s: %+v", dead, sw)
	}
}

func TestHelperRecord(t *testing.T) {
	p := os.Getenv("GH_LEDGER_RECORD")
	if p == "" {
		t.Skip("helper for TestSweepRemovesOnlyWhatDeadProcessesLeft")
	}
	if _, err := ledger.Record(ledger.Entry{Kind: ledger.Path, What: p}); err != nil {
		t.Fatal(err)
	}
	// Exits without releasing: a crash.
}

// A damaged or hostile ledger cannot name anything that is not ours.
func TestSweepRefusesWhatIsNotOurs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the ledger lives under /run/gatehouse")
	}
	victim := t.TempDir() // not named gatehouse-*
	dir := filepath.Join(ledger.Root, "1-deadbeef")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.WriteFile(filepath.Join(dir, "lock"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "1.json"), []byte(`{"kind":"path","what":"`+victim+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := ledger.Sweep(ctx)
	if err == nil || !strings.Contains(err.Error(), "not one of ours") {
		t.Fatalf("sweep error %v, want a refusal", err)
	}
	if _, err := os.Stat(victim); err != nil {
		t.Fatalf("the folder that is not ours was removed: %v", err)
	}
}
