package docker

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gatehouse-dev/gatehouse/internal/targets/docker/ocishim"
)

// writeShimScript writes the executable the daemon runs as runtime name.
// Only a create (or run) needs ShimMain, a Go process that takes 10-20 ms
// to start (its bundle config is edited); a session makes about six other
// runtime calls (start, exec, kill, delete...), and for those the script
// does itself what ShimMain would: run the real runtime with the same
// arguments, plus the container's runtime flags before the verb when its
// entry has some (flagsPath holds them as shell words). An argument that
// looks like create or run anywhere sends the call to ShimMain.
func writeShimScript(stateDir, name, real string, shim []string) (string, error) {
	dir := filepath.Join(stateDir, "rt")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	sessions := shellWords(filepath.Join(stateDir, "sessions"))
	slow := "exec " + shellWords(append(append([]string{}, shim...), "--real", real, "--sessions", filepath.Join(stateDir, "sessions"), "--")...) + ` "$@"`
	verbs := slices.Sorted(maps.Keys(ocishim.Verbs))
	body := `#!/bin/sh
f= x=
for a in "$@"; do
	case $a in create|run) ` + slow + ` ;; exec) x=1 ;; esac
	# An exec in a container whose root gets the assume-breach path's
	# capabilities: ShimMain edits its process spec.
	if [ -n "$x" ] && [ -e ` + sessions + `/"$a".caps ]; then ` + slow + `; fi
	if [ -e ` + sessions + `/"$a".flags ]; then
		read -r f < ` + sessions + `/"$a".flags
		[ -n "$f" ] || ` + slow + `
		break
	fi
done
[ -n "$f" ] || exec ` + shellWords(real) + ` "$@"
# The flags go just before the first verb, as ShimMain puts them.
n=$# v=
for a in "$@"; do
	if [ -z "$v" ]; then
		case $a in ` + strings.Join(verbs, "|") + `) eval "set -- \"\$@\" $f"; v=1 ;; esac
	fi
	set -- "$@" "$a"
done
shift $n
exec ` + shellWords(real) + ` "$@"
`
	path := filepath.Join(dir, name)
	return path, os.WriteFile(path, []byte(body), 0o700)
}

// flagsPath holds a container's runtime flags as one line of shell words
// (empty when a flag holds a newline: the script then takes ShimMain).
func flagsPath(dir, id string) string { return filepath.Join(dir, id+".flags") }

// capsPath marks a container whose root execs ShimMain must edit.
func capsPath(dir, id string) string { return filepath.Join(dir, id+".caps") }

func flagsLine(flags []string) string {
	for _, f := range flags {
		if strings.ContainsAny(f, "\n\r") {
			return "\n"
		}
	}
	return shellWords(flags...) + "\n"
}

// shellWords quotes each word for sh (single quotes; a quote inside is
// closed, escaped and reopened).
func shellWords(words ...string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}
