package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The one-letter aliases are the long flags: the same command line with
// either spelling gives the same output and exit code, and --help and the
// completion list them.
func TestShortFlags(t *testing.T) {
	ctx := context.Background()
	pub := filepath.Join(t.TempDir(), "ci.pub")
	if err := os.WriteFile(pub, []byte("not a key\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "no-such-run")
	for _, tt := range []struct {
		name        string
		long, short []string
	}{
		{"run --check", []string{"run", "--check", "--profile", profilePath("bwrap-hardened.yaml"), "--output", "json"},
			[]string{"run", "--check", "-p", profilePath("bwrap-hardened.yaml"), "-o", "json"}},
		{"run --check bad output", []string{"run", "--check", "--profile", profilePath("bwrap-hardened.yaml"), "--output", "yaml"},
			[]string{"run", "--check", "-p", profilePath("bwrap-hardened.yaml"), "-o=yaml"}},
		{"verify", []string{"verify", "--key", pub, "--output", "json", missing},
			[]string{"verify", "-k", pub, "-o", "json", missing}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l, s := gatehouse(t, ctx, tt.long...), gatehouse(t, ctx, tt.short...)
			if l.code != s.code || l.stdout != s.stdout || l.stderr != s.stderr {
				t.Errorf("%v: exit %d\n%s%s\n%v: exit %d\n%s%s", tt.long, l.code, l.stdout, l.stderr, tt.short, s.code, s.stdout, s.stderr)
			}
			if l.stdout == "" && l.stderr == "" {
				t.Errorf("%v said nothing: the comparison proves nothing", tt.long)
			}
		})
	}
	if r := gatehouse(t, ctx, "run", "--check", "-o", "json", "-p", profilePath("bwrap-hardened.yaml")); r.code != exitOK {
		t.Skipf("run --check needs root and nft here: exit %d %s", r.code, r.stderr)
	} else {
		validJSON(t, r.stdout)
	}
	help := gatehouse(t, ctx, "help", "run").stdout
	for _, s := range []string{"-o string\n    \tshort for --output", "-p string\n    \tshort for --profile", "-k string\n    \tshort for --key"} {
		if !strings.Contains(help, s) {
			t.Errorf("run --help does not say %q", s)
		}
	}
}

func validJSON(t *testing.T, s string) {
	t.Helper()
	if !json.Valid([]byte(s)) {
		t.Errorf("not a JSON document: %q", s)
	}
}
