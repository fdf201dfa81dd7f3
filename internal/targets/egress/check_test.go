package egress

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func needNFT(t *testing.T) {
	t.Helper()
	if _, err := lookNFT(); err != nil {
		t.Skip(err)
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: nft -c runs in a network namespace of its own")
	}
}

func TestCheckNamesTheLineNftRefuses(t *testing.T) {
	needNFT(t)
	for _, tc := range []struct {
		name, rules string
		line        int
		msg         string // in the error
	}{
		{"accepted", "table inet t {\n\tchain o {\n\t\ttype filter hook output priority filter; policy drop;\n\t\tip daddr 203.0.113.100 tcp dport 80 accept\n\t}\n}\n", 0, ""},
		{"family mismatch", "# c\ntable ip t {\n\tchain o {\n\t\ttype filter hook output priority filter;\n\t\tip6 daddr 2001:db8::1 accept\n\t}\n}\n", 5, "conflicting protocols"},
		{"keyword typo", "table inet t {\n\tchain o {\n\t\ttype filter hook output priority filter;\n\t\ttcp dprot 80 accept\n\t}\n}\n", 4, "syntax error"},
		{"no table", "# nothing\n", 0, "declares no table"},
		{"flush ruleset", "flush ruleset\ntable inet t {}\n", 1, "accounting table"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(context.Background(), []byte(tc.rules))
			if tc.msg == "" {
				if err != nil {
					t.Fatalf("Check() = %v, want nil", err)
				}
				return
			}
			var re *RulesetError
			if !errors.As(err, &re) {
				t.Fatalf("Check() = %v, want *RulesetError", err)
			}
			if re.Line != tc.line || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("Check() = %q at line %d, want line %d containing %q", err, re.Line, tc.line, tc.msg)
			}
		})
	}
}

// Where nft is missing the check says so: it is not a pass.
func TestCheckWithoutNftCannotCheck(t *testing.T) {
	old := nftBin
	nftBin = "gatehouse-no-such-nft"
	defer func() { nftBin = old }()
	err := Check(context.Background(), []byte("table inet t {}\n"))
	if !errors.Is(err, ErrCannotCheck) || !strings.Contains(err.Error(), "not installed") {
		t.Fatalf("Check() = %v, want ErrCannotCheck saying nft is not installed", err)
	}
}

// nft runs in a network namespace of its own, which nothing names: it is
// gone when nft exits. A stand-in nft reports the namespace it ran in.
func TestCheckRunsInAnUnnamedNamespaceOfItsOwn(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the scratch namespace is a real one")
	}
	fake := filepath.Join(t.TempDir(), "nft")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\nreadlink /proc/self/ns/net >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	old := nftBin
	nftBin = fake
	defer func() { nftBin = old }()
	var re *RulesetError
	if err := Check(context.Background(), []byte("table inet t {}\n")); !errors.As(err, &re) {
		t.Fatalf("Check() = %v, want the stand-in's answer", err)
	}
	theirs := strings.TrimPrefix(re.Msg, "nft: ")
	ours, err := os.Readlink("/proc/self/ns/net")
	if err != nil || !strings.HasPrefix(theirs, "net:[") || theirs == ours {
		t.Fatalf("nft ran in %q, the harness is in %q (%v): want a namespace of its own", theirs, ours, err)
	}
	named, _ := filepath.Glob("/run/netns/*")
	for _, n := range named {
		var st syscall.Stat_t
		if syscall.Stat(n, &st) == nil && fmt.Sprintf("net:[%d]", st.Ino) == theirs {
			t.Fatalf("the scratch namespace is still named: %s", n)
		}
	}
}
