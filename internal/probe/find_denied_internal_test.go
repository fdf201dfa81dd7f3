package probe

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A glob's matches the kernel will not let the probe stat (another user
// namespace's /proc/PID/cwd, in a pid namespace shared with the host) are
// covered, not searched, and do not count against the bound; when all of
// them are refused the search is "denied". Run as another user in a
// child, since root is refused nothing: links into a folder it cannot
// enter stand in for the /proc links.
func TestFindGlobLeavesOutWhatTheKernelRefuses(t *testing.T) {
	if glob := os.Getenv("GH_FIND_GLOB"); glob != "" {
		roots, _, cut, err := findRootsOf(glob, nil)
		fmt.Printf("roots=%d cut=%q outcome=%s\n", len(roots), cut, classify(err))
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root, to run the child as another user")
	}
	dir, err := os.MkdirTemp("", "gatehouse-findtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Chmod(dir, 0o755))
	for _, d := range []string{"open/t", "closed/t", "links", "shut"} {
		must(os.MkdirAll(filepath.Join(dir, d), 0o755))
	}
	must(os.Chmod(filepath.Join(dir, "closed"), 0o700))
	for i := range findRoots + 10 {
		must(os.Symlink("../closed/t", filepath.Join(dir, "links", fmt.Sprint("c", i))))
		if i == 0 {
			must(os.Symlink("../closed/t", filepath.Join(dir, "shut", "c")))
		}
	}
	must(os.Symlink("../open/t", filepath.Join(dir, "links", "open")))
	// The test binary, where the other user can run it.
	self, err := os.Open("/proc/self/exe")
	must(err)
	defer self.Close()
	bin := filepath.Join(dir, "probe.test")
	out, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	must(err)
	_, err = io.Copy(out, self)
	must(err)
	must(out.Close())
	for glob, want := range map[string]string{
		filepath.Join(dir, "links", "*"): `roots=1 cut="" outcome=completed`,
		filepath.Join(dir, "shut", "*"):  `roots=0 cut="" outcome=denied`,
	} {
		cmd := exec.Command(bin, "-test.run=^TestFindGlobLeavesOutWhatTheKernelRefuses$")
		cmd.Env = append(os.Environ(), "GH_FIND_GLOB="+glob)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		b, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(b), want) {
			t.Errorf("%s: %v\n%s\nwant %s", glob, err, b, want)
		}
	}
}
