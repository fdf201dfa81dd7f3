// Package targettest is the conformance suite every target adapter's tests
// call: exit codes are data, output and environment arrive, stdin works,
// cancellation really stops the command, Stop is idempotent and final,
// files can be copied in and read back, Inspect reports something.
//
// The suite runs /bin/sh inside the sandbox and uses only its builtins plus
// sleep, and it needs a writable folder shared by all Execs of a session
// (WorkDir), where it detects from outside whether a cancelled command is
// really gone.
package targettest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/targets"
)

// Paths the suite uses inside the sandbox.
const (
	WorkDir  = "/gatehouse/work"        // writable, shared by a session's Execs
	SpecFile = "/gatehouse/suite/hello" // placed through Spec.Files
	CopyFile = "/gatehouse/suite-copy"  // written with CopyIn
	specText = "hello from the spec"
)

// Shell scripts the suite runs with /bin/sh -c SCRIPT sh ARG.
const (
	shExit   = `exit "$1"`
	shOutput = `echo out; echo err >&2`
	shEnv    = `printf '%s|%s' "$GH_SUITE_SPEC" "$GH_SUITE_CMD"`
	shStdin  = `read -r l; printf 'got:%s' "$l"`
	shRead   = `IFS= read -r l < "$1" && printf '%s' "$l"`
	shBeat   = `while :; do echo beat >> "$1"; sleep 0.2; done`
	shCount  = `[ -f "$1" ] || { echo 0; exit 0; }; n=0; while read -r l; do n=$((n+1)); done < "$1"; echo $n`
	// shLeave starts a background process named $1 that outlives the
	// command, and writes its pid to $2. shSeek finds it: its pid must be
	// live in the seeker's pid namespace (kill -0) and a process named $1
	// must show in /proc (the seeker itself, whose arguments also name $2,
	// aside). Not /proc/$pid: a wrapper may leave a /proc of an outer pid
	// namespace (srt started as root does), where that number is another
	// process although both commands share one sandbox.
	shLeave = `sh -c 'while :; do sleep 1; done' "$1" >/dev/null 2>&1 </dev/null & echo $! > "$2"`
	shSeek  = `IFS= read -r p < "$2" || exit 1; kill -0 "$p" 2>/dev/null || exit 1; for f in /proc/[0-9]*/cmdline; do IFS= read -r c < "$f" 2>/dev/null; case "$c" in *"$2"*) ;; *"$1"*) printf alive; exit 0 ;; esac; done`
)

// Timeouts are generous: machines running the suite are shared and slow.
const (
	callTimeout = 60 * time.Second
	killBound   = 30 * time.Second
)

// NewTarget returns a target and the spec to start its sessions with
// (network, path, ...). It registers its own cleanups on t.
type NewTarget func(t *testing.T) (targets.Target, targets.Spec)

// Run runs the conformance suite as subtests of t.
func Run(t *testing.T, newTarget NewTarget) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.run(t, newTarget) })
	}
}

type testCase struct {
	name string
	run  func(t *testing.T, nt NewTarget)
}

// start starts a session with the suite's env and file added to the spec.
func start(t *testing.T, nt NewTarget) (targets.Target, targets.Session) {
	t.Helper()
	tg, spec := nt(t)
	env := map[string]string{"GH_SUITE_SPEC": "spec-value"}
	for k, v := range spec.Env {
		env[k] = v
	}
	files := map[string]targets.File{SpecFile: {Data: []byte(specText + "\n"), Mode: 0o644}}
	for k, v := range spec.Files {
		files[k] = v
	}
	spec.Env, spec.Files = env, files
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	s, err := tg.Start(ctx, spec)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		defer cancel()
		if err := s.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
		// A profile whose stop leaves processes (stop scope process) is
		// ended by the harness's own teardown, as a run ends it.
		if rp, ok := s.(interface{ Reap(context.Context) error }); ok {
			if err := rp.Reap(ctx); err != nil {
				t.Errorf("Reap: %v", err)
			}
		}
	})
	return tg, s
}

// output is what one Exec produced.
type output struct {
	res            targets.Result
	stdout, stderr string
	err            error
}

func sh(ctx context.Context, s targets.Session, script string, args []string, mod func(*targets.Command)) output {
	var out, errb bytes.Buffer
	c := targets.Command{Args: append([]string{"/bin/sh", "-c", script, "sh"}, args...), Stdout: &out, Stderr: &errb}
	if mod != nil {
		mod(&c)
	}
	res, err := s.Exec(ctx, c)
	return output{res: res, stdout: out.String(), stderr: errb.String(), err: err}
}

// must runs a script that has to succeed with exit 0.
func must(t *testing.T, s targets.Session, script string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	o := sh(ctx, s, script, args, nil)
	if o.err != nil || o.res.ExitCode != 0 {
		t.Fatalf("sh -c %q: exit %d, err %v, stderr %q", script, o.res.ExitCode, o.err, o.stderr)
	}
	return o.stdout
}

func randomName(prefix string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

func trim(s string) string { return strings.TrimSpace(s) }
