package bwrap

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/internal/hostsession"
	"github.com/gatehouse-dev/gatehouse/internal/targets/supervisor"
)

// startTimeout bounds how long the sandbox may take to serve its first request.
const startTimeout = 15 * time.Second

// startInstance starts the session's one bubblewrap, with the init as its
// command, and waits until the init answers.
func (s *session) startInstance(ctx context.Context) error {
	sock, err := s.st.socket()
	if err != nil {
		return err
	}
	ln, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: sock, Net: "unixpacket"})
	if err != nil {
		return fmt.Errorf("init socket: %w", err)
	}
	ln.SetUnlinkOnClose(false) // the init keeps serving on its copy
	lf, err := ln.File()
	ln.Close()
	if err != nil {
		return fmt.Errorf("init socket: %w", err)
	}
	defer lf.Close()
	fds, err := openAll(s.fdFiles)
	defer closeAll(fds)
	if err != nil {
		return err
	}
	argv := instanceArgv(s.prefix, 3+len(fds))
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = hostEnv
	// Not the harness's folder, which the run's user may not enter.
	cmd.Dir = "/"
	cmd.ExtraFiles = append(fds, lf)
	cmd.WaitDelay = time.Second
	if !s.user.root() {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(s.user.uid), Gid: uint32(s.user.gid), Groups: []uint32{}}}
	}
	// The thread that starts bubblewrap (its --die-with-parent follows
	// that thread) holds the private mount namespace with the doors, and
	// the session's network namespace, which bubblewrap inherits.
	err = s.Launch(cmd, func() error {
		if err := enterDoors(s.doors); err != nil {
			return err
		}
		return enterNet(s.spec.Network.NetnsPath)
	})
	if err != nil {
		return fmt.Errorf("start bubblewrap: %w", err)
	}
	client := &supervisor.Client{Path: sock, Gone: s.Gone(), WaitDelay: hostsession.WaitDelay}
	return s.Ready(ctx, client, startTimeout)
}

// enterNet joins the network namespace at path on the calling (locked)
// thread, as nsenter --net would.
func enterNet(path string) error {
	if path == "" {
		return errors.New("no session network namespace")
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer unix.Close(fd)
	if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("join %s: %w", path, err)
	}
	return nil
}

func openAll(names []string) ([]*os.File, error) {
	var out []*os.File
	for _, n := range names {
		f, err := os.Open(n)
		if err != nil {
			return out, err
		}
		out = append(out, f)
	}
	return out, nil
}

func closeAll(fs []*os.File) {
	for _, f := range fs {
		f.Close()
	}
}
