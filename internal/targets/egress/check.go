package egress

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrCannotCheck means the ruleset could not be checked on this machine
// (nft missing, no privilege to make a network namespace): nothing is known
// about it, so a run must not start on it.
var ErrCannotCheck = errors.New("cannot check the egress ruleset here")

// RulesetError is a ruleset nft (or Gatehouse) refuses, at a line of it.
type RulesetError struct {
	Line int    // 1-based line in the ruleset; 0 when nft named none
	Col  int    // 1-based column; 0 when unknown
	Msg  string // nft's own words, e.g. "conflicting protocols specified: ip vs. ip6"
	Text string // the ruleset's line, trimmed, when Line is known
	More int    // further errors nft reported after this one
}

func (e *RulesetError) Error() string {
	var b strings.Builder
	b.WriteString(e.Msg)
	switch {
	case e.Text != "" && e.Col > 0:
		fmt.Fprintf(&b, ", at column %d of %q", e.Col, e.Text)
	case e.Text != "":
		fmt.Fprintf(&b, ", in %q", e.Text)
	}
	if e.More > 0 {
		fmt.Fprintf(&b, "; and %d more error(s)", e.More)
	}
	return b.String()
}

var flushRuleset = regexp.MustCompile(`(?m)^\s*flush\s+ruleset\b`)

// Check asks nft whether it would accept rules, without applying them
// anywhere that matters: `nft -c` (check only, never commits) runs in a
// network namespace made for it alone, which the kernel removes when nft
// exits, so there is nothing to delete even if the harness is killed.
// The refusals that Apply would meet later come back as *RulesetError.
func Check(ctx context.Context, rules []byte) error {
	if len(Tables(rules)) == 0 {
		return &RulesetError{Msg: "declares no table, so it cannot be verified once applied"}
	}
	if loc := flushRuleset.FindIndex(rules); loc != nil {
		line := bytes.Count(rules[:loc[0]], []byte("\n")) + 1
		return &RulesetError{Line: line, Msg: "flush ruleset would also remove the lab's accounting table from the session namespace " +
			"(the namespace starts empty): remove it", Text: lineOf(rules, line)}
	}
	bin, err := lookNFT()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrCannotCheck, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-c", "-f", "/dev/stdin")
	cmd.Env = hostEnv
	cmd.Stdin = bytes.NewReader(rules)
	cmd.SysProcAttr = scratchNetns()
	var errb bytes.Buffer
	cmd.Stderr = &errb
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return nil
	case !errors.As(err, &exit):
		// Not nft's answer: the namespace or the process could not be made.
		return fmt.Errorf("%w: run nft -c in a scratch network namespace (needs root, or unprivileged user namespaces): %v", ErrCannotCheck, err)
	}
	return nftRefusal(rules, errb.String())
}

// scratchNetns makes nft's child process start in a new, empty network
// namespace. As root that needs nothing more; otherwise a user namespace
// of its own (where nft is root) makes the network namespace possible.
func scratchNetns() *syscall.SysProcAttr {
	if os.Geteuid() == 0 {
		return &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET}
	}
	return &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}},
	}
}

// nftBin is where Check looks for nft: the PATH every nft call of ours gets.
var nftBin = "nft"

func lookNFT() (string, error) {
	if filepath.IsAbs(nftBin) {
		return nftBin, nil
	}
	for _, dir := range filepath.SplitList(strings.TrimPrefix(hostEnv[0], "PATH=")) {
		p := filepath.Join(dir, nftBin)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("nft is not installed (looked in %s): install nftables", strings.TrimPrefix(hostEnv[0], "PATH="))
}

// nftError matches nft's "FILE:LINE:COL-COL: Error: MESSAGE" lines.
var nftError = regexp.MustCompile(`(?m)^[^\n]*?:(\d+):(\d+)-\d+: Error: (.*)$`)

// nftRefusal turns nft's complaint into a *RulesetError at the first line
// it named, or ErrCannotCheck when nft could not talk to the kernel.
func nftRefusal(rules []byte, stderr string) error {
	ms := nftError.FindAllStringSubmatch(stderr, -1)
	if len(ms) == 0 {
		msg := strings.TrimSpace(stderr)
		if strings.Contains(msg, "Operation not permitted") || strings.Contains(msg, "Permission denied") {
			return fmt.Errorf("%w: nft: %s", ErrCannotCheck, firstLine(msg))
		}
		return &RulesetError{Msg: "nft: " + firstLine(strings.TrimPrefix(msg, "Error: "))}
	}
	line, _ := strconv.Atoi(ms[0][1])
	col, _ := strconv.Atoi(ms[0][2])
	return &RulesetError{Line: line, Col: col, Msg: ms[0][3], Text: lineOf(rules, line), More: len(ms) - 1}
}

func lineOf(b []byte, n int) string {
	lines := strings.Split(string(b), "\n")
	if n < 1 || n > len(lines) {
		return ""
	}
	return strings.TrimSpace(lines[n-1])
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
