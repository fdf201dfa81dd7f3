package egress

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
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

// The check leaves no namespace behind: it never names one.
func TestCheckLeavesNoNamedNamespace(t *testing.T) {
	needNFT(t)
	before, _ := exec.Command("ip", "netns", "list").Output()
	if err := Check(context.Background(), []byte("table inet t {}\n")); err != nil {
		t.Fatal(err)
	}
	after, _ := exec.Command("ip", "netns", "list").Output()
	if len(after) > len(before) {
		t.Fatalf("namespaces before:\n%s\nafter:\n%s", before, after)
	}
}
