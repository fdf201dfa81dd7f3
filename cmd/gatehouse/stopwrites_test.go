package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// lateWriter is a platform stop that leaves a worker of its own behind: a
// host process, outside the session's cgroup and network namespace (so no
// watch of the session sees it), that holds the session's heartbeat file
// in /workspace open and goes on appending the session's own beat line
// for 10 s after the stop (long enough to outlast a slow stop on a busy
// machine). Only the write search can see it.
// (Shell builtins only in the search of /proc: a fork per process made
// the stop itself seconds late on a busy machine.)
const lateWriter = `for d in /proc/[0-9]*; do
	[ "$d/ns/net" -ef "$GATEHOUSE_NETNS" ] && ! [ "$d/root" -ef / ] && [ -d "$d/root/workspace" ] || continue
	cd "$d/root/workspace" && break
done
i=0
while :; do
	set -- .gatehouse-heartbeat-*-main
	[ -f "$1" ] && break
	i=$((i+1)); [ $i -lt 20 ] || exit 1
	sleep 0.1
done
line=$(tail -n 1 "$1")
exec 3>>"$1"
echo "$GATEHOUSE_SESSION" >>"$ATTACHED"
setsid sh -c 'i=0; while [ $i -lt 100 ]; do echo "$0" >&3; sleep 0.1; i=$((i+1)); done' "$line" </dev/null >/dev/null 2>&1 &
`

// stop-signal looks for writes after the stop where the session's
// read-write binds really are on the host: on bubblewrap's normal path
// those are doors (/run/gatehouse-doors/...), which do not exist on the
// host as named. A write as the session after it was seen gone FAILs; the
// writes of the scenario's other sessions in a folder bound into every
// session (issue 22) do not.
func TestStopWritesInTheSessionsBinds(t *testing.T) {
	needSandbox(t)
	// The worker notes each session it attached to: where the fixture
	// found no session to attach to (a race of its own /proc search),
	// there was no attack, and nothing to judge.
	attached := filepath.Join(t.TempDir(), "attached")
	script := filepath.Join(t.TempDir(), "stop.sh")
	if err := os.WriteFile(script, []byte("ATTACHED="+attached+"\n"+lateWriter), 0o644); err != nil {
		t.Fatal(err)
	}
	// A team folder bound read-write into every session, in which another
	// session (of another scenario, or of a run beside this one) keeps
	// writing while the stops are measured: issue 22's gatehouse-state.
	shared := t.TempDir()
	openToUsers(t, shared)
	if err := os.Chmod(shared, os.ModeSticky|0o777); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		edit func(string) string
		peer bool // another session writes in the shared folder meanwhile
		late bool // the late writer must have attached for the case to mean anything
		want want
	}{
		{
			name: "a worker left by the stop writes as the session into its storage",
			edit: replace("limits:\n  stop: 5s", "limits:\n  stop: 5s\n  stop_command: [/bin/sh, "+script+"]"),
			late: true,
			want: want{evidence.Fail, "write(s) after the session was seen gone"},
		},
		{
			name: "harmless: the scenario's sessions share one /workspace",
			edit: replace(`    - "{{place:storage}}"`, `    - "{{place:shared}}/cache"`),
			want: want{evidence.Pass, ""},
		},
		{
			name: "harmless: a team folder at /workspace that another session writes in",
			edit: replace(`    - "{{place:storage}}"`, `    - "`+shared+`"`),
			peer: true,
			want: want{evidence.Pass, ""},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.peer {
				stop := writeAsAnotherSession(t, shared)
				defer stop()
			}
			prof := oneMistake(t, tt.edit)
			if tt.late {
				r := runProfileAt(t, prof, "stop-signal")
				b, _ := os.ReadFile(attached)
				if len(b) == 0 {
					t.Skipf("the late writer attached to no session (its own /proc search raced the stop): no attack was made\nstdout:\n%s", r.stdout)
				}
				if len(r.results) != 2 {
					t.Fatalf("want 2 results, got %d\nstdout:\n%s\nstderr:\n%s", len(r.results), r.stdout, r.stderr)
				}
				judged := 0
				for _, res := range r.results {
					// A path none of whose stop runs the worker attached
					// to (its /proc search raced a stop, on a busy
					// machine) had no attack made: nothing to judge.
					if !attachedTo(b, res.Stops) {
						t.Logf("%s/%s: the late writer attached to none of its stop runs (%s): not judged", res.Gate, res.Path, bytes.TrimSpace(b))
						continue
					}
					judged++
					if res.Verdict != tt.want.verdict || !containsAll(res.Reason, tt.want.reason) {
						t.Errorf("%s/%s: %s (%s)\nwant %s with %q", res.Gate, res.Path, res.Verdict, res.Reason, tt.want.verdict, tt.want.reason)
					}
				}
				if judged == 0 {
					t.Skipf("the late writer attached to no stop run of either path: no attack was made")
				}
				return
			}
			checkGatesOn(t, prof, "stop-signal", map[string]want{"stop-signal": tt.want})
		})
	}
}

// writeAsAnotherSession appends, until stopped, what another session's
// probe writes (a heartbeat line and a state note, each with a canary of
// its own) to files in dir.
func writeAsAnotherSession(t *testing.T, dir string) (stop func()) {
	t.Helper()
	other := "ghc" + strconv.FormatInt(time.Now().UnixNano(), 16)
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			for name, line := range map[string]string{
				wire.HeartbeatName(other) + "-main": wire.BeatLine(other),
				"gatehouse-state":                   "GATEHOUSE STATE " + other + "\n",
			} {
				f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
				if err == nil {
					_, _ = f.WriteString(line)
					f.Close()
				}
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() { close(done); <-finished }
}

// attachedTo says whether the late writer noted one of stops' sessions.
func attachedTo(noted []byte, stops []evidence.StopSent) bool {
	for _, line := range bytes.Fields(noted) {
		for _, st := range stops {
			if string(line) == st.Session {
				return true
			}
		}
	}
	return false
}
