package bwrap

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gatehouse-dev/gatehouse/targets"
)

// RunUIDBase is the first host uid (and gid) Gatehouse gives the sandboxes
// of a run on the normal path: RunUIDBase + the run's pid, so runs at the
// same time never share one. Far above every account (useradd's UID_MAX
// 60000, systemd's dynamic users 61184-65519, /etc/subuid ranges from
// 100000) and below 2^31, which some tools still read as signed.
const RunUIDBase = 2_000_000_000

// hostUser is who bubblewrap runs as on the host, so who the sandbox's
// user is there: bubblewrap maps the profile's uid inside to it.
type hostUser struct {
	uid, gid int
}

func (u hostUser) root() bool { return u.uid == 0 }

// describe is the stable wording of the evidence's "host_user" fact.
func (u hostUser) describe() string {
	if u.root() {
		return "host root (uid 0): bubblewrap runs as root, so the sandbox's user maps to host uid 0"
	}
	return "this run's own unprivileged host uid (" + strconv.Itoa(RunUIDBase) + " + the run's pid): bubblewrap runs as it, so the sandbox's user maps to it"
}

// userFor is who bubblewrap runs as on a path: the run's own unprivileged
// uid on the normal path, as a platform starts bubblewrap as an ordinary
// user; root on the assume-breach path, which is root in the guest by
// definition (and then also root on the host: bubblewrap maps uid 0 to the
// uid that started it).
func userFor(path targets.Path) hostUser {
	if path == targets.PathBreach {
		return hostUser{}
	}
	id := RunUIDBase + os.Getpid()
	return hostUser{uid: id, gid: id}
}

// checkRunUser refuses a run uid that something on the machine already
// has: an account or group of that number, a subordinate id range holding
// it, or a running process (a killed run's leftover with the same pid:
// `gatehouse lab down` removes those).
func checkRunUser(u hostUser) error {
	for _, f := range []string{"/etc/passwd", "/etc/group"} {
		if name, ok := idInFile(f, u.uid); ok {
			return fmt.Errorf("host uid %d, this run's sandbox user, is %q in %s: refusing to run a sandbox as an existing account", u.uid, name, f)
		}
	}
	for _, f := range []string{"/etc/subuid", "/etc/subgid"} {
		if owner, ok := idInRange(f, u.uid); ok {
			return fmt.Errorf("host uid %d, this run's sandbox user, is in %s's subordinate range in %s", u.uid, owner, f)
		}
	}
	if pid := processOf(u.uid); pid != 0 {
		return fmt.Errorf("host uid %d, this run's sandbox user, already runs pid %d (a killed run's leftover? `gatehouse lab down` ends them)", u.uid, pid)
	}
	return nil
}

// idInFile finds a passwd/group line whose third field is id.
func idInFile(file string, id int) (string, bool) {
	f, err := os.Open(file)
	if err != nil {
		return "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), ":")
		if len(fields) >= 3 && fields[2] == strconv.Itoa(id) {
			return fields[0], true
		}
	}
	return "", false
}

// idInRange finds a subuid/subgid line (name:start:count) holding id.
func idInRange(file string, id int) (string, bool) {
	f, err := os.Open(file)
	if err != nil {
		return "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), ":")
		if len(fields) != 3 {
			continue
		}
		start, err1 := strconv.Atoi(fields[1])
		count, err2 := strconv.Atoi(fields[2])
		if err1 == nil && err2 == nil && id >= start && id < start+count {
			return fields[0], true
		}
	}
	return "", false
}

// processOf returns a process whose real uid is uid, or 0.
func processOf(uid int) int {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		var st syscall.Stat_t
		// /proc/PID is owned by the process's effective uid; good enough to
		// find a leftover, which never changes its ids.
		if syscall.Stat(d, &st) == nil && int(st.Uid) == uid {
			pid, _ := strconv.Atoi(filepath.Base(d))
			return pid
		}
	}
	return 0
}

// ErrNoUserNamespaces means an unprivileged user cannot make a user
// namespace here, so bubblewrap cannot run as one: the normal path is
// refused rather than run as root under a plan that says otherwise.
var ErrNoUserNamespaces = errors.New("unprivileged user namespaces are not available")

// checkUserNamespaces runs bubblewrap once as u with a user namespace and
// nothing else, and explains a failure with the kernel's settings.
func checkUserNamespaces(ctx context.Context, bin string, u hostUser) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--unshare-user", "--uid", "1000", "--gid", "1000", "--ro-bind", "/", "/", "--", "/bin/true")
	cmd.Env = hostEnv
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.gid), Groups: []uint32{}}}
	out, err := cmd.CombinedOutput()
	if err == nil {
		return nil
	}
	var settings []string
	for _, f := range []string{"/proc/sys/user/max_user_namespaces", "/proc/sys/kernel/unprivileged_userns_clone", "/proc/sys/kernel/apparmor_restrict_unprivileged_userns"} {
		if b, rerr := os.ReadFile(f); rerr == nil {
			settings = append(settings, strings.TrimPrefix(f, "/proc/sys/")+"="+strings.TrimSpace(string(b)))
		}
	}
	return fmt.Errorf("%w: bubblewrap as host uid %d failed (%v: %s); kernel settings: %s. The normal path runs bubblewrap as an unprivileged user, as platforms do: allow unprivileged user namespaces (e.g. sysctl user.max_user_namespaces=15000, kernel.unprivileged_userns_clone=1)",
		ErrNoUserNamespaces, u.uid, err, strings.TrimSpace(string(out)), strings.Join(settings, ", "))
}
