package steps

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
	"github.com/gatehouse-dev/gatehouse/targets"
)

const (
	ownCanary  = "ghc00000000000000aa"
	peerCanary = "ghc00000000000000bb"
)

// writeAt writes a file and sets its modification time: early or late is
// set, not waited for.
func writeAt(t *testing.T, p, content string, mtime time.Time) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, mtime, mtime); err != nil {
		t.Fatal(err)
	}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// The stop gate searches the session's writable folders for writes made
// after its stop. A folder there swapped for a link to the host's /proc
// (whose entries are always new) once listed is not entered: only the
// session's own files can be named, and the host's never.
func TestWritesStayInTheSessionsFolders(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "x")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	since := time.Now()
	writeAt(t, filepath.Join(dir, "late"), wire.BeatLine(ownCanary), since.Add(time.Second))
	listedHook = func(rel string) {
		if rel == "x" {
			if err := os.Remove(sub); err != nil {
				t.Error(err)
			}
			if err := os.Symlink("/proc", sub); err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(func() { listedHook = nil })
	b := openBinds(targets.Config{Target: "bwrap", Argv: []string{"bwrap", "--bind", dir, "/workspace", "--"}}, since, nil)
	defer b.Close()
	got := writes(testCtx(t), b, since, ownCanary)
	if !slices.Equal(got.own, []string{filepath.Join(dir, "late")}) || len(got.unsearched) > 0 {
		t.Fatalf("writes = %+v, want only %s", got, filepath.Join(dir, "late"))
	}
}

// Which read-write binds a stop's search covers, and where on the host it
// looks: bwrap's doors (/run/gatehouse-doors/..., which do not exist on the
// host as named) are looked for where the target says they come from; a
// bind that cannot be opened is said, so the stop is no PASS.
func TestOpenBindsFindsTheHostFolders(t *testing.T) {
	door := "/run/gatehouse-doors/place-07-storage"
	tests := []struct {
		name string
		// cfg builds the runtime's report from a host folder holding the
		// session's late write (late/), and a scratch folder.
		cfg            func(t *testing.T, late, scratch string) targets.Config
		wantFound      bool // the late write is found
		wantUnresolved string
	}{
		{"a door is looked for where the target says it comes from", func(t *testing.T, late, _ string) targets.Config {
			return targets.Config{Target: "bwrap", Argv: []string{"bwrap", "--bind", door, "/workspace", "--"}, Sources: map[string]string{door: late}}
		}, true, ""},
		{"a door the target did not map is not searched, and said", func(t *testing.T, late, _ string) targets.Config {
			return targets.Config{Target: "bwrap", Argv: []string{"bwrap", "--bind", door, "/workspace", "--"}}
		}, false, door},
		{"a host folder bound as is", func(t *testing.T, late, _ string) targets.Config {
			return targets.Config{Target: "bwrap", Argv: []string{"bwrap", "--bind", late, "/workspace", "--"}}
		}, true, ""},
		{"a --bind-try of nothing bound nothing", func(t *testing.T, _, scratch string) targets.Config {
			return targets.Config{Target: "bwrap", Argv: []string{"bwrap", "--bind-try", filepath.Join(scratch, "none"), "/x", "--"}}
		}, false, ""},
		{"a bind source that is a link made during the run is not followed", func(t *testing.T, late, scratch string) targets.Config {
			l := filepath.Join(scratch, "link")
			if err := os.Symlink(late, l); err != nil {
				t.Fatal(err)
			}
			return targets.Config{Target: "bwrap", Argv: []string{"bwrap", "--bind", l, "/workspace", "--"}}
		}, false, "link"},
		{"a file bound read-write", func(t *testing.T, late, _ string) targets.Config {
			return targets.Config{Target: "bwrap", Argv: []string{"bwrap", "--bind", filepath.Join(late, wire.HeartbeatName(ownCanary)+"-main"), "/hb", "--"}}
		}, true, ""},
		{"a socket bound read-write is looked at, never opened", func(t *testing.T, late, scratch string) targets.Config {
			l, err := net.Listen("unix", filepath.Join(scratch, "docker.sock"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
			return targets.Config{Target: "bwrap", Argv: []string{"bwrap", "--bind", filepath.Join(scratch, "docker.sock"), "/var/run/docker.sock", "--"}}
		}, false, ""},
		{"a docker read-write bind mount", func(t *testing.T, late, _ string) targets.Config {
			return targets.Config{Target: "docker", Mounts: []string{"bind " + late + " -> /workspace (rw)"}}
		}, true, ""},
		{"a docker container's own command line is not a bind list", func(t *testing.T, _, scratch string) targets.Config {
			return targets.Config{Target: "docker", Argv: []string{"/probe", "--bind", filepath.Join(scratch, "none"), "/x"}}
		}, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := time.Now()
			late, scratch := t.TempDir(), t.TempDir()
			since := before.Add(time.Minute)
			hb := filepath.Join(late, wire.HeartbeatName(ownCanary)+"-main")
			writeAt(t, hb, wire.BeatLine(ownCanary), since.Add(time.Second))
			b := openBinds(tt.cfg(t, late, scratch), before, nil)
			defer b.Close()
			got := writes(testCtx(t), b, since, ownCanary)
			if found := slices.Contains(got.own, hb); found != tt.wantFound {
				t.Errorf("late write found = %v, want %v (writes %+v)", found, tt.wantFound, got)
			}
			switch {
			case tt.wantUnresolved == "" && len(b.unresolved) > 0:
				t.Errorf("unresolved %q, want none", b.unresolved)
			case tt.wantUnresolved != "" && (len(b.unresolved) != 1 || !strings.Contains(b.unresolved[0], tt.wantUnresolved)):
				t.Errorf("unresolved %q, want one naming %s", b.unresolved, tt.wantUnresolved)
			}
		})
	}
}

// A folder bound into every session holds every session's writes: a
// write after the stopped session was seen gone counts against it only
// when it carries its mark, and a search that could not finish is said,
// never taken for "nothing there".
func TestWritesAfterTheStopAreTheSessionsOnlyByItsMark(t *testing.T) {
	tests := []struct {
		name string
		// fill puts files in the shared folder; since is the moment the
		// session was seen gone.
		fill           func(t *testing.T, dir string, since time.Time)
		wantOwn        int
		wantOther      int
		wantUnsearched string
	}{
		{"a peer's heartbeat after the stop is not the session's", func(t *testing.T, dir string, since time.Time) {
			writeAt(t, filepath.Join(dir, wire.HeartbeatName(ownCanary)+"-main"), wire.BeatLine(ownCanary), since.Add(-time.Second))
			writeAt(t, filepath.Join(dir, wire.HeartbeatName(peerCanary)+"-main"), wire.BeatLine(peerCanary), since.Add(time.Second))
		}, 0, 1, ""},
		{"another gate's state file written after the stop is not the session's", func(t *testing.T, dir string, since time.Time) {
			writeAt(t, filepath.Join(dir, "gatehouse-state"), "GATEHOUSE STATE ghc00000000000000cc\n", since.Add(time.Second))
		}, 0, 1, ""},
		{"the session's own heartbeat after the stop is", func(t *testing.T, dir string, since time.Time) {
			writeAt(t, filepath.Join(dir, wire.HeartbeatName(peerCanary)+"-main"), wire.BeatLine(peerCanary), since.Add(time.Second))
			writeAt(t, filepath.Join(dir, wire.HeartbeatName(ownCanary)+"-child"), wire.BeatLine(ownCanary), since.Add(time.Second))
		}, 1, 1, ""},
		{"a file of any name carrying the session's canary is", func(t *testing.T, dir string, since time.Time) {
			writeAt(t, filepath.Join(dir, "sub", "notes.txt"), "x\n"+ownCanary+"\n", since.Add(time.Second))
		}, 1, 0, ""},
		{"a file past the read bound without the canary in reach is not searched", func(t *testing.T, dir string, since time.Time) {
			writeAt(t, filepath.Join(dir, "padded"), strings.Repeat("x", maxMarkRead+10)+ownCanary, since.Add(time.Second))
		}, 0, 0, "padded"},
		{"a tree past the entry bound is not searched to its end", func(t *testing.T, dir string, since time.Time) {
			for i := range maxWriteEntries + 1 {
				writeAt(t, filepath.Join(dir, fmt.Sprintf("f%05d", i)), "", since.Add(-time.Second))
			}
		}, 0, 0, "past its bound"},
		{"a FIFO made after the stop is not opened", func(t *testing.T, dir string, since time.Time) {
			if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, 0, 1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			since := time.Now().Add(-time.Minute) // what is made now is after it
			tt.fill(t, dir, since)
			b := openBinds(targets.Config{Target: "bwrap", Argv: []string{"bwrap", "--bind", dir, "/workspace", "--"}}, time.Now(), nil)
			defer b.Close()
			got := writes(testCtx(t), b, since, ownCanary)
			if len(got.own) != tt.wantOwn || len(got.other) != tt.wantOther {
				t.Errorf("own %q, other %q: want %d and %d", got.own, got.other, tt.wantOwn, tt.wantOther)
			}
			switch {
			case tt.wantUnsearched == "" && len(got.unsearched) > 0:
				t.Errorf("unsearched %q, want none", got.unsearched)
			case tt.wantUnsearched != "" && (len(got.unsearched) == 0 || !strings.Contains(strings.Join(got.unsearched, "; "), tt.wantUnsearched)):
				t.Errorf("unsearched %q, want it to say %q", got.unsearched, tt.wantUnsearched)
			}
		})
	}
}

// A bind the stop removed (the session's work folder, under what the
// target created) has nothing left to search; a team's folder removed
// after the stop is a search that could not be made.
func TestWritesInABindRemovedByTheStop(t *testing.T) {
	tests := []struct {
		name       string
		removable  bool
		unsearched bool
	}{
		{"under what the stop removes", true, false},
		{"a folder the stop does not remove", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "work")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			var removed []string
			if tt.removable {
				removed = []string{root}
			}
			b := openBinds(targets.Config{Target: "bwrap", Argv: []string{"bwrap", "--bind", dir, "/w", "--"}}, time.Now(), removed)
			defer b.Close()
			if err := os.Remove(dir); err != nil {
				t.Fatal(err)
			}
			got := writes(testCtx(t), b, time.Now(), ownCanary)
			if (len(got.unsearched) > 0) != tt.unsearched {
				t.Errorf("unsearched %q, want some: %v", got.unsearched, tt.unsearched)
			}
		})
	}
}

// Storage the stop removes is looked for without following a link: a
// link left where storage was is something left (not what it points at),
// and a link planted on the way there is not followed.
func TestStorageLeftFollowsNoLink(t *testing.T) {
	tests := []struct {
		name        string
		plant       func(t *testing.T, root, p string)
		wantLeft    bool
		wantUnknown bool
	}{
		{"nothing left", func(t *testing.T, root, p string) {}, false, false},
		{"a folder left", func(t *testing.T, root, p string) {
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
		}, true, false},
		{"a link to nothing left where storage was", func(t *testing.T, root, p string) {
			if err := os.Symlink(filepath.Join(root, "nowhere"), p); err != nil {
				t.Fatal(err)
			}
		}, true, false},
		{"a link to a FIFO left where storage was", func(t *testing.T, root, p string) {
			if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(root, "fifo"), p); err != nil {
				t.Fatal(err)
			}
		}, true, false},
		{"a link planted on the way, to a folder holding the name", func(t *testing.T, root, p string) {
			other := filepath.Join(root, "other")
			if err := os.MkdirAll(filepath.Join(other, filepath.Base(p)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(filepath.Dir(p)); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(other, filepath.Dir(p)); err != nil {
				t.Fatal(err)
			}
		}, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := time.Now()
			root := t.TempDir()
			p := filepath.Join(root, "parent", "storage")
			if err := os.Mkdir(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			tt.plant(t, root, p)
			left, unknown := storageLeft([]string{p}, before)
			if (len(left) == 1) != tt.wantLeft || (len(unknown) == 1) != tt.wantUnknown {
				t.Errorf("left %q, unknown %q: want left %v, unknown %v", left, unknown, tt.wantLeft, tt.wantUnknown)
			}
		})
	}
}

// A backward step of the wall clock after the session was seen gone makes
// its later writes carry earlier times: those that fall within the step
// are said (INCONCLUSIVE), never missed, and without a step nothing is.
func TestWritesWithinAClockStepAreUndecided(t *testing.T) {
	dir := t.TempDir()
	goneWall := time.Now().Add(-time.Minute)
	since := goneWall.Add(2 * wire.HeartbeatEvery)
	// Written after the stop, stamped 3 s before since: the clock stepped
	// back 5 s meanwhile.
	writeAt(t, filepath.Join(dir, wire.HeartbeatName(ownCanary)+"-child"), wire.BeatLine(ownCanary), since.Add(-3*time.Second))
	// Well before the step's reach: the session's own, from before the stop.
	writeAt(t, filepath.Join(dir, "older"), ownCanary+"\n", since.Add(-time.Hour))
	b := openBinds(targets.Config{Target: "bwrap", Argv: []string{"bwrap", "--bind", dir, "/workspace", "--"}}, time.Now(), nil)
	defer b.Close()
	ctx := testCtx(t)
	own := len(writes(ctx, b, since, ownCanary).own)
	require.Zero(t, own, "the search from since misses the write: the false PASS this guards")

	// 10 s went by on the monotonic clock, 5 s on the wall clock: it
	// stepped back 5 s.
	gap := clockStepWrites(ctx, b, since, goneWall, goneWall.Add(5*time.Second), 10*time.Second, ownCanary, own)
	require.Contains(t, gap, "stepped back 5s")
	require.Contains(t, gap, "1 write(s)")
	require.NotContains(t, gap, "older")

	// No step: nothing is said.
	require.Empty(t, clockStepWrites(ctx, b, since, goneWall, goneWall.Add(10*time.Second), 10*time.Second, ownCanary, own))
}
