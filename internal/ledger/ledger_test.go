package ledger_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/hostwrite"
	"github.com/gatehouse-dev/gatehouse/internal/ledger"
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

// A run killed while its sandbox's probe had written on the host leaves
// probe-write entries: the sweep takes the run's payloads out (merged by
// place: two sessions appended to one file), restores a team's file,
// removes a folder the run made, follows no link, and refuses a record
// that is not one.
func TestSweepUndoesProbeWrites(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the ledger lives under /run/gatehouse")
	}
	host := t.TempDir()
	since := time.Now().Add(-time.Second)
	a, b := "Note for the next session: ghst00000000000000aa\n", "Note for the next session: ghst00000000000000bb\n"
	write := func(name, s string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(host, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("gatehouse-state", a+b)
	write("CLAUDE.md", "# the team's\n"+a)
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("key\n"+a), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(host, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(host, "made"), 0o700); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(ledger.Root, "2-probewrite")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.WriteFile(filepath.Join(dir, "lock"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	entries := []ledger.Entry{
		{Kind: ledger.ProbeWrite, Write: &hostwrite.Write{Under: host, Rel: "gatehouse-state", Form: hostwrite.File, Payloads: []string{a}, Since: since, Mapped: true}},
		{Kind: ledger.ProbeWrite, Write: &hostwrite.Write{Under: host, Rel: "gatehouse-state", Form: hostwrite.File, Payloads: []string{b}, Since: since, Mapped: true}},
		{Kind: ledger.ProbeWrite, Write: &hostwrite.Write{Under: host, Rel: "CLAUDE.md", Form: hostwrite.File, Payloads: []string{a}, Since: time.Now().Add(time.Hour), Mapped: true}},
		{Kind: ledger.ProbeWrite, Write: &hostwrite.Write{Under: host, Rel: "link", Form: hostwrite.File, Payloads: []string{a}, Since: since, Mapped: true}},
		{Kind: ledger.ProbeWrite, Write: &hostwrite.Write{Under: host, Rel: "made", Form: hostwrite.Folder, Since: since, Mapped: true}},
	}
	for i, e := range entries {
		e.What = e.Write.Path()
		j, _ := json.Marshal(e)
		if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(i+1)+".json"), j, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sw, err := ledger.Sweep(ctx)
	if err != nil {
		t.Fatalf("sweep: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(host, "gatehouse-state")); !os.IsNotExist(err) {
		t.Errorf("the run's file is still there: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(host, "CLAUDE.md")); string(got) != "# the team's\n" {
		t.Errorf("the team's file holds %q, want its own line only", got)
	}
	if got, _ := os.ReadFile(secret); string(got) != "key\n"+a {
		t.Errorf("a file behind a link was edited: %q", got)
	}
	if _, err := os.Lstat(filepath.Join(host, "made")); !os.IsNotExist(err) {
		t.Errorf("the folder the run made is still there: %v", err)
	}
	n := 0
	for _, e := range sw.Removed {
		if e.Kind == ledger.ProbeWrite {
			n++
		}
	}
	if n != 4 {
		t.Errorf("sweep reports %d probe writes dealt with, want 4 (one per place): %+v", n, sw.Removed)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the dead run's ledger is still there: %v", err)
	}

	// A record that is not one is refused, and nothing is touched.
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "lock"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	write("forged", "x")
	forged := `{"kind":"probe-write","what":"` + filepath.Join(host, "forged") + `","write":{"under":"` + host + `","rel":"forged","form":"file","payloads":["x"],"since":"2000-01-01T00:00:00Z"}}`
	if err := os.WriteFile(filepath.Join(dir, "1.json"), []byte(forged), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.Sweep(ctx); err == nil || !strings.Contains(err.Error(), "not a record") {
		t.Errorf("sweep error %v, want a refusal of the forged record", err)
	}
	if _, err := os.Stat(filepath.Join(host, "forged")); err != nil {
		t.Errorf("the forged record's file was touched: %v", err)
	}
}

// Live names an owner whose lock is held and not one whose lock is free
// (its process died) or missing: `lab down --all` refuses on the first.
func TestLiveNamesOnlyOwnersThatHoldTheirLock(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the ledger lives under /run/gatehouse")
	}
	mk := func(name string, lock bool) string {
		t.Helper()
		dir := filepath.Join(ledger.Root, name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		if lock {
			if err := os.WriteFile(filepath.Join(dir, "lock"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	held := mk("2-0000aaaa", true)
	mk("3-0000bbbb", true)
	mk("4-0000cccc", false)
	// A second open file description conflicts with this one's flock, as
	// another process's would.
	f, err := os.OpenFile(filepath.Join(held, "lock"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	has := func(live []string, name string) bool { return slices.Contains(live, name) }
	live, err := ledger.Live()
	if err != nil {
		t.Fatal(err)
	}
	if !has(live, "2-0000aaaa") || has(live, "3-0000bbbb") || has(live, "4-0000cccc") {
		t.Fatalf("live owners %v: want 2-0000aaaa (lock held) and neither the free lock nor the folder without one", live)
	}
	f.Close()
	if live, err = ledger.Live(); err != nil || has(live, "2-0000aaaa") {
		t.Fatalf("after the lock was dropped: live %v, %v", live, err)
	}
}
