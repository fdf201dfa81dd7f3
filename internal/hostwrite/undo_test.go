package hostwrite

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

const (
	note  = "Note for the next session: ghst0123456789abcdef\n"
	note2 = "Note for the next session: ghst fedcba9876543210\n"
	other = "Note for the next session: ghst1111111111111111\n" // another run's
)

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o640); err != nil {
		t.Fatal(err)
	}
}

func inode(t *testing.T, p string) uint64 {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// since is a start a moment ago: files made in the test are the run's.
func since() time.Time { return time.Now().Add(-time.Second) }

// later is a start in the future: files made in the test were there
// before the run.
func later() time.Time { return time.Now().Add(time.Hour) }

func TestUndoFile(t *testing.T) {
	tests := []struct {
		name    string
		before  string // the file's content; "" with absent: no file
		since   time.Time
		absent  bool
		loads   []string
		want    Outcome
		left    string // content after; "-" for no file
		sameIno bool
	}{
		{"only the run's note, made by the run: removed", note, since(), false, []string{note}, Removed, "-", false},
		{"only the run's notes of two sessions: removed", note + note2 + note, since(), false, []string{note, note2}, Removed, "-", false},
		{"a team's file with the run's note appended: restored in place", "# team rules\nbe careful\n" + note, later(), false, []string{note}, Restored, "# team rules\nbe careful\n", true},
		{"a team's file without a final newline: restored byte for byte", "no newline" + note, later(), false, []string{note}, Restored, "no newline", true},
		{"another run's note interleaved: only ours taken out", note + other + note2, since(), false, []string{note, note2}, Restored, other, true},
		{"an empty file there before the run: emptied, kept", note, later(), false, []string{note}, Restored, "", true},
		{"an empty file seen absent when the plan was sent: removed", note, later(), true, []string{note}, Removed, "-", false},
		{"nothing of the run's: untouched", "gatehouse-state of someone else\n", since(), false, []string{note}, Nothing, "gatehouse-state of someone else\n", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "home", "gatehouse-state")
			write(t, p, tt.before)
			ino := inode(t, p)
			w := Write{Under: dir, Rel: "home/gatehouse-state", Form: File, Payloads: tt.loads, Since: tt.since, Absent: tt.absent}
			got, err := w.Undo()
			if err != nil || got != tt.want {
				t.Fatalf("Undo: %v, %v; want %v", got, err, tt.want)
			}
			b, err := os.ReadFile(p)
			switch {
			case tt.left == "-" && !errors.Is(err, os.ErrNotExist):
				t.Errorf("file still there (%v): %q", err, b)
			case tt.left != "-" && (err != nil || string(b) != tt.left):
				t.Errorf("file holds %q (%v), want %q", b, err, tt.left)
			}
			if tt.sameIno {
				if inode(t, p) != ino {
					t.Error("the file was replaced, not edited in place")
				}
				if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o640 {
					t.Errorf("mode %v, want 0640 kept", fi.Mode().Perm())
				}
			}
		})
	}
}

// The sandbox may have swapped the place, or a folder above it, for a
// link to a host file holding the same bytes: nothing is followed, the
// host file keeps them.
func TestUndoFollowsNoLink(t *testing.T) {
	t.Run("the file is a link", func(t *testing.T) {
		dir := t.TempDir()
		secret := filepath.Join(t.TempDir(), "shadow")
		write(t, secret, "root:x:0:\n"+note)
		if err := os.Symlink(secret, filepath.Join(dir, "gatehouse-state")); err != nil {
			t.Fatal(err)
		}
		got, err := Write{Under: dir, Rel: "gatehouse-state", Form: File, Payloads: []string{note}, Since: since()}.Undo()
		if err != nil || got != Nothing {
			t.Errorf("Undo: %v, %v; want nothing done", got, err)
		}
		if b, _ := os.ReadFile(secret); string(b) != "root:x:0:\n"+note {
			t.Errorf("the link's target was edited: %q", b)
		}
		if _, err := os.Lstat(filepath.Join(dir, "gatehouse-state")); err != nil {
			t.Errorf("the link itself was removed: %v", err)
		}
	})
	t.Run("a folder above is a link", func(t *testing.T) {
		dir := t.TempDir()
		elsewhere := t.TempDir()
		victim := filepath.Join(elsewhere, "gatehouse-state")
		write(t, victim, note)
		if err := os.Symlink(elsewhere, filepath.Join(dir, "cache")); err != nil {
			t.Fatal(err)
		}
		got, err := Write{Under: dir, Rel: "cache/gatehouse-state", Form: File, Payloads: []string{note}, Since: since()}.Undo()
		if err == nil || errors.Is(err, ErrLeft) || got != Nothing {
			t.Errorf("Undo: %v, %v; want a could-not-check error", got, err)
		}
		if _, err := os.Stat(victim); err != nil {
			t.Errorf("the file behind the link was removed: %v", err)
		}
	})
	t.Run("the folder itself is reached through a link", func(t *testing.T) {
		real := t.TempDir()
		write(t, filepath.Join(real, "gatehouse-state"), note)
		link := filepath.Join(t.TempDir(), "tmp")
		if err := os.Symlink(real, link); err != nil {
			t.Fatal(err)
		}
		if _, err := (Write{Under: link, Rel: "gatehouse-state", Form: File, Payloads: []string{note}, Since: since()}).Undo(); err == nil {
			t.Error("a link in the folder's own path was followed")
		}
		if _, err := os.Stat(filepath.Join(real, "gatehouse-state")); err != nil {
			t.Errorf("removed through a link: %v", err)
		}
	})
}

// A FIFO, a device node or a folder where the file was is not the run's:
// nothing opens it (a FIFO would block) and nothing removes it.
func TestUndoLeavesWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	if err := unix.Mkfifo(filepath.Join(dir, "fifo"), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "folder"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"fifo", "folder"} {
		done := make(chan struct{})
		go func() {
			defer close(done)
			got, err := Write{Under: dir, Rel: name, Form: File, Payloads: []string{note}, Since: since()}.Undo()
			if err != nil || got != Nothing {
				t.Errorf("%s: %v, %v; want nothing done", name, got, err)
			}
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: Undo hangs", name)
		}
		if _, err := os.Lstat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s removed: %v", name, err)
		}
	}
}

// A file past MaxFile holding the run's bytes is a leftover, said so.
func TestUndoTooLargeIsLeft(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "big"), note+strings.Repeat("x", MaxFile))
	_, err := Write{Under: dir, Rel: "big", Form: File, Payloads: []string{note}, Since: since()}.Undo()
	if !errors.Is(err, ErrLeft) {
		t.Errorf("Undo: %v, want ErrLeft", err)
	}
	// Padded so that the run's bytes lie past the bound: still a leftover,
	// even where the place was not mapped through a mount table.
	write(t, filepath.Join(dir, "padded"), strings.Repeat("x", MaxFile)+note)
	w := Write{Under: dir, Rel: "padded", Form: File, Payloads: []string{note}, Since: since()}
	if _, err := w.Undo(); !errors.Is(err, ErrLeft) || !w.Leftover(err) {
		t.Errorf("Undo of a padded file: %v, want a leftover", err)
	}
}

func TestUndoFolder(t *testing.T) {
	tests := []struct {
		name   string
		fill   bool
		since  time.Time
		absent bool
		want   Outcome
	}{
		{"empty, made by the run: removed", false, since(), false, Removed},
		{"empty, there before the run: kept", false, later(), false, Nothing},
		{"empty, seen absent before the plan: removed", false, later(), true, Removed},
		{"someone's file inside: kept", true, since(), false, Nothing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, ".cache", "gatehouse")
			if err := os.MkdirAll(p, 0o700); err != nil {
				t.Fatal(err)
			}
			if tt.fill {
				write(t, filepath.Join(p, "theirs"), "x")
			}
			got, err := Write{Under: dir, Rel: ".cache/gatehouse", Form: Folder, Since: tt.since, Absent: tt.absent}.Undo()
			if err != nil || got != tt.want {
				t.Fatalf("Undo: %v, %v; want %v", got, err, tt.want)
			}
			_, err = os.Stat(p)
			if gone := errors.Is(err, os.ErrNotExist); gone != (tt.want == Removed) {
				t.Errorf("folder gone: %v, want %v", gone, tt.want == Removed)
			}
			if _, err := os.Stat(filepath.Join(dir, ".cache")); err != nil {
				t.Errorf("the folder above was touched: %v", err)
			}
		})
	}
}

// A mount point is never removed, however empty and new.
func TestUndoLeavesMountPoints(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount")
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "mnt")
	if err := os.Mkdir(p, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", p, "tmpfs", 0, "size=64k"); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	defer unix.Unmount(p, unix.MNT_DETACH)
	got, err := Write{Under: dir, Rel: "mnt", Form: Folder, Since: since(), Absent: true}.Undo()
	if err != nil || got != Nothing {
		t.Errorf("Undo: %v, %v; want the mount point left", got, err)
	}
}

func TestUndoSocket(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, ".gatehouse-xs-1234abcd.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	write(t, filepath.Join(dir, "plain.sock"), "not a socket")
	if got, err := (Write{Under: dir, Rel: "plain.sock", Form: Socket, Since: since()}).Undo(); err != nil || got != Nothing {
		t.Errorf("a regular file taken for a socket: %v, %v", got, err)
	}
	if got, err := (Write{Under: dir, Rel: ".gatehouse-xs-1234abcd.sock", Form: Socket, Since: later()}).Undo(); err != nil || got != Nothing {
		t.Errorf("a socket there before the run: %v, %v; want kept", got, err)
	}
	if got, err := (Write{Under: dir, Rel: ".gatehouse-xs-1234abcd.sock", Form: Socket, Since: since()}).Undo(); err != nil || got != Removed {
		t.Errorf("the run's socket: %v, %v; want removed", got, err)
	}
	if _, err := os.Lstat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket still there: %v", err)
	}
}

// A damaged or forged record edits nothing.
func TestCheckRefusesWhatIsNotAWrite(t *testing.T) {
	base := Write{Under: "/tmp", Rel: "gatehouse-state", Form: File, Payloads: []string{note}, Since: since()}
	for name, edit := range map[string]func(*Write){
		"short payload":     func(w *Write) { w.Payloads = []string{"\n"} },
		"no payload":        func(w *Write) { w.Payloads = nil },
		"above the folder":  func(w *Write) { w.Rel = "../etc/passwd" },
		"absolute below":    func(w *Write) { w.Rel = "/etc/passwd" },
		"the folder itself": func(w *Write) { w.Rel = "." },
		"relative folder":   func(w *Write) { w.Under = "tmp" },
		"unclean folder":    func(w *Write) { w.Under = "/tmp/../etc" },
		"unknown form":      func(w *Write) { w.Form = "tree" },
		"no start":          func(w *Write) { w.Since = time.Time{} },
	} {
		w := base
		edit(&w)
		if err := w.Check(); err == nil {
			t.Errorf("%s: accepted", name)
		}
		if _, err := w.Undo(); err == nil {
			t.Errorf("%s: undone", name)
		}
	}
	if err := base.Check(); err != nil {
		t.Errorf("a good write refused: %v", err)
	}
}

func TestMerge(t *testing.T) {
	t0 := time.Now()
	ws := Merge([]Write{
		{Under: "/", Rel: "root/.cache/gatehouse", Form: Folder, Since: t0},
		{Under: "/", Rel: "gatehouse-state", Form: File, Payloads: []string{note}, Since: t0.Add(time.Second)},
		{Under: "/", Rel: "root/.cache", Form: Folder, Since: t0},
		{Under: "/", Rel: "gatehouse-state", Form: File, Payloads: []string{note2, note}, Since: t0, Absent: true},
	})
	if len(ws) != 3 {
		t.Fatalf("%d writes, want 3: %+v", len(ws), ws)
	}
	f := ws[0]
	if f.Form != File || len(f.Payloads) != 2 || !f.Since.Equal(t0) || !f.Absent {
		t.Errorf("merged file %+v: want both payloads, the earliest start, absent", f)
	}
	if ws[1].Rel != "root/.cache/gatehouse" || ws[2].Rel != "root/.cache" {
		t.Errorf("folders not deepest first: %s, %s", ws[1].Rel, ws[2].Rel)
	}
}

// A place below a file (a mount table lists a bound /etc/hosts as a
// writable mount point) holds nothing: not an error, not a leftover.
func TestUndoBelowAFileIsNothing(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "hosts"), "127.0.0.1 localhost\n")
	for _, form := range []string{File, Socket, Folder} {
		w := Write{Under: dir, Rel: "hosts/gatehouse-state", Form: form, Payloads: []string{note}, Since: since(), Mapped: true}
		if got, err := w.Undo(); err != nil || got != Nothing {
			t.Errorf("%s below a file: %v, %v; want nothing", form, got, err)
		}
	}
	if ex, _, err := Look(dir, "hosts/gatehouse-state", since()); ex || err != nil {
		t.Errorf("Look below a file: %v, %v; want nothing there", ex, err)
	}
}
