package keys

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// TakePassword reads the key password from COSIGN_PASSWORD once and takes
// it out of the process: out of the environment every child inherits
// (os.Unsetenv), and out of the process's initial environment block, the
// memory /proc/PID/environ shows, which Unsetenv never touches. A process
// that starts sandboxes must not keep it: a guest that reaches the host
// reads both. The caller clears the returned bytes when done with them.
func TakePassword() ([]byte, error) {
	p, ok := os.LookupEnv(PasswordEnv)
	if !ok {
		return nil, ErrNoPassword
	}
	pw := []byte(p)
	if err := forget(PasswordEnv); err != nil {
		clear(pw)
		return nil, err
	}
	return pw, nil
}

// DropPassword takes COSIGN_PASSWORD out of the process without reading
// it, as TakePassword does: for a process that starts sandboxes and signs
// nothing, where a password left in the environment is only a thing to
// steal.
func DropPassword() error { return Forget(PasswordEnv) }

// Forget takes the variable name out of the process, as TakePassword does
// the password: out of the environment and out of /proc/PID/environ. A
// name that is not set is left alone.
func Forget(name string) error {
	if _, ok := os.LookupEnv(name); !ok {
		return nil
	}
	return forget(name)
}

// forget removes name from the environment and overwrites its entries in
// the initial environment block with zero bytes.
func forget(name string) error {
	if err := os.Unsetenv(name); err != nil {
		return fmt.Errorf("keys: unset %s: %w", name, err)
	}
	if err := scrubInitialEnv(name); err != nil {
		return fmt.Errorf("keys: remove %s from /proc/self/environ: %w", name, err)
	}
	return nil
}

// maxEnvBlock bounds the initial environment block read back (the kernel
// allows a quarter of the stack limit; 8 MiB stacks give 2 MiB).
const maxEnvBlock = 64 << 20

// scrubInitialEnv zeroes every "name=..." entry of the block between the
// env_start and env_end addresses /proc/self/stat gives, through
// /proc/self/mem (the Go runtime copied the environment out of that block
// at start, so nothing reads it after us).
func scrubInitialEnv(name string) error {
	start, end, err := envBounds()
	if err != nil {
		return err
	}
	if end <= start || end-start > maxEnvBlock {
		return fmt.Errorf("environment block of %d bytes", end-start)
	}
	mem, err := os.OpenFile("/proc/self/mem", os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer mem.Close()
	block := make([]byte, end-start)
	if _, err := mem.ReadAt(block, int64(start)); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	prefix := []byte(name + "=")
	for off := 0; off < len(block); {
		n := bytes.IndexByte(block[off:], 0)
		if n < 0 {
			n = len(block) - off
		}
		if bytes.HasPrefix(block[off:off+n], prefix) {
			if _, err := mem.WriteAt(make([]byte, n), int64(start)+int64(off)); err != nil {
				return err
			}
		}
		off += n + 1
	}
	clear(block)
	return nil
}

// envBounds reads env_start and env_end (fields 50 and 51) of
// /proc/self/stat; the command name before them may hold spaces, so the
// fields are counted from the last ')'.
func envBounds() (start, end uint64, err error) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, errors.New("/proc/self/stat: no command name")
	}
	f := strings.Fields(string(b[i+1:])) // f[0] is field 3
	if len(f) < 49 {
		return 0, 0, fmt.Errorf("/proc/self/stat: %d fields, want 51 (Linux 3.5 or later)", len(f)+2)
	}
	if start, err = strconv.ParseUint(f[47], 10, 64); err == nil {
		end, err = strconv.ParseUint(f[48], 10, 64)
	}
	return start, end, err
}

// protect makes the process not dumpable: a crash leaves no core file
// holding the decrypted key, and /proc/PID/mem, environ and the like
// belong to root and need CAP_SYS_PTRACE in the host's user namespace.
// Children start dumpable again (execve resets it).
func protect() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("keys: not dumpable: %w", err)
	}
	return nil
}
