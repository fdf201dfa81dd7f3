package bwrap_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/targets/kinds"
	"github.com/gatehouse-dev/gatehouse/targets"
	"github.com/gatehouse-dev/gatehouse/targets/profiles"
)

// status prints uid and CapEff as the sandboxed process sees them.
const status = `while read -r k v rest; do case $k in Uid:|CapEff:) printf '%s%s ' "$k" "$v";; esac; done < /proc/self/status`

func TestPathsSetIdentity(t *testing.T) {
	needSandbox(t)
	for _, tc := range []struct {
		path targets.Path
		want string
	}{
		{targets.PathNormal, "Uid:1000 CapEff:0000000000000000 "},
		{targets.PathBreach, "Uid:0 CapEff:0000000000000000 "}, // cap_add: [] means none at all
	} {
		t.Run(string(tc.path), func(t *testing.T) {
			s, _ := startSession(t, shipped(t, profiles.Hardened), targets.Spec{Name: "id", Path: tc.path, Network: newNetns(t)})
			if got := shOut(t, s, status); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// Files a profile names next to itself are what the sandbox gets, including
// through descriptor options (--ro-bind-data), and the resolver is written.
func TestProfileFilesReachSandbox(t *testing.T) {
	needSandbox(t)
	dir := t.TempDir()
	base, _ := shipped(t, profiles.Hardened).File(profiles.Hardened)
	y := strings.Replace(string(base), "    - --clearenv\n", "    - --clearenv\n    - --ro-bind-data\n    - ./hosts\n    - /etc/hosts\n", 1)
	nft, _ := shipped(t, profiles.Hardened).File("bwrap-hardened.nft")
	for name, body := range map[string]string{"p.yaml": y, "hosts": "203.0.113.100 inference\n", "bwrap-hardened.nft": string(nft)} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p, err := kinds.Load(filepath.Join(dir, "p.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s, _ := startSession(t, p, targets.Spec{Name: "files", Path: targets.PathNormal, Network: newNetns(t)})
	got := shOut(t, s, `while IFS= read -r l; do echo "$l"; done < /etc/hosts; while IFS= read -r l; do echo "$l"; done < /etc/resolv.conf`)
	if got != "203.0.113.100 inference\nnameserver 203.0.113.53\n" {
		t.Fatalf("sandbox sees %q", got)
	}
}

func shOut(t *testing.T, s targets.Session, script string) string {
	t.Helper()
	var out, errb bytes.Buffer
	res, err := s.Exec(context.Background(), targets.Command{Args: []string{"/bin/sh", "-c", script}, Stdout: &out, Stderr: &errb})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("exit %d, err %v, stderr %q", res.ExitCode, err, errb.String())
	}
	return out.String()
}

// A bound tree (targets.File.Bind) is seen as it is, read-only, and is not
// copied into the session's staging folder: an agent's runtime is hundreds
// of megabytes.
func TestBoundTreeIsReadOnlyAndNotCopied(t *testing.T) {
	needSandbox(t)
	tree := t.TempDir()
	if err := os.MkdirAll(filepath.Join(tree, "lib"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tree, "lib", "tool.js"), []byte("console.log(1)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := shipped(t, profiles.Hardened)
	s, root := startSession(t, p, targets.Spec{Name: "bind", Path: targets.PathNormal, Network: newNetns(t),
		Files: map[string]targets.File{"/gatehouse/agent/tree": {HostPath: tree, Bind: true}}})
	got := shOut(t, s, `IFS= read -r l < /gatehouse/agent/tree/lib/tool.js; echo "$l"; if echo x > /gatehouse/agent/tree/lib/new 2>/dev/null; then echo writable; else echo read-only; fi`)
	if got != "console.log(1)\nread-only\n" {
		t.Fatalf("sandbox sees %q", got)
	}
	copies, _ := filepath.Glob(filepath.Join(root, "*", "fs", "agent", "tree", "lib"))
	if len(copies) > 0 {
		t.Fatalf("the tree was copied into the stage: %v", copies)
	}
	if _, err := os.Stat(filepath.Join(tree, "lib", "new")); err == nil {
		t.Fatal("the sandbox wrote into the bound tree")
	}
}
