package diff_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/evidence/diff"
)

// A run folder handed to diff may come from a hostile runner: a policy
// file that is a link to a host secret, or a FIFO in place of results.json,
// must end in a clear error, never in the secret printed or a hang.
func TestLoadRefusesWhatAHostileRunnerPlanted(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "shadow")
	if err := os.WriteFile(secret, []byte("root:HOST-SECRET:19000::::::\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	folder := func(t *testing.T, plant func(dir string) error) string {
		dir := t.TempDir()
		run, _ := json.Marshal(evidence.Run{ID: "r1", Profile: "p", PolicyFiles: map[string]string{"p.yaml": "sha256:x"}})
		res, _ := json.Marshal([]evidence.Result{{Gate: "g", Path: "normal", Verdict: evidence.Pass}})
		os.WriteFile(filepath.Join(dir, "run.json"), run, 0o644)
		os.WriteFile(filepath.Join(dir, "results.json"), res, 0o644)
		os.Mkdir(filepath.Join(dir, "policy"), 0o755)
		os.WriteFile(filepath.Join(dir, "policy", "p.yaml"), []byte("name: p\n"), 0o644)
		if err := plant(dir); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	for _, tc := range []struct {
		name  string
		plant func(dir string) error
	}{
		{"a policy file linked to a host secret", func(d string) error {
			os.Remove(filepath.Join(d, "policy", "p.yaml"))
			return os.Symlink(secret, filepath.Join(d, "policy", "p.yaml"))
		}},
		{"the policy folder linked elsewhere", func(d string) error {
			os.RemoveAll(filepath.Join(d, "policy"))
			os.WriteFile(filepath.Join(filepath.Dir(secret), "p.yaml"), []byte("linked"), 0o600)
			return os.Symlink(filepath.Dir(secret), filepath.Join(d, "policy"))
		}},
		{"results.json is a FIFO", func(d string) error {
			os.Remove(filepath.Join(d, "results.json"))
			return syscall.Mkfifo(filepath.Join(d, "results.json"), 0o644)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := folder(t, tc.plant)
			done := make(chan struct{})
			var s diff.Side
			var err error
			go func() { s, err = diff.Load(dir); close(done) }()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("Load still blocked after 30s")
			}
			if err == nil {
				t.Fatalf("Load accepted it: policy %q", s.Policy)
			}
			for _, b := range s.Policy {
				if strings.Contains(string(b), "HOST-SECRET") || string(b) == "linked" {
					t.Fatalf("a file outside the folder was read: %q", b)
				}
			}
		})
	}
}
