package runner_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/evidence/bundle"
	"github.com/gatehouse-dev/gatehouse/evidence/keys"
	"github.com/gatehouse-dev/gatehouse/internal/runner"
)

// testSealer is a cosign key in memory (scrypt once per test binary).
func testSealer(t *testing.T) (runner.KeySealer, *keys.Verifier) {
	t.Helper()
	priv, pub, err := keys.Generate([]byte("pw"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := keys.LoadSigner(priv, []byte("pw"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := keys.NewVerifier(pub)
	if err != nil {
		t.Fatal(err)
	}
	return runner.KeySealer{Signer: s}, v
}

// unsignedRun writes a finished, unsigned run folder out/id the way 'run'
// leaves one without a key, and returns its path.
func unsignedRun(t *testing.T, out string) string {
	t.Helper()
	id := "20260102T030405Z-" + strings.ReplaceAll(t.Name(), "/", "-")
	f, err := evidence.Create(out, id)
	if err != nil {
		t.Fatal(err)
	}
	policy := []byte("name: p\n")
	sum := sha256.Sum256(policy)
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	run := evidence.Run{ID: id, Harness: "test", Target: "bwrap", Profile: "p", PolicyDigest: "sha256:" + strings.Repeat("ab", 32),
		PolicyFiles: map[string]string{"p.yaml": "sha256:" + hex.EncodeToString(sum[:])}, Gates: []string{"g"},
		Start: t0, End: t0.Add(time.Minute), Complete: true}
	results := []evidence.Result{{Gate: "g", Scenario: "s", Path: "normal", Verdict: evidence.Fail, Reason: "hit", Start: t0}}
	if err := errors.Join(f.WriteFile("policy/p.yaml", policy), f.WriteJSON("run.json", run), f.WriteJSON("results.json", results),
		f.WriteFile("traces/endpoint-hits.jsonl", []byte("{}\n"))); err != nil {
		t.Fatal(err)
	}
	dir, err := runner.Seal(context.Background(), f, nil)
	if err != nil {
		t.Fatal(err)
	}
	// What a runner a guest reached may have left in place of the report.
	if err := os.WriteFile(filepath.Join(dir, "report.html"), []byte("<script>steal()</script>"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestSealFolderSealsAnUnsignedRun(t *testing.T) {
	s, v := testSealer(t)
	ctx := context.Background()
	t.Run("in place: the sealed folder takes the unsigned one's name", func(t *testing.T) {
		out := t.TempDir()
		src := unsignedRun(t, out)
		dir, err := runner.SealFolder(ctx, src, out, s)
		if err != nil {
			t.Fatal(err)
		}
		if dir != src {
			t.Errorf("sealed into %s, want %s", dir, src)
		}
		if _, err := bundle.Verify(ctx, dir, v); err != nil {
			t.Fatalf("the sealed folder does not verify: %v", err)
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "report.html")); strings.Contains(string(b), "steal()") {
			t.Error("report.html is the runner's, not written again from the records")
		}
		if left, _ := filepath.Glob(filepath.Join(out, ".*")); len(left) > 0 {
			t.Errorf("left behind: %v", left)
		}
		if _, err := runner.SealFolder(ctx, dir, out, s); !errors.Is(err, runner.ErrNotSealable) || !strings.Contains(err.Error(), "already sealed") {
			t.Errorf("sealing twice: %v", err)
		}
	})
	t.Run("elsewhere: the unsigned folder stays as it was", func(t *testing.T) {
		src := unsignedRun(t, t.TempDir())
		out := filepath.Join(t.TempDir(), "sealed")
		dir, err := runner.SealFolder(ctx, src, out, s)
		if err != nil {
			t.Fatal(err)
		}
		if dir != filepath.Join(out, filepath.Base(src)) {
			t.Errorf("sealed into %s", dir)
		}
		if _, err := bundle.Verify(ctx, dir, v); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(src, bundle.SumsFile)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the source folder was changed: %v", err)
		}
	})
}

// A folder from a hostile runner is refused, whole and unchanged, when it
// holds anything a seal could be turned with: a link to a host file, a
// FIFO, a hard link, or when it is not a finished, unsigned run.
func TestSealFolderRefuses(t *testing.T) {
	s, _ := testSealer(t)
	secret := filepath.Join(t.TempDir(), "host-secret")
	if err := os.WriteFile(secret, []byte("host secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	edit := func(f func(dir string) error) func(string) error { return f }
	setRun := func(change func(*evidence.Run)) func(string) error {
		return func(dir string) error {
			var run evidence.Run
			b, _ := os.ReadFile(filepath.Join(dir, "run.json"))
			if err := json.Unmarshal(b, &run); err != nil {
				return err
			}
			change(&run)
			b, _ = json.Marshal(run)
			return os.WriteFile(filepath.Join(dir, "run.json"), b, 0o644)
		}
	}
	for _, tc := range []struct {
		name   string
		plant  func(dir string) error
		reason string
	}{
		{"a symlinked evidence file", edit(func(dir string) error {
			return os.Symlink(secret, filepath.Join(dir, "traces", "model.jsonl"))
		}), "traces/model.jsonl is a symlink"},
		{"a symlink in place of results.json", edit(func(dir string) error {
			os.Remove(filepath.Join(dir, "results.json"))
			return os.Symlink(secret, filepath.Join(dir, "results.json"))
		}), "results.json is a symlink"},
		{"a symlinked folder", edit(func(dir string) error {
			return os.Symlink(filepath.Dir(secret), filepath.Join(dir, "reports"))
		}), "reports is a symlink"},
		{"a FIFO evidence file", edit(func(dir string) error {
			return syscall.Mkfifo(filepath.Join(dir, "traces", "alerts.jsonl"), 0o644)
		}), "traces/alerts.jsonl is a FIFO"},
		{"a hard link to a host file", edit(func(dir string) error {
			return os.Link(secret, filepath.Join(dir, "traces", "copy.jsonl"))
		}), "traces/copy.jsonl is hard-linked"},
		{"already sealed", edit(func(dir string) error {
			return os.WriteFile(filepath.Join(dir, bundle.SumsFile), []byte("x"), 0o644)
		}), "already sealed"},
		{"attestations already there", edit(func(dir string) error {
			return os.Mkdir(filepath.Join(dir, bundle.AttestDir), 0o755)
		}), "already sealed"},
		{"a run that did not complete", setRun(func(r *evidence.Run) { r.Complete = false }), "did not complete"},
		{"a folder named for another run", setRun(func(r *evidence.Run) { r.ID = "20260101T000000Z-other" }), "not its run's id"},
		{"no run.json", edit(func(dir string) error { return os.Remove(filepath.Join(dir, "run.json")) }), "run.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := t.TempDir()
			src := unsignedRun(t, out)
			if err := tc.plant(src); err != nil {
				t.Fatal(err)
			}
			before := listing(t, out)
			_, err := runner.SealFolder(context.Background(), src, out, s)
			if !errors.Is(err, runner.ErrNotSealable) || !strings.Contains(err.Error(), tc.reason) {
				t.Fatalf("SealFolder() = %v, want ErrNotSealable saying %q", err, tc.reason)
			}
			if after := listing(t, out); after != before {
				t.Errorf("the folder changed:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
	t.Run("a partial folder", func(t *testing.T) {
		out := t.TempDir()
		f, err := evidence.Create(out, "20260101T000000Z-x")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := runner.SealFolder(context.Background(), f.Dir(), out, s); !errors.Is(err, runner.ErrNotSealable) {
			t.Errorf("SealFolder() = %v", err)
		}
	})
	t.Run("a link in place of the folder", func(t *testing.T) {
		out := t.TempDir()
		src := unsignedRun(t, t.TempDir())
		link := filepath.Join(out, filepath.Base(src))
		if err := os.Symlink(src, link); err != nil {
			t.Fatal(err)
		}
		if _, err := runner.SealFolder(context.Background(), link, out, s); !errors.Is(err, runner.ErrNotSealable) {
			t.Errorf("SealFolder() = %v", err)
		}
	})
}

// listing names every entry below dir with its kind and size.
func listing(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, _ := d.Info()
		b.WriteString(strings.TrimPrefix(p, dir) + " " + info.Mode().String() + "\n")
		return nil
	})
	return b.String()
}

// The cosign CLI verifies a folder SealFolder sealed, offline, with the
// key's public half (when scripts/cosign.sh has built it).
func TestSealFolderCosignVerifies(t *testing.T) {
	bin := filepath.Join("/var/cache/gatehouse", "cosign-v2.6.5", "cosign")
	if p := os.Getenv("GATEHOUSE_COSIGN"); p != "" {
		bin = p
	}
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("cosign CLI not found at %s (scripts/cosign.sh builds it)", bin)
	}
	s, _ := testSealer(t)
	out := t.TempDir()
	dir, err := runner.SealFolder(context.Background(), unsignedRun(t, out), out, s)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := s.GetPublicKeyPem()
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "cosign.pub"), []byte(pub), 0o644); err != nil {
		t.Fatal(err)
	}
	cosign := func(args ...string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Dir = work
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + work, "SIGSTORE_NO_CACHE=true", "TUF_ROOT=" + filepath.Join(work, "tuf")}
		b, err := cmd.CombinedOutput()
		t.Logf("cosign %v: %v\n%s", args, err, b)
		return err
	}
	if err := cosign("trusted-root", "create", "--out", "tr.json"); err != nil {
		t.Fatal(err)
	}
	if err := cosign("verify-blob-attestation", "--key", "cosign.pub", "--insecure-ignore-tlog", "--trusted-root", "tr.json",
		"--bundle", filepath.Join(dir, bundle.TestResultFile), "--type", bundle.TestResultType, filepath.Join(dir, "run.json")); err != nil {
		t.Fatalf("cosign refused the sealed folder: %v", err)
	}
}
