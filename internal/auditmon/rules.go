package auditmon

import (
	"fmt"
	"regexp"
	"runtime"
	"strconv"
	"strings"

	"github.com/elastic/go-libaudit/v2/rule"
	"github.com/elastic/go-libaudit/v2/rule/flags"
)

// KeyPrefix starts the key of every audit rule Gatehouse adds: rules are
// global kernel state that outlives a killed process, so they are found
// and removed by this key ("gatehouse-<pid>-<what>").
const KeyPrefix = "gatehouse-"

// What each rule watches, by the rule's name (the last part of its key,
// and the Rule of the events it gives).
const (
	ruleConnect = "connect"
	ruleOpen    = "open"
	ruleExec    = "exec"
)

// syscallsFor lists, per rule, the native syscalls a rule watches on
// goarch; nil when audit rules for goarch are not written here.
func syscallsFor(goarch string) (arch string, sc map[string][]string) {
	switch goarch {
	case "amd64":
		return "x86_64", map[string][]string{
			ruleConnect: {"connect", "sendto", "sendmsg"},
			ruleOpen:    {"open", "openat", "openat2", "creat"},
			ruleExec:    {"execve", "execveat"},
		}
	case "arm64":
		return "aarch64", map[string][]string{
			ruleConnect: {"connect", "sendto", "sendmsg"},
			ruleOpen:    {"openat", "openat2"},
			ruleExec:    {"execve", "execveat"},
		}
	}
	return "", nil
}

// ruleNames in the order rules are added.
var ruleNames = []string{ruleConnect, ruleOpen, ruleExec}

// key is the audit key of rule what added by process pid.
func key(pid int, what string) string {
	return KeyPrefix + strconv.Itoa(pid) + "-" + what
}

// parseKey splits a key this package wrote; ok false for any other key.
func parseKey(k string) (pid int, what string, ok bool) {
	rest, ok := strings.CutPrefix(k, KeyPrefix)
	if !ok {
		return 0, "", false
	}
	p, w, ok := strings.Cut(rest, "-")
	if !ok || w == "" {
		return 0, "", false
	}
	n, err := strconv.Atoi(p)
	if err != nil || n <= 0 {
		return 0, "", false
	}
	return n, w, true
}

// ruleTexts are the auditctl-style rules that watch one session: the
// native arch only (the sandboxes' binaries are native; a 32-bit compat
// process is not seen, said in docs/detection.md), only processes with
// the session's login uid, exits whatever their result (a refused connect
// is an attempt too).
func ruleTexts(goarch string, pid int, auid uint32) ([]string, error) {
	arch, sc := syscallsFor(goarch)
	if sc == nil {
		return nil, fmt.Errorf("%w: no audit rules for %s", ErrUnsupported, goarch)
	}
	if auid == 0 || auid == 4294967295 {
		return nil, fmt.Errorf("auditmon: login uid %d identifies no session", auid)
	}
	var out []string
	for _, what := range ruleNames {
		var b strings.Builder
		fmt.Fprintf(&b, "-a always,exit -F arch=%s", arch)
		for _, s := range sc[what] {
			fmt.Fprintf(&b, " -S %s", s)
		}
		fmt.Fprintf(&b, " -F auid=%d -k %s", auid, key(pid, what))
		out = append(out, b.String())
	}
	return out, nil
}

// buildRules turns rule texts into the kernel's wire format.
func buildRules(texts []string) ([][]byte, error) {
	var out [][]byte
	for _, t := range texts {
		r, err := flags.Parse(t)
		if err != nil {
			return nil, fmt.Errorf("auditmon: rule %q: %w", t, err)
		}
		wf, err := rule.Build(r)
		if err != nil {
			return nil, fmt.Errorf("auditmon: rule %q: %w", t, err)
		}
		out = append(out, wf)
	}
	return out, nil
}

// sessionRules are the wire-format rules for one session on this machine.
func sessionRules(pid int, auid uint32) ([][]byte, error) {
	texts, err := ruleTexts(runtime.GOARCH, pid, auid)
	if err != nil {
		return nil, err
	}
	return buildRules(texts)
}

var keyRe = regexp.MustCompile(`(?:-k |key=)(\S+)`)

// ruleKey reads the key of a wire-format rule the kernel listed, and its
// auditctl text; "" when it has none.
func ruleKey(wf []byte) (k, text string) {
	text, err := rule.ToCommandLine(wf, false)
	if err != nil {
		return "", ""
	}
	if m := keyRe.FindStringSubmatch(text); m != nil {
		return m[1], text
	}
	return "", text
}
