package docker

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestShimScriptRoutes checks the shim script's fast path: creates, and
// every call about a container whose entry has runtime flags, reach the
// shim (here a stand-in that logs); all other calls go straight to the
// real runtime (a stand-in too) with the arguments ShimMain would give it,
// flags included. The state folder holds a space and a quote, to prove
// the quoting.
func TestShimScriptRoutes(t *testing.T) {
	state := filepath.Join(t.TempDir(), "st ate'x")
	if err := os.MkdirAll(filepath.Join(state, "sessions"), 0o700); err != nil {
		t.Fatal(err)
	}
	logf := filepath.Join(state, "calls.log")
	real := filepath.Join(state, "real runc")
	if err := os.WriteFile(real, []byte("#!/bin/sh\n{ printf real; printf ' [%s]' \"$@\"; echo; } >> \"$LOGF\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	shim := []string{"/bin/sh", "-c", `{ printf shim; printf ' [%s]' "$@"; echo; } >> "$LOGF"`, "sh"}
	script, err := writeShimScript(state, "gatehouse-runc", real, shim)
	if err != nil {
		t.Fatal(err)
	}
	plain := strings.Repeat("a", 64)
	flagged := strings.Repeat("b", 64)
	if err := writeEntry(filepath.Join(state, "sessions"), plain, sessionEntry{Netns: "/run/netns/x"}); err != nil {
		t.Fatal(err)
	}
	if err := writeEntry(filepath.Join(state, "sessions"), flagged, sessionEntry{Flags: []string{"--network=host", "--debug-log=/a b'c"}}); err != nil {
		t.Fatal(err)
	}
	odd := strings.Repeat("c", 64)
	if err := writeEntry(filepath.Join(state, "sessions"), odd, sessionEntry{Flags: []string{"--x=a\nb"}}); err != nil {
		t.Fatal(err)
	}
	breach := strings.Repeat("d", 64)
	if err := writeEntry(filepath.Join(state, "sessions"), breach, sessionEntry{SetRootCaps: true, RootCaps: []string{"CAP_NET_ADMIN"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(flagsPath(filepath.Join(state, "sessions"), plain)); !os.IsNotExist(err) {
		t.Fatalf("an entry without flags got a flags marker (%v)", err)
	}
	sessions := filepath.Join(state, "sessions")
	toShim := func(args ...string) string {
		return words("shim", append([]string{"--real", real, "--sessions", sessions, "--"}, args...)...)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--root", "/r", "--log-format", "json", "create", "--bundle", "/b", plain}, toShim("--root", "/r", "--log-format", "json", "create", "--bundle", "/b", plain)},
		{[]string{"--root", "/r", "run", plain}, toShim("--root", "/r", "run", plain)},
		{[]string{"--root", "/r", "start", plain}, words("real", "--root", "/r", "start", plain)},
		{[]string{"--root", "/r", "kill", plain, "9"}, words("real", "--root", "/r", "kill", plain, "9")},
		{[]string{"--root", "/r", "exec", "--process", "/p x.json", "--detach", plain}, words("real", "--root", "/r", "exec", "--process", "/p x.json", "--detach", plain)},
		{[]string{"--root", "/r", "delete", "--force", flagged}, words("real", "--root", "/r", "--network=host", "--debug-log=/a b'c", "delete", "--force", flagged)},
		{[]string{"--root", "/r", "--log", "/kill", "kill", flagged, "9"}, words("real", "--root", "/r", "--log", "/kill", "--network=host", "--debug-log=/a b'c", "kill", flagged, "9")},
		{[]string{"--root", "/r", "create", "--bundle", "/b", flagged}, toShim("--root", "/r", "create", "--bundle", "/b", flagged)},
		{[]string{"--root", "/r", "state", odd}, toShim("--root", "/r", "state", odd)},
		{[]string{"--version"}, words("real", "--version")},
		// The assume-breach path's root capabilities: its execs reach the
		// shim, its other calls do not.
		{[]string{"--root", "/r", "exec", "--process", "/p.json", breach}, toShim("--root", "/r", "exec", "--process", "/p.json", breach)},
		{[]string{"--root", "/r", "kill", breach, "9"}, words("real", "--root", "/r", "kill", breach, "9")},
	}
	for _, c := range cases {
		_ = os.Remove(logf)
		cmd := exec.Command(script, c.args...)
		cmd.Env = append(os.Environ(), "LOGF="+logf)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v: %s", c.args, err, out)
		}
		got, err := os.ReadFile(logf)
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimSpace(string(got)) != c.want {
			t.Errorf("%v:\n got  %q\n want %q", c.args, strings.TrimSpace(string(got)), c.want)
		}
		// What the script ran itself is exactly what ShimMain would run.
		if strings.HasPrefix(c.want, "real") {
			argv, err := shimArgs(real, sessions, c.args)
			if err != nil {
				t.Fatal(err)
			}
			if w := words("real", argv[1:]...); w != c.want {
				t.Errorf("%v: ShimMain would run %q, the script ran %q", c.args, w, c.want)
			}
		}
	}
}

// words is how the stand-ins log a call: the name, then each argument in
// brackets, so argument boundaries show.
func words(name string, args ...string) string {
	var b strings.Builder
	b.WriteString(name)
	for _, a := range args {
		b.WriteString(" [" + a + "]")
	}
	return b.String()
}
