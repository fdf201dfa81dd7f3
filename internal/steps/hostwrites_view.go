package steps

import (
	"context"
	"errors"
	"path"
	"strings"

	"github.com/gatehouse-dev/gatehouse/internal/hostwrite"
	"github.com/gatehouse-dev/gatehouse/targets"
)

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
