// Package hostenv is the environment Gatehouse gives the programs it
// starts on the host: nsenter and nft, ip, dockerd, git, itself, and a
// team's stop, response and token commands. It is an allow-list, never the
// harness's own environment passed through: the harness runs as root next
// to hostile code, and its environment can hold a CI job's secrets (a
// signing key's password until the key is loaded, an OIDC token, the job's
// own token); every child that carries them is one more place a guest
// that reaches the host can read them from.
package hostenv

import (
	"context"
	"os"
	"os/exec"
	"strings"
)

// Allowed are the variables a child gets from the harness's environment:
// where programs are, and how they print.
var Allowed = []string{"PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TZ"}

// Env is the allow-list's values from this process's environment (PATH
// defaults to the usual system folders), then extra ("NAME=value").
func Env(extra ...string) []string {
	out := make([]string, 0, len(Allowed)+len(extra))
	for _, k := range Allowed {
		if v, ok := os.LookupEnv(k); ok {
			out = append(out, k+"="+v)
		} else if k == "PATH" {
			out = append(out, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
		}
	}
	return append(out, extra...)
}

// Gatehouse is Env plus the harness's own GATEHOUSE_ settings, for a
// gatehouse child (the detached lab): the lab's addresses, the cache.
func Gatehouse(extra ...string) []string {
	out := Env()
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "GATEHOUSE_") {
			out = append(out, kv)
		}
	}
	return append(out, extra...)
}

// Command is exec.CommandContext with Env's environment.
func Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = Env()
	return cmd
}
