package steps

import (
	"context"
	"fmt"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/hostwrite"
	"github.com/gatehouse-dev/gatehouse/internal/ledger"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// A sandbox that shows the probe the host's own folders (firejail as root
// writing the host's /, a wrapper binding the host's /tmp, srt's shared
// /tmp/claude) lets the probe's notes, channel files and heartbeats land
// on the host, where no teardown of the session removes them. The harness
// knows every place its probe writes (the plan names it, the report says
// where it really went), maps each to the host from the session's mount
// tables read from the host, notes it on the ledger before the plan is
// sent (so `gatehouse lab down` takes it back after a killed run), and
// takes the run's own bytes back once every session is gone
// (internal/hostwrite). What it cannot take back is counted in run.json.

// maxHostWrites bounds the places one run records: a report names at
// most wire.MaxWrote, but a run has many; past it, the rest count as
// leftovers (not looked for).
const maxHostWrites = 4096

// harnessRoot holds the harness's own folders: never a place of the
// probe's on the host, removed whole by their owners.
const harnessRoot = "/run/gatehouse"

// hostWrites is the run's record of the places on the host its probe may
// have written.
type hostWrites struct {
	mu      sync.Mutex
	host    []hostwrite.Mount // the harness's own mount table, read once
	hostErr error
	views   map[string]*hostwrite.View // by session
	// noted are the ledger releases of each place (path and form), by
	// payload: one note per payload, merged when taken back.
	noted   map[placeKey]map[string]func()
	writes  []hostwrite.Write
	dropped int
}

type placeKey struct{ path, form string }

func newHostWrites() *hostWrites {
	return &hostWrites{views: map[string]*hostwrite.View{}, noted: map[placeKey]map[string]func(){}}
}

// before notes the places a plan will write, before it is sent, and
// returns when: what is there already is not the run's, and what was
// born before it was not made by this plan.
func (h *hostWrites) before(ctx context.Context, r *runner, s *scenario, p wire.Plan) time.Time {
	sent := time.Now()
	if h == nil || !writing(p) {
		return sent
	}
	v := h.view(ctx, r, s)
	for _, w := range planned(p, v) {
		h.note(s, v, w, sent, true)
	}
	return sent
}

// after notes the places the probe says it wrote, and the folders it says
// it made, for the plan sent at sent.
func (h *hostWrites) after(ctx context.Context, r *runner, s *scenario, p wire.Plan, reps []wire.Report, sent time.Time) {
	if h == nil || !writing(p) {
		return
	}
	v := h.view(ctx, r, s)
	for _, w := range learned(p, reps) {
		h.note(s, v, w, sent, false)
	}
}

// note records each host place of one write on the run's list and its
// ledger; before the plan is sent, also the folders above a file that are
// not there yet (a stash makes the missing ones).
func (h *hostWrites) note(s *scenario, v *hostwrite.View, pw probeWrite, sent time.Time, planning bool) {
	if pw.form == hostwrite.File && (len(pw.payload) < hostwrite.MinPayload || len(wire.Tokens([]byte(pw.payload))) == 0) {
		return // not the run's beyond doubt: never taken back
	}
	for _, pl := range v.Places(pw.inside) {
		if h.harness(s, pl.Path) || (pw.form == hostwrite.Folder && !pl.Mapped) {
			// A folder is the probe's only where the session's view is
			// the host's: the same path elsewhere is someone else's.
			continue
		}
		under, rel := v.Split(pl.Path)
		if rel == "" {
			continue // a mount point itself is never the probe's
		}
		w := hostwrite.Write{Under: under, Rel: rel, Form: pw.form, Since: sent, Mapped: pl.Mapped}
		if pw.payload != "" {
			w.Payloads = []string{pw.payload}
		}
		exists, _, err := hostwrite.Look(under, rel, sent)
		w.Absent = planning && !exists && err == nil
		h.record(w, pw.payload)
		if !planning || !pl.Mapped || pw.form == hostwrite.Folder {
			continue
		}
		for dir := path.Dir(rel); dir != "." && dir != "/"; dir = path.Dir(dir) {
			if exists, _, err := hostwrite.Look(under, dir, sent); exists || err != nil {
				break
			}
			h.record(hostwrite.Write{Under: under, Rel: dir, Form: hostwrite.Folder, Since: sent, Absent: true, Mapped: true}, "")
		}
	}
}

// harness says whether a host path is one of the harness's own folders:
// the session's places and everything under /run/gatehouse, removed whole
// by their owners.
func (h *hostWrites) harness(s *scenario, p string) bool {
	if p == harnessRoot || strings.HasPrefix(p, harnessRoot+"/") {
		return true
	}
	for _, pl := range s.places {
		if pl != "" && (p == pl || strings.HasPrefix(p, strings.TrimSuffix(pl, "/")+"/")) {
			return true
		}
	}
	return false
}

func (h *hostWrites) record(w hostwrite.Write, payload string) {
	k := placeKey{w.Path(), w.Form}
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, done := h.noted[k][payload]; done {
		return
	}
	if len(h.writes) >= maxHostWrites {
		h.dropped++
		return
	}
	rel, _ := ledger.Record(ledger.Entry{Kind: ledger.ProbeWrite, What: w.Path(), Write: &w})
	if h.noted[k] == nil {
		h.noted[k] = map[string]func(){}
	}
	h.noted[k][payload] = rel
	h.writes = append(h.writes, w)
}

// undo takes the run's writes back once every session is gone, and says
// what it did. What it could not take back stays on the ledger, for
// `gatehouse lab down` to try again.
func (h *hostWrites) undo() *evidence.HostWrites {
	out := &evidence.HostWrites{}
	if h == nil {
		return out
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, w := range hostwrite.Merge(h.writes) {
		o, err := w.Undo()
		if w.Leftover(err) {
			out.Left++
			if len(out.LeftPaths) < evidence.MaxHostWritesListed {
				out.LeftPaths = append(out.LeftPaths, w.Path()+": "+err.Error())
			}
			continue
		}
		switch o {
		case hostwrite.Removed:
			out.Removed++
			if len(out.RemovedPaths) < evidence.MaxHostWritesListed {
				out.RemovedPaths = append(out.RemovedPaths, w.Path())
			}
		case hostwrite.Restored:
			out.Removed++
			if len(out.RemovedPaths) < evidence.MaxHostWritesListed {
				out.RemovedPaths = append(out.RemovedPaths, w.Path()+" (the run's lines taken out; the rest of the file kept)")
			}
		}
		k := placeKey{w.Path(), w.Form}
		for _, rel := range h.noted[k] {
			rel()
		}
		delete(h.noted, k)
	}
	if h.dropped > 0 {
		out.Left += h.dropped
		out.LeftPaths = append(out.LeftPaths, fmt.Sprintf("%d more place(s) the probe may have written: past the run's cap of %d, not looked for", h.dropped, maxHostWrites))
	}
	h.writes = nil
	return out
}
