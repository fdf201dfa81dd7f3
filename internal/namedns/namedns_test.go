package namedns

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/internal/ledger"
)

// A namespace made here is one iproute2 knows: listed by `ip netns list`,
// entered with `ip -n`, with lo up, never made twice, and removed by Delete
// (or by `ip netns del`, as the ledger sweep does).
func TestAddAsIPNetnsAdd(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs iproute2's ip command to check against")
	}
	ip := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("ip", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	name := fmt.Sprintf("ghtest-nd%d", os.Getpid())
	// claimed runs once the name is ours and before the namespace exists:
	// its file is there, not yet a namespace (so a record made then
	// covers a kill at any later moment).
	claims := 0
	if err := Add(name, func() {
		claims++
		if _, err := os.Lstat(Path(name)); err != nil {
			t.Errorf("claimed before the name was ours: %v", err)
		}
		var st unix.Statfs_t
		if err := unix.Statfs(Path(name), &st); err != nil || st.Type == unix.NSFS_MAGIC {
			t.Errorf("claimed after the namespace was bound (statfs: %v, type %#x)", err, st.Type)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if claims != 1 {
		t.Errorf("claimed called %d times, want 1", claims)
	}
	t.Cleanup(func() { _ = Delete(name) })
	if !strings.Contains(ip("netns", "list"), name) {
		t.Errorf("ip netns list does not show %s", name)
	}
	lo := ip("-n", name, "-o", "link", "show", "lo")
	if !strings.Contains(lo, "UP") {
		t.Errorf("lo is not up: %s", lo)
	}
	if links := strings.Count(ip("-n", name, "-o", "link", "show"), "\n"); links != 1 {
		t.Errorf("want lo only, got %d links", links)
	}
	if err := Add(name, func() { t.Error("claimed a name someone else holds") }); err == nil {
		t.Error("a second Add of the same name succeeded")
	}
	if err := Delete(name); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(Path(name)); !os.IsNotExist(err) {
		t.Errorf("%s still there after Delete: %v", Path(name), err)
	}
	if err := Delete(name); err != nil {
		t.Errorf("deleting a namespace that is gone: %v", err)
	}
	// The sweep's way out.
	if err := Add(name, nil); err != nil {
		t.Fatal(err)
	}
	ip("netns", "del", name)
	if _, err := os.Lstat(Path(name)); !os.IsNotExist(err) {
		t.Errorf("ip netns del left %s: %v", Path(name), err)
	}
	if err := Add("../x", nil); err == nil {
		t.Error("a path was accepted as a name")
	}
}

// AddRecorded puts the namespace on this process's ledger (for a sweep after
// a kill) and its release takes it off.
func TestAddRecordedIsOnTheLedger(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces")
	}
	name := fmt.Sprintf("ghtest-nr%d", os.Getpid())
	release, err := AddRecorded(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = Delete(name) })
	if !onLedger(t, name) {
		t.Errorf("%s is not on the ledger", name)
	}
	if err := Delete(name); err != nil {
		t.Fatal(err)
	}
	release()
	if onLedger(t, name) {
		t.Errorf("%s still on the ledger after its release", name)
	}
	if _, err := AddRecorded("../x"); err == nil {
		t.Error("a path was accepted as a name")
	}
}

func onLedger(t *testing.T, name string) bool {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(ledger.Root, strconv.Itoa(os.Getpid())+"-*", "*.json"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var e ledger.Entry
		if json.Unmarshal(b, &e) == nil && e.Kind == ledger.Netns && e.What == name {
			return true
		}
	}
	return false
}
