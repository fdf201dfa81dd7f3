package exec

import (
	"errors"
	"fmt"
	_ "github.com/gatehouse-dev/gatehouse/internal/mainthread" // keep locked goroutines off the main thread
	"os"
	osexec "os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// runIn runs start (which forks cmd) on a locked OS thread that first
// joined the network namespace at netns (or a new empty one when netns is
// ""): the child inherits the thread's namespaces. The thread is never
// unlocked, so Go retires it when the goroutine ends, namespaces and all.
func runIn(netns string, cmd *osexec.Cmd, start func() error) error {
	return onThread(func() error {
		if err := enterNet(netns); err != nil {
			return err
		}
		return start()
	})
}

func onThread(f func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		done <- f()
	}()
	return <-done
}

func enterNet(netns string) error {
	if netns == "" {
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("new network namespace: %w", err)
		}
		return nil
	}
	fd, err := unix.Open(netns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", netns, err)
	}
	defer unix.Close(fd)
	if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("join %s: %w", netns, err)
	}
	return nil
}

// view is the private mount namespace the wrapper starts in.
type view struct {
	resolv string // host file bound over /etc/resolv.conf, "" for none
	st     *stage
	init   string
	binds  []bind
	// harness are the harness's own folders, mounted last, each on its
	// mount point opened with no link followed.
	harness []Bind
	// keepNetns is the session's own namespace file, left mounted (a
	// profile may name it: firejail --netns={{netns}}).
	keepNetns string
}

// enter makes this thread's mount namespace private and lays the session's
// files over the host's view, as `ip netns exec` does for resolv.conf.
func (v view) enter() error {
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("new mount namespace: %w", err)
	}
	// Nothing mounted here may propagate back to the host.
	if err := unix.Mount("none", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make / private: %w", err)
	}
	detachNetns(v.keepNetns)
	steps := []bind{
		{host: v.st.fs, inside: Inside},
		{host: v.st.fs + "/work", inside: InsideWork, rw: true},
		{host: v.init, inside: InitPath},
	}
	if v.resolv != "" {
		steps = append(steps, bind{host: v.resolv, inside: "/etc/resolv.conf"})
	}
	steps = append(steps, v.binds...)
	for _, s := range steps {
		src := s.host
		if s.open != nil {
			// Opened in this namespace: a bind's source must be one of its
			// mounts.
			f, err := s.open()
			if err != nil {
				return fmt.Errorf("bind %s at %s: %w", s.host, s.inside, err)
			}
			defer f.Close()
			src = "/proc/thread-self/fd/" + strconv.Itoa(int(f.Fd()))
		}
		if err := bindMount(src, s.inside, !s.rw); err != nil {
			return err
		}
	}
	for _, b := range v.harness {
		if err := mountOver(b.Host, b.Inside); err != nil {
			return err
		}
	}
	return nil
}

func bindMount(src, dst string, ro bool) error {
	if err := unix.Mount(src, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s at %s: %w", src, dst, err)
	}
	if ro {
		if err := unix.Mount("", dst, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
			return fmt.Errorf("read-only %s: %w", dst, err)
		}
	}
	return nil
}

// ensureMountPoint makes /gatehouse on the host once: an empty root-owned
// folder that sessions bind their staging folders over, each in its own
// mount namespace. It stays (sessions run at once share it as a mount point).
func ensureMountPoint() error { return ensureDir(Inside) }

// ensureDir makes an empty root-owned folder at dir on the host if there
// is none, as a mount point (/gatehouse, /workspace).
func ensureDir(dir string) error {
	st, err := os.Lstat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("mount point %s: %w", dir, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("mount point %s: %w", dir, err)
	case !st.IsDir():
		return fmt.Errorf("mount point %s exists and is not a folder", dir)
	}
	return nil
}

func sameFile(a, b string) (bool, error) {
	var sa, sb syscall.Stat_t
	if err := syscall.Stat(a, &sa); err != nil {
		return false, err
	}
	if err := syscall.Stat(b, &sb); err != nil {
		return false, err
	}
	return sa.Dev == sb.Dev && sa.Ino == sb.Ino, nil
}

// netnsDirs hold `ip netns` handles: one mount per namespace.
var netnsDirs = []string{"/run/netns/", "/var/run/netns/"}

// detachNetns drops, from this thread's private mount namespace, the
// handles of every network namespace but keep. Other sessions' namespaces
// come and go while a wrapper starts, and deleting one detaches its mount
// here too: bwrap's --ro-bind / / (srt, codex) walks the mount table and
// died with `remount "/newroot/run/netns/gh-...": No such file or
// directory` when a handle vanished under it. The sandbox needs none of
// them.
func detachNetns(keep string) {
	data, err := os.ReadFile("/proc/thread-self/mountinfo")
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		mp := unescapeMount(f[4])
		for _, dir := range netnsDirs {
			if strings.HasPrefix(mp, dir) && mp != keep {
				// Gone already (deleted meanwhile) is as good.
				_ = unix.Unmount(mp, unix.MNT_DETACH)
			}
		}
	}
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
