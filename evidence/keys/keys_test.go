package keys_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence/keys"
)

func TestGenerateLoad(t *testing.T) {
	prefix := filepath.Join(t.TempDir(), "cosign")
	keyPath, pubPath, err := keys.GenerateFiles(prefix, []byte("pw"))
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(keyPath); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("private key mode: %v %v", st, err)
	}
	b, _ := os.ReadFile(keyPath)
	if !strings.Contains(string(b), "ENCRYPTED SIGSTORE PRIVATE KEY") {
		t.Fatalf("not a cosign-format key:\n%s", b)
	}
	if _, _, err := keys.GenerateFiles(prefix, []byte("pw")); err == nil {
		t.Fatal("GenerateFiles overwrote an existing key")
	}
	t.Setenv(keys.PasswordEnv, "wrong")
	if _, err := keys.LoadSignerFile(keyPath); err == nil {
		t.Fatal("loaded the key with a wrong password")
	}
	t.Setenv(keys.PasswordEnv, "pw")
	s, err := keys.LoadSignerFile(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	v, err := keys.LoadVerifierFile(pubPath)
	if err != nil {
		t.Fatal(err)
	}
	if s.Fingerprint() != v.Fingerprint() || !strings.HasPrefix(s.Fingerprint(), "sha256:") {
		t.Fatalf("fingerprints %s vs %s", s.Fingerprint(), v.Fingerprint())
	}
}

func TestPasswordUnset(t *testing.T) {
	t.Setenv(keys.PasswordEnv, "")
	os.Unsetenv(keys.PasswordEnv)
	if _, err := keys.Password(); !errors.Is(err, keys.ErrNoPassword) {
		t.Fatalf("Password() = %v, want ErrNoPassword", err)
	}
}

// A key path that is a FIFO or a huge file is refused without blocking or
// reading it all.
func TestLoadSignerFileRefusesWhatIsNotAKey(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.key")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.key")
	if err := os.WriteFile(big, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, big} {
		t.Setenv(keys.PasswordEnv, "pw")
		if _, err := keys.LoadSignerFile(p); err == nil {
			t.Errorf("%s: loaded", p)
		}
	}
}
