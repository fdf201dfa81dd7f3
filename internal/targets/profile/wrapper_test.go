package profile_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/targets/kinds"
)

func TestWrapperSections(t *testing.T) {
	base := "name: w\nnetwork: lab\npaths:\n  normal: {uid: 1000, gid: 1000}\n  assume-breach: {uid: 0, gid: 0}\n"
	tests := []struct {
		name, yaml, err string
		argv            string
	}{
		{name: "exec with a policy file", yaml: "target: exec\nexec:\n  argv: [sb, --policy, \"{{file:p}}\", --]\n  files: {p: p.json}\n", argv: "sb --policy {{file:p}} --"},
		{name: "firejail adds --", yaml: "target: firejail\nfirejail: {args: [--noprofile]}\n", argv: "firejail --noprofile --"},
		{name: "exec needs argv", yaml: "target: exec\n", err: "exec.argv: required"},
		{name: "unknown file name", yaml: "target: exec\nexec: {argv: [sb, \"{{file:q}}\"]}\n", err: "no such name"},
		{name: "firejail args without --", yaml: "target: firejail\nfirejail: {args: [--, sh]}\n", err: "added by the target"},
		{name: "exec section on another target", yaml: "target: firejail\nexec: {argv: [sb]}\n", err: "only for target exec"},
		{name: "unknown place", yaml: "target: exec\nexec: {argv: [sb, \"{{place:nope}}\"]}\n", err: "nope"},
		{name: "no other user inside", yaml: "target: exec\nexec: {argv: [sb]}\nsecret_process: {where: inside, user: other}\n", err: "secret_process.user"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "p.json"), []byte("{}"), 0o644); err != nil {
				t.Fatal(err)
			}
			f := filepath.Join(dir, "w.yaml")
			if err := os.WriteFile(f, []byte(base+tc.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			p, err := kinds.Load(f)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(p.Wrapper().Argv, " "); got != tc.argv {
				t.Fatalf("argv %q, want %q", got, tc.argv)
			}
		})
	}
}
