package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	_ "github.com/gatehouse-dev/gatehouse/internal/mainthread" // keep locked goroutines off the main thread
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// netnsDir is where `ip netns add` bind-mounts named namespaces.
const netnsDir = "/run/netns"

// NetnsPath is the file that names a network namespace created by `ip netns add`.
func NetnsPath(name string) string { return filepath.Join(netnsDir, name) }

// InNetns runs fn on an OS thread that has joined the network namespace at
// path, then returns the thread to the namespace it came from. Sockets that
// fn creates stay in that namespace for their whole life, so they can be used
// from any goroutine afterwards. fn must not start goroutines that expect to
// inherit the namespace (they would not) and must not resolve names.
func InNetns(path string, fn func() error) error {
	errc := make(chan error, 1)
	// A fresh goroutine, so the caller's thread is never touched and a thread
	// we cannot bring back can simply die with it.
	go func() {
		runtime.LockOSThread()
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("open own netns: %w", err)
			return
		}
		defer orig.Close()
		target, err := os.Open(path)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("open netns: %w", err)
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("setns %s: %w", path, err)
			return
		}
		ferr := fn()
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
			// Leave the thread locked: when this goroutine returns, the Go
			// runtime ends the thread instead of reusing it in the wrong ns.
			errc <- fmt.Errorf("setns back from %s: %w", path, err)
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// setSysctl writes a /proc/sys value inside the namespace at path. Entries
// under /proc/sys/net belong to the netns of the thread that opens them.
func setSysctl(path, key, value string) error {
	file := filepath.Join("/proc/sys", strings.ReplaceAll(key, ".", "/"))
	return InNetns(path, func() error {
		if err := os.WriteFile(file, []byte(value), 0o644); err != nil {
			return fmt.Errorf("sysctl %s: %w", key, err)
		}
		return nil
	})
}

// readSysctl reads a /proc/sys value inside the namespace at path.
func readSysctl(path, key string) (string, error) {
	file := filepath.Join("/proc/sys", strings.ReplaceAll(key, ".", "/"))
	var out string
	err := InNetns(path, func() error {
		b, err := os.ReadFile(file)
		out = strings.TrimSpace(string(b))
		return err
	})
	return out, err
}

// ip runs one iproute2 command and returns its standard output.
func ip(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "ip", args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// ipJSON runs an iproute2 command with -j and decodes its output into v.
func ipJSON(ctx context.Context, v any, args ...string) error {
	out, err := ip(ctx, append([]string{"-j"}, args...)...)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(out)) == 0 {
		return nil // iproute2 prints nothing for an empty list
	}
	if err := json.Unmarshal(out, v); err != nil {
		return fmt.Errorf("ip %s: decode: %w", strings.Join(args, " "), err)
	}
	return nil
}

// namespaces lists the named network namespaces.
func namespaces(ctx context.Context) ([]string, error) {
	var list []struct {
		Name string `json:"name"`
	}
	if err := ipJSON(ctx, &list, "netns", "list"); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(list))
	for _, n := range list {
		names = append(names, n.Name)
	}
	return names, nil
}
