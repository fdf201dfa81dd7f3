package steps

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/hostwrite"
	"github.com/gatehouse-dev/gatehouse/ledger"
	"github.com/gatehouse-dev/gatehouse/probe"
	"github.com/gatehouse-dev/gatehouse/targets"
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
// most probe.MaxWrote, but a run has many; past it, the rest count as
// leftovers (not looked for).
const maxHostWrites = 4096

// harnessRoot holds the harness's own folders: never a place of the
// probe's on the host, removed whole by their owners.
const harnessRoot = "/run/gatehouse"

// hostWrites is the run's record of the places on the host its probe may
// have written.
type hostWrites struct {
	since time.Time // the run's start: what was born after it is the run's

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

func newHostWrites(since time.Time) *hostWrites {
	return &hostWrites{since: since, views: map[string]*hostwrite.View{}, noted: map[placeKey]map[string]func(){}}
}

// probeWrite is one thing a plan's step writes, as the session sees it.
type probeWrite struct {
	inside, form, payload string
}

// planned are the writes a plan's steps make, where the harness can tell
// from the plan alone ("~" and "$HOME" are learned from the reports).
func planned(p probe.Plan, v *hostwrite.View) []probeWrite {
	var out []probeWrite
	file := func(inside, payload string) {
		if path.IsAbs(inside) {
			out = append(out, probeWrite{path.Clean(inside), hostwrite.File, payload})
		}
	}
	for _, st := range p.Steps {
		switch st.Kind {
		case probe.KindStash, probe.KindWrite:
			file(st.Target, st.Payload)
		case probe.KindHeartbeat:
			if st.Path != "" {
				file(st.Path+"-main", probe.BeatLine(p.Canary))
				file(st.Path+"-child", probe.BeatLine(p.Canary))
			}
		case probe.KindSend:
			if where, ok := strings.CutPrefix(st.Target, "dir:"); ok {
				name, content := probe.XSFile(st.Payload, where)
				for _, d := range sendDirs(where, v) {
					file(path.Join(d, name), content)
				}
			}
		case probe.KindReceive:
			if dir, ok := strings.CutPrefix(st.Target, "unix:"); ok && path.IsAbs(dir) {
				out = append(out, probeWrite{path.Join(path.Clean(dir), probe.XSSocket(st.Payload)), hostwrite.Socket, ""})
			}
		}
	}
	return out
}

// sendDirs are the folders a "dir:" send writes in, as the probe expands
// them (probe's dirsOf), but for those only the session knows ($HOME).
func sendDirs(where string, v *hostwrite.View) []string {
	switch {
	case where == "@writable":
		return v.WritableFolders()
	case strings.Contains(where, "$"):
		return nil
	case strings.HasSuffix(where, "/.."):
		return []string{path.Dir(path.Clean(strings.TrimSuffix(where, "/..")))}
	}
	return []string{path.Clean(where)}
}

// learned are the writes the probe reported: where they really went.
func learned(p probe.Plan, reps []probe.Report) []probeWrite {
	steps := map[string]probe.Step{}
	for _, st := range p.Steps {
		steps[st.ID] = st
	}
	var out []probeWrite
	for _, rep := range reps {
		st, ok := steps[rep.ID]
		if !ok {
			continue
		}
		form, payload := hostwrite.File, st.Payload
		switch st.Kind {
		case probe.KindSend:
			where, _ := strings.CutPrefix(st.Target, "dir:")
			_, payload = probe.XSFile(st.Payload, where)
		case probe.KindReceive:
			form, payload = hostwrite.Socket, ""
		}
		for _, w := range rep.Wrote {
			out = append(out, probeWrite{w, form, payload})
		}
	}
	return out
}

// before notes the places a plan will write, before it is sent: what is
// there already is not the run's.
func (h *hostWrites) before(ctx context.Context, r *runner, s *scenario, p probe.Plan) {
	if h == nil || !writing(p) {
		return
	}
	v := h.view(ctx, r, s)
	for _, w := range planned(p, v) {
		h.note(s, v, w, true)
	}
}

// after notes the places the probe says it wrote.
func (h *hostWrites) after(ctx context.Context, r *runner, s *scenario, p probe.Plan, reps []probe.Report) {
	if h == nil || !writing(p) {
		return
	}
	v := h.view(ctx, r, s)
	for _, w := range learned(p, reps) {
		h.note(s, v, w, false)
	}
}

func writing(p probe.Plan) bool {
	for _, st := range p.Steps {
		switch st.Kind {
		case probe.KindStash, probe.KindWrite, probe.KindHeartbeat, probe.KindSend, probe.KindReceive:
			return true
		}
	}
	return false
}

// view is how the session's paths map to the host, read once per session
// while it runs: its processes' mount tables read from the host, and the
// binds its runtime reported (gVisor's are in no mount table).
func (h *hostWrites) view(ctx context.Context, r *runner, s *scenario) *hostwrite.View {
	h.mu.Lock()
	defer h.mu.Unlock()
	if v, ok := h.views[s.session]; ok {
		return v
	}
	if h.host == nil && h.hostErr == nil {
		h.host, h.hostErr = hostwrite.HostMounts()
	}
	v := &hostwrite.View{Host: h.host}
	var err error
	if l, ok := s.sess.(targets.ProcessLister); ok && s.sess != nil {
		var pids []int
		if pids, err = l.Processes(ctx); err == nil {
			v.Inside, err = hostwrite.SessionMounts(pids)
		}
	} else {
		err = targets.ErrUnsupported
	}
	if err != nil || h.hostErr != nil {
		s.findings = append(s.findings, "where the probe's writes land on the host could not be read from the session's mount tables ("+
			errors.Join(h.hostErr, err).Error()+"): only the same paths on the host are looked at after the run")
	}
	r.mu.Lock()
	cfg, _ := r.effective[string(s.path)].(targets.Config)
	r.mu.Unlock()
	v.Binds = binds(cfg)
	h.views[s.session] = v
	return v
}

// binds are a runtime's "bind SRC -> DST (rw)" mounts (docker's Inspect).
func binds(cfg targets.Config) []hostwrite.Bind {
	var out []hostwrite.Bind
	for _, m := range cfg.Mounts {
		rest, ok := strings.CutPrefix(m, "bind ")
		if !ok || !strings.HasSuffix(rest, " (rw)") {
			continue
		}
		src, dst, ok := strings.Cut(strings.TrimSuffix(rest, " (rw)"), " -> ")
		if ok && path.IsAbs(src) && path.IsAbs(dst) {
			out = append(out, hostwrite.Bind{Src: path.Clean(src), Dst: path.Clean(dst)})
		}
	}
	return out
}

// note records each host place of one write, and the folders above it the
// run may make, on the run's list and its ledger.
func (h *hostWrites) note(s *scenario, v *hostwrite.View, pw probeWrite, planning bool) {
	if pw.form == hostwrite.File && (len(pw.payload) < hostwrite.MinPayload || len(probe.Tokens([]byte(pw.payload))) == 0) {
		return // not the run's beyond doubt: never taken back
	}
	for _, pl := range v.Places(pw.inside) {
		if h.harness(s, pl.Path) {
			continue
		}
		under, rel := v.Split(pl.Path)
		if rel == "" {
			continue // a mount point itself is never the probe's
		}
		w := hostwrite.Write{Under: under, Rel: rel, Form: pw.form, Since: h.since, Mapped: pl.Mapped}
		if pw.payload != "" {
			w.Payloads = []string{pw.payload}
		}
		exists, _, err := hostwrite.Look(under, rel, h.since)
		w.Absent = planning && !exists && err == nil
		h.record(w, pw.payload)
		if !pl.Mapped {
			continue // only the same path on the host: no folder of it is the probe's
		}
		// The folders above it that the probe may make (a stash makes
		// the missing ones): those not there before the plan, or made
		// during the run.
		for dir := path.Dir(rel); dir != "." && dir != "/"; dir = path.Dir(dir) {
			exists, made, err := hostwrite.Look(under, dir, h.since)
			if err != nil || (exists && !made) {
				break
			}
			h.record(hostwrite.Write{Under: under, Rel: dir, Form: hostwrite.Folder, Since: h.since, Absent: planning && !exists, Mapped: pl.Mapped}, "")
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
