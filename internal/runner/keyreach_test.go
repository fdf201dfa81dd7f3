package runner_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/runner"
	"github.com/gatehouse-dev/gatehouse/internal/targets/kinds"
	"github.com/gatehouse-dev/gatehouse/targets/profiles"
)

// A process that runs a profile's sandboxes may hold a key only when the
// profile keeps the host, and the key file, out of the guest's reach.
func TestCheckSigning(t *testing.T) {
	key := filepath.Join(t.TempDir(), "ci", "cosign.key")
	for _, tc := range []struct {
		file    string
		refused string // "" = allowed
	}{
		{"bwrap-hardened.yaml", ""},
		{"bwrap-hardened-triage.yaml", ""},
		{"bwrap-offline.yaml", ""},
		{"docker-hardened.yaml", ""},
		{"gvisor-hardened.yaml", ""},
		{"bwrap-leaky.yaml", "binds host /etc"},
		{"bwrap-leaky-hostnet.yaml", "network: host"},
		{"docker-leaky.yaml", "docker.pid: host"},
		{"firejail-hardened.yaml", "the key file: firejail: the wrapper's sandbox is made from the host's own file system"},
		{"srt-default.yaml", "uid 0"},
		{"codex-workspace-write.yaml", "uid 0"},
	} {
		p, err := kinds.LoadFS(profiles.FS, tc.file)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{key, ""} {
			name := tc.file + " --key"
			if k == "" {
				name = tc.file + " --keyless"
			}
			t.Run(name, func(t *testing.T) {
				err := runner.CheckSigning(p, k)
				if tc.refused == "" {
					if err != nil {
						t.Fatalf("refused: %v", err)
					}
					return
				}
				if k == "" && strings.HasPrefix(tc.refused, "the key file") {
					tc.refused = "uid 0" // keyless has no file; the wrapper's root still reaches the host
				}
				var re *runner.ReachError
				if !errors.As(err, &re) || !strings.Contains(err.Error(), tc.refused) {
					t.Fatalf("CheckSigning() = %v, want a refusal naming %q", err, tc.refused)
				}
				msg := err.Error()
				flag := "--key"
				if k == "" {
					flag = "--keyless"
				}
				if !strings.HasPrefix(msg, flag+" refused") || !strings.Contains(msg, "gatehouse seal "+flag) {
					t.Errorf("the refusal does not say what to do instead:\n%s", msg)
				}
			})
		}
	}
}

// A key file the profile binds into the sandbox is refused on a profile
// that otherwise keeps the host out of reach, through a link too.
func TestCheckSigningRefusesAKeyTheSandboxSees(t *testing.T) {
	keys := t.TempDir()
	key := filepath.Join(keys, "cosign.key")
	if err := os.WriteFile(key, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "cosign.key")
	if err := os.Symlink(key, link); err != nil {
		t.Fatal(err)
	}
	y := "name: bound\ntarget: bwrap\nnetwork: lab\npaths:\n  normal: {uid: 1000, gid: 1000}\n  assume-breach: {uid: 0, gid: 0, cap_add: []}\n" +
		"bwrap:\n  args: [--unshare-user, --unshare-pid, --unshare-ipc, --ro-bind, '" + keys + "', /mnt/ci]\n"
	file := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(file, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := kinds.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if r := p.HostReach(); len(r) != 0 {
		t.Fatalf("HostReach() = %v: the test needs a profile otherwise out of reach", r)
	}
	for _, k := range []string{key, link} {
		if err := runner.CheckSigning(p, k); err == nil || !strings.Contains(err.Error(), "bwrap.args[3]: the key file: binds host "+keys) {
			t.Errorf("CheckSigning(%s) = %v", k, err)
		}
	}
	if err := runner.CheckSigning(p, filepath.Join(t.TempDir(), "cosign.key")); err != nil {
		t.Errorf("a key elsewhere: %v", err)
	}
}
