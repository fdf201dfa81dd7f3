// Package hostwrite takes back what a sandboxed probe wrote on the host
// itself: a sandbox that shows the host's own folders (firejail as root
// writing the host's /, a wrapper that binds the host's /tmp, a shared
// /tmp/claude) lets the probe's notes and channel files land there, where
// no teardown of the session removes them.
//
// Only the run's own bytes are taken back, never anything that merely has
// the same name: a file loses exactly the payloads the run wrote into it
// (each holds a value the run minted, so no one else's bytes can match),
// and it is removed only when nothing else is left in it and it was made
// during the run; a folder or a socket goes only when the run made it
// (born after the plan that may write it was sent, or seen absent then) and,
// for a folder, when it is empty and not a mount point. Every path is
// resolved below a host folder with no link followed (the sandbox may have
// swapped the path for a link to a host file) and no FIFO or device
// opened.
package hostwrite

import (
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
	"time"
)

// Forms of what the probe left.
const (
	File   = "file"   // a regular file the run's payloads were written or appended to
	Folder = "folder" // a folder made above such a file
	Socket = "socket" // a Unix socket file a receiver listened on
)

// MinPayload is the least a payload may be: each carries a value the run
// minted (16 random hex digits and a prefix), so it cannot be anyone
// else's bytes.
const MinPayload = 16

// Write is one place the probe may have written on the host.
type Write struct {
	// Under is a host folder opened with no link in its path (the mount
	// point holding the place); Rel is the place below it, resolved with
	// no link and never above Under.
	Under string `json:"under"`
	Rel   string `json:"rel"`
	Form  string `json:"form"`
	// Payloads, for a File, are the exact bytes each write put there.
	Payloads []string `json:"payloads,omitempty"`
	// Since is when the plan that may write the place was sent: what was
	// born after it is the run's; what was there before is not. Folders
	// the harness or a daemon makes during the run, before the plan, are
	// never taken for the probe's.
	Since time.Time `json:"since"`
	// Absent says nothing was at the place when the harness looked, before
	// the plan that may write it was sent: what is there now was made by
	// the run, on file systems that do not tell birth times too.
	Absent bool `json:"absent,omitempty"`
	// Mapped says the session's mount table put its view of the place
	// here: a place that cannot be checked is then a leftover. Otherwise
	// it is only the same path on the host, looked at in case.
	Mapped bool `json:"mapped,omitempty"`
}

// Leftover says whether an error from Undo means something of the run's
// may still be on the host: the run's bytes were found and stay, or a
// place the session really saw could not be checked.
func (w Write) Leftover(err error) bool {
	return err != nil && (w.Mapped || errors.Is(err, ErrLeft))
}

// Path is the place's host path.
func (w Write) Path() string { return path.Join(w.Under, w.Rel) }

// Check refuses a Write that is not one: a damaged or forged record must
// not become a way to edit the host.
func (w Write) Check() error {
	switch {
	case !path.IsAbs(w.Under) || path.Clean(w.Under) != w.Under:
		return fmt.Errorf("hostwrite: folder %q is not a clean absolute path", w.Under)
	case w.Rel == "" || w.Rel == "." || path.IsAbs(w.Rel) || path.Clean(w.Rel) != w.Rel || w.Rel == ".." || strings.HasPrefix(w.Rel, "../"):
		return fmt.Errorf("hostwrite: %q is not a clean path below %s", w.Rel, w.Under)
	case w.Since.IsZero():
		return fmt.Errorf("hostwrite: %s: no start time", w.Path())
	}
	switch w.Form {
	case File:
		if len(w.Payloads) == 0 {
			return fmt.Errorf("hostwrite: %s: a file with no payload", w.Path())
		}
		for _, p := range w.Payloads {
			if len(p) < MinPayload {
				return fmt.Errorf("hostwrite: %s: a payload shorter than %d bytes could be anyone's", w.Path(), MinPayload)
			}
		}
	case Folder, Socket:
	default:
		return fmt.Errorf("hostwrite: %s: unknown form %q", w.Path(), w.Form)
	}
	return nil
}

// Outcome is what Undo did.
type Outcome int

const (
	// Nothing of the run's was there (never written, or already gone).
	Nothing Outcome = iota
	// Removed: the place held only what the run wrote or made; it is gone.
	Removed
	// Restored: the run's payloads were taken out of a file that stays
	// (someone else's content is in it, or it was there before the run).
	Restored
)

func (o Outcome) String() string {
	switch o {
	case Removed:
		return "removed"
	case Restored:
		return "restored"
	}
	return "nothing"
}

// ErrLeft means the run's write was found and is still there.
var ErrLeft = errors.New("left on the host")

// Merge joins the writes to one place into one (every payload, the
// earliest Since, Absent if any look found the place absent) and orders
// them for undoing: files and sockets first, then folders deepest first,
// so that a folder is emptied before it is tried.
func Merge(ws []Write) []Write {
	type key struct{ under, rel, form string }
	idx := map[key]int{}
	var out []Write
	for _, w := range ws {
		k := key{w.Under, w.Rel, w.Form}
		i, ok := idx[k]
		if !ok {
			idx[k] = len(out)
			w.Payloads = append([]string(nil), w.Payloads...)
			out = append(out, w)
			continue
		}
		m := &out[i]
		for _, p := range w.Payloads {
			if !contains(m.Payloads, p) {
				m.Payloads = append(m.Payloads, p)
			}
		}
		if w.Since.Before(m.Since) {
			m.Since = w.Since
		}
		m.Absent = m.Absent || w.Absent
		m.Mapped = m.Mapped || w.Mapped
	}
	sort.SliceStable(out, func(i, j int) bool {
		fi, fj := out[i].Form == Folder, out[j].Form == Folder
		if fi != fj {
			return fj
		}
		if fi {
			return depth(out[i].Path()) > depth(out[j].Path())
		}
		return false
	})
	return out
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func depth(p string) int { return strings.Count(p, "/") }
