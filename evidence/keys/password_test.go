package keys_test

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence/keys"
)

// helperEnv, set, makes TestSignerHelper load the key it names, start a
// child, print both pids and wait for stdin to close.
const helperEnv = "GATEHOUSE_KEYS_HELPER_KEY"

// TestSignerHelper is the signing process of TestPasswordLeavesTheProcess,
// run as a process of its own so that its initial environment holds the
// password, as a CI job's does.
func TestSignerHelper(t *testing.T) {
	key := os.Getenv(helperEnv)
	if key == "" {
		t.Skip("helper process of TestPasswordLeavesTheProcess")
	}
	load := func() error { _, err := keys.LoadSignerFile(key); return err }
	if key == "drop" {
		load = keys.DropPassword // a process that starts sandboxes and signs nothing
	}
	if err := load(); err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	// A child started the ordinary way, inheriting this process's
	// environment, as nsenter, bwrap and dockerd are.
	child := exec.Command("sleep", "600")
	if err := child.Start(); err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	_, inEnv := os.LookupEnv(keys.PasswordEnv)
	fmt.Println("ready", os.Getpid(), child.Process.Pid, inEnv)
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = child.Process.Kill()
	_ = child.Wait()
	os.Exit(0)
}

// TestPasswordLeavesTheProcess: once a process has loaded its signing key,
// neither its own /proc/PID/environ nor a child's holds the password, the
// environment no longer names it, and the child has no descriptor of the
// key file; what an attacker who reaches the host reads from outside.
func TestPasswordLeavesTheProcess(t *testing.T) {
	if _, err := exec.LookPath("sleep"); err != nil {
		t.Skip("needs sleep")
	}
	secret := make([]byte, 12)
	_, _ = rand.Read(secret)
	pw := "pw-" + hex.EncodeToString(secret)
	keyPath, _, err := keys.GenerateFiles(filepath.Join(t.TempDir(), "cosign"), []byte(pw))
	if err != nil {
		t.Fatal(err)
	}
	t.Run("the key loaded", func(t *testing.T) { checkSigner(t, keyPath, keyPath, pw) })
	t.Run("no key, the password dropped", func(t *testing.T) { checkSigner(t, "drop", keyPath, pw) })
}

// checkSigner starts TestSignerHelper with the password in its initial
// environment and looks at it, and at its child, from outside.
func checkSigner(t *testing.T, mode, keyPath, pw string) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestSignerHelper$", "-test.count=1")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), helperEnv + "=" + mode, keys.PasswordEnv + "=" + pw}
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("helper: %v", err)
		}
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("helper said nothing: %v", err)
	}
	var self, child int
	var inEnv bool
	if _, err := fmt.Sscanf(line, "ready %d %d %t", &self, &child, &inEnv); err != nil {
		t.Fatalf("helper: %q", line)
	}
	if inEnv {
		t.Errorf("%s is still in the signing process's environment", keys.PasswordEnv)
	}
	for _, p := range []struct {
		who string
		pid int
	}{{"signing process", self}, {"its child", child}} {
		env, err := readEnviron(p.pid)
		if err != nil {
			t.Fatalf("%s: %v", p.who, err)
		}
		if bytes.Contains(env, []byte(pw)) || bytes.Contains(env, []byte(keys.PasswordEnv+"=")) {
			t.Errorf("%s: /proc/%d/environ still holds the password:\n%q", p.who, p.pid, env)
		}
		if !bytes.Contains(env, []byte("PATH=")) {
			t.Errorf("%s: /proc/%d/environ lost more than the password: %q", p.who, p.pid, env)
		}
	}
	fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", child))
	for _, fd := range fds {
		if target, _ := os.Readlink(fd); strings.Contains(target, filepath.Base(keyPath)) {
			t.Errorf("the child inherited a descriptor of the key file: %s -> %s", fd, target)
		}
	}
}

// readEnviron reads /proc/PID/environ, waiting while it is empty: exec
// closes the descriptor Go's Start waits on before the new image's
// environment is set up, so a child just started can read as empty for a
// moment (seen on a loaded CI machine).
func readEnviron(pid int) ([]byte, error) {
	end := time.Now().Add(5 * time.Second)
	for {
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil || len(env) > 0 || time.Now().After(end) {
			return env, err
		}
		time.Sleep(10 * time.Millisecond)
	}
}
