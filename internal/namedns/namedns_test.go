package namedns

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
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
	if err := Add(name); err != nil {
		t.Fatal(err)
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
	if err := Add(name); err == nil {
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
	if err := Add(name); err != nil {
		t.Fatal(err)
	}
	ip("netns", "del", name)
	if _, err := os.Lstat(Path(name)); !os.IsNotExist(err) {
		t.Errorf("ip netns del left %s: %v", Path(name), err)
	}
	if err := Add("../x"); err == nil {
		t.Error("a path was accepted as a name")
	}
}
