package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Every verb that starts sandboxes refuses a signing key for each shipped
// profile whose guest reaches the host (exit 2, before anything starts,
// saying why and what to do instead), and accepts it for the hardened
// ones. The key file is never read for a refused profile.
func TestKeyRefusedNextToHostReach(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the profile check runs nft in a scratch namespace")
	}
	key := filepath.Join(t.TempDir(), "never-read.key")
	for _, tc := range []struct {
		profile string
		refused bool
	}{
		{"bwrap-hardened.yaml", false},
		{"bwrap-hardened-triage.yaml", false},
		{"bwrap-offline.yaml", false},
		{"docker-hardened.yaml", false},
		{"gvisor-hardened.yaml", false},
		{"bwrap-leaky.yaml", true},
		{"bwrap-leaky-hostnet.yaml", true},
		{"docker-leaky.yaml", true},
		{"firejail-hardened.yaml", true},
		{"srt-default.yaml", true},
		{"srt-wildcard.yaml", true},
		{"codex-workspace-write.yaml", true},
		{"codex-network-direct.yaml", true},
		{"codex-network-proxy.yaml", true},
	} {
		name := tc.profile + " accepted"
		if tc.refused {
			name = tc.profile + " refused"
		}
		t.Run(name, func(t *testing.T) {
			r := gatehouse(t, context.Background(), "run", "--check", "--profile", profilePath(tc.profile), "--key", key)
			if !tc.refused {
				if r.code != exitOK {
					t.Fatalf("exit %d, want 0:\n%s", r.code, r.stderr)
				}
				return
			}
			if r.code != exitUsage {
				t.Fatalf("exit %d, want 2:\n%s", r.code, r.stderr)
			}
			for _, want := range []string{"--key refused: profile " + strings.TrimSuffix(tc.profile, ".yaml") + " puts the host within the guest's reach",
				"  - ", "gatehouse seal --key cosign.key RUN_FOLDER", "docs/ci.md"} {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
				}
			}
		})
	}
	leaky := profilePath("bwrap-leaky.yaml")
	t.Run("run --keyless refused", func(t *testing.T) {
		r := gatehouse(t, context.Background(), "run", "--profile", leaky, "--keyless", "--trusted-root", key)
		if r.code != exitUsage || !strings.Contains(r.stderr, "--keyless refused") || !strings.Contains(r.stderr, "gatehouse seal --keyless") {
			t.Errorf("exit %d:\n%s", r.code, r.stderr)
		}
	})
	t.Run("a real run refused before anything is made", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "runs")
		r := gatehouse(t, context.Background(), "run", "--profile", leaky, "--out", out, "--key", key)
		if r.code != exitUsage || !strings.Contains(r.stderr, "--key refused") {
			t.Errorf("exit %d:\n%s", r.code, r.stderr)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("the refused run made %s: %v", out, err)
		}
	})
	t.Run("rehearse refused", func(t *testing.T) {
		report := filepath.Join(t.TempDir(), "report.md")
		os.WriteFile(report, []byte("# report\n"), 0o644)
		r := gatehouse(t, context.Background(), "rehearse", "triage", "--profile", leaky, "--repo", t.TempDir(), "--report", report, "--key", key)
		if r.code != exitUsage || !strings.Contains(r.stderr, "--key refused") {
			t.Errorf("exit %d:\n%s", r.code, r.stderr)
		}
	})
	t.Run("compare refused", func(t *testing.T) {
		r := gatehouse(t, context.Background(), "compare", "--profile", leaky, "--profile", profilePath("bwrap-offline.yaml"), "--key", key)
		if r.code != exitUsage || !strings.Contains(r.stderr, "--key refused: profile bwrap-leaky") {
			t.Errorf("exit %d:\n%s", r.code, r.stderr)
		}
	})
}

// seal refuses what is not a folder it may sign, with exit 1 for a folder
// refused and 2 for usage, and signs nothing then.
func TestSealRefuses(t *testing.T) {
	t.Setenv("COSIGN_PASSWORD", "seal-test")
	prefix := filepath.Join(t.TempDir(), "ci")
	if r := gatehouse(t, context.Background(), "keys", "generate", "--out", prefix); r.code != exitOK {
		t.Fatal(r.stderr)
	}
	secret := filepath.Join(t.TempDir(), "host-secret")
	os.WriteFile(secret, []byte("secret\n"), 0o600)
	runDir := func(t *testing.T, plant func(dir string) error) string {
		dir := filepath.Join(t.TempDir(), "20260102T030405Z-ab12")
		if err := os.MkdirAll(filepath.Join(dir, "traces"), 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "run.json"), []byte(`{"id":"20260102T030405Z-ab12","complete":true}`), 0o644)
		if err := plant(dir); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	symlinked := runDir(t, func(d string) error { return os.Symlink(secret, filepath.Join(d, "traces", "model.jsonl")) })
	fifo := runDir(t, func(d string) error { return syscall.Mkfifo(filepath.Join(d, "traces", "alerts.jsonl"), 0o644) })
	withIndex := runDir(t, func(d string) error {
		// An index shipped next to the run folder, e.g. by a hostile runner.
		return os.WriteFile(filepath.Join(filepath.Dir(d), "gatehouse-index.db"), []byte("not sqlite"), 0o644)
	})
	linkToFolder := filepath.Join(t.TempDir(), "20260102T030405Z-ab12")
	os.Symlink(runDir(t, func(string) error { return nil }), linkToFolder)
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"a symlinked evidence file", []string{"--key", prefix + ".key", symlinked}, exitViolation, "traces/model.jsonl is a symlink"},
		{"a FIFO evidence file", []string{"--key", prefix + ".key", fifo}, exitViolation, "traces/alerts.jsonl is a FIFO"},
		{"a link in place of the folder", []string{"--key", prefix + ".key", linkToFolder}, exitViolation, "not a folder"},
		{"an index carried with the folder", []string{"--key", prefix + ".key", withIndex}, exitUsage, "name the index this job owns with --db"},
		{"no folder", []string{"--key", prefix + ".key", filepath.Join(t.TempDir(), "none")}, exitUsage, "no such file"},
		{"no folder named", []string{"--key", prefix + ".key"}, exitUsage, "name the run folders"},
		{"no key", []string{symlinked}, exitUsage, "give --key"},
		{"a key that is not there", []string{"--key", filepath.Join(t.TempDir(), "none.key"), fifo}, exitUsage, "--key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := gatehouse(t, context.Background(), append([]string{"seal"}, tc.args...)...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("exit %d (want %d), stderr lacks %q:\n%s", r.code, tc.code, tc.want, r.stderr)
			}
		})
	}
	for _, d := range []string{symlinked, fifo, withIndex} {
		if _, err := os.Stat(filepath.Join(d, "SHA256SUMS")); !os.IsNotExist(err) {
			t.Errorf("%s was sealed: %v", d, err)
		}
	}
	t.Run("wrong password", func(t *testing.T) {
		t.Setenv("COSIGN_PASSWORD", "wrong")
		r := gatehouse(t, context.Background(), "seal", "--key", prefix+".key", fifo)
		if r.code != exitUsage || !strings.Contains(r.stderr, "seal: --key") {
			t.Errorf("exit %d:\n%s", r.code, r.stderr)
		}
	})
}
