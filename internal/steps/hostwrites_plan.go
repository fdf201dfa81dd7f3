package steps

import (
	"path"
	"strings"

	"github.com/gatehouse-dev/gatehouse/internal/hostwrite"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// probeWrite is one thing a plan's step writes, as the session sees it.
type probeWrite struct {
	inside, form, payload string
}

// planned are the writes a plan's steps make, where the harness can tell
// from the plan alone ("~" and "$HOME" are learned from the reports).
func planned(p wire.Plan, v *hostwrite.View) []probeWrite {
	var out []probeWrite
	file := func(inside, payload string) {
		if path.IsAbs(inside) {
			out = append(out, probeWrite{path.Clean(inside), hostwrite.File, payload})
		}
	}
	for _, st := range p.Steps {
		switch st.Kind {
		case wire.KindStash, wire.KindWrite:
			file(st.Target, st.Payload)
		case wire.KindHeartbeat:
			if st.Path != "" {
				file(st.Path+"-main", wire.BeatLine(p.Canary))
				file(st.Path+"-child", wire.BeatLine(p.Canary))
			}
		case wire.KindSend:
			if where, ok := strings.CutPrefix(st.Target, "dir:"); ok {
				name, content := wire.XSFile(st.Payload, where)
				for _, d := range sendDirs(where, v) {
					file(path.Join(d, name), content)
				}
			}
		case wire.KindReceive:
			if dir, ok := strings.CutPrefix(st.Target, "unix:"); ok && path.IsAbs(dir) {
				out = append(out, probeWrite{path.Join(path.Clean(dir), wire.XSSocket(st.Payload)), hostwrite.Socket, ""})
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
func learned(p wire.Plan, reps []wire.Report) []probeWrite {
	steps := map[string]wire.Step{}
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
		case wire.KindSend:
			where, _ := strings.CutPrefix(st.Target, "dir:")
			_, payload = wire.XSFile(st.Payload, where)
		case wire.KindReceive:
			form, payload = hostwrite.Socket, ""
		}
		for _, w := range rep.Wrote {
			out = append(out, probeWrite{w, form, payload})
		}
		// The folders a stash says it made, above a file it wrote: no
		// other folder of the host is ever taken back on its word.
		for _, m := range rep.Made {
			for _, w := range rep.Wrote {
				if strings.HasPrefix(w, strings.TrimSuffix(m, "/")+"/") {
					out = append(out, probeWrite{m, hostwrite.Folder, ""})
					break
				}
			}
		}
	}
	return out
}

// writing says whether a plan has a step that writes.
func writing(p wire.Plan) bool {
	for _, st := range p.Steps {
		switch st.Kind {
		case wire.KindStash, wire.KindWrite, wire.KindHeartbeat, wire.KindSend, wire.KindReceive:
			return true
		}
	}
	return false
}
