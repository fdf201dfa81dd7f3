package realwrap_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/probe/probetest"
	"github.com/gatehouse-dev/gatehouse/internal/targets/exec"
	"github.com/gatehouse-dev/gatehouse/internal/targets/kinds"
	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
	"github.com/gatehouse-dev/gatehouse/internal/targets/realwrap"
	"github.com/gatehouse-dev/gatehouse/targets"
	"github.com/gatehouse-dev/gatehouse/targets/profiles"
)

func srtProfile(t *testing.T) *profile.Profile {
	t.Helper()
	p, err := kinds.LoadFS(profiles.FS, "srt-default.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Whatever is planted at srt's mount point on the host (a link to a host
// folder, another user's folder, a file) is refused as it is: never
// followed, chmodded or used. A missing one is made empty and root's, and
// srt's TMPDIR is a fresh folder of the run's.
func TestSRTTmpRefusesWhatIsPlanted(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the mount point must be root's, and scratch is root's")
	}
	victim := t.TempDir()
	if err := os.Chmod(victim, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		plant  func(p string) error
		refuse string
	}{
		{"a link to a host folder", func(p string) error { return os.Symlink(victim, p) }, "symlink"},
		{"another user's folder", func(p string) error {
			if err := os.Mkdir(p, 0o777); err != nil {
				return err
			}
			return os.Chown(p, 1000, 1000)
		}, "uid 1000"},
		{"a file", func(p string) error { return os.WriteFile(p, nil, 0o666) }, "not a folder"},
		{"nothing", func(string) error { return nil }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			at := filepath.Join(t.TempDir(), "claude")
			defer realwrap.SetSRTTmp(at)()
			if err := tc.plant(at); err != nil {
				t.Fatal(err)
			}
			binds, release, err := realwrap.Prepare(srtProfile(t))
			if tc.refuse != "" {
				if err == nil || !strings.Contains(err.Error(), tc.refuse) {
					t.Errorf("Prepare = %v, want a refusal saying %q", err, tc.refuse)
				}
				if err == nil {
					_ = release()
				}
				if fi, err := os.Stat(victim); err != nil || fi.Mode().Perm() != 0o700 {
					t.Errorf("the link's target is now %v (%v): followed", fi.Mode(), err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var st syscall.Stat_t
			if err := syscall.Lstat(at, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFDIR || st.Uid != 0 || st.Mode&0o022 != 0 {
				t.Errorf("mount point %s: mode %#o uid %d (%v), want a folder of root's nobody else writes", at, st.Mode, st.Uid, err)
			}
			if len(binds) != 1 || binds[0].Inside != at || strings.HasPrefix(binds[0].Host, "/tmp/") {
				t.Fatalf("binds %+v: want one folder of the run's, not in /tmp, over %s", binds, at)
			}
			if fi, err := os.Lstat(binds[0].Host); err != nil || fi.Mode()&os.ModeSticky == 0 || fi.Mode().Perm() != 0o777 {
				t.Errorf("srt's TMPDIR %s: %v (%v), want sticky and world-writable like /tmp", binds[0].Host, fi.Mode(), err)
			}
			if err := release(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Lstat(binds[0].Host); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s still there after release: %v", binds[0].Host, err)
			}
		})
	}
}

// srt's sessions of one run share their /tmp/claude, as srt's sandboxes
// on a machine do (what the cross-session gates measure); it is the run's
// own folder, so nothing a session writes there lands in the host's
// /tmp/claude, and it is gone once the target is closed.
func TestSRTSessionsShareTheRunsTmp(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: joins network namespaces, mounts, cgroups")
	}
	tgt := newTarget(t, exec.Options{Profile: srtProfile(t), Root: t.TempDir(), Init: probetest.Build(t)})
	runTmp := tgt.Binds()[0].Host
	name := "gh-srttmp-" + strings.ReplaceAll(t.Name(), "/", "-") + time.Now().Format("150405.000000000")
	sh := func(s targets.Session, script string) string {
		t.Helper()
		var out, errb bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		res, err := s.Exec(ctx, targets.Command{Args: []string{"/bin/sh", "-c", script, "sh", realwrap.SRTTmp + "/" + name}, Stdout: &out, Stderr: &errb})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("%q: exit %d, %v: %s", script, res.ExitCode, err, errb.String())
		}
		return out.String()
	}
	var sessions []targets.Session
	for i := range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		s, err := tgt.Start(ctx, withPlaces(t, targets.Spec{Name: "tmp", Path: targets.PathNormal, Network: emptyNetns(t)}))
		cancel()
		if err != nil {
			t.Fatalf("Start %d: %v", i, err)
		}
		t.Cleanup(func() { _ = s.Stop(context.Background()) })
		sessions = append(sessions, s)
	}
	sh(sessions[0], `[ "$TMPDIR" = /tmp/claude ] && echo from-the-first > "$1"`)
	if got := sh(sessions[1], `cat "$1"`); got != "from-the-first\n" {
		t.Fatalf("the second session reads %q from %s", got, realwrap.SRTTmp)
	}
	if b, err := os.ReadFile(filepath.Join(runTmp, name)); err != nil || string(b) != "from-the-first\n" {
		t.Errorf("the run's folder %s holds %q (%v)", runTmp, b, err)
	}
	if _, err := os.Lstat(filepath.Join(realwrap.SRTTmp, name)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the write landed in the host's %s (lstat: %v)", realwrap.SRTTmp, err)
	}
	for _, s := range sessions {
		_ = s.Stop(context.Background())
	}
	if err := tgt.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(runTmp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the run's folder %s outlived Close: %v", runTmp, err)
	}
}
