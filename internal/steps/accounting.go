package steps

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"net/url"

	"github.com/gatehouse-dev/gatehouse/internal/lab"
	"github.com/gatehouse-dev/gatehouse/internal/legacyip"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// labAddrs is which addresses the lab serves (the public-looking ones can
// be overridden); a run with no lab gets the defaults.
func (r *runner) labAddrs() lab.Addrs { return r.lab().Addrs() }

// countBefore reads the session's kernel-side count before its attempts.
// counting is false when there is none to read: no lab session, a lab
// without accounting (ErrUnsupported: no kernel-side proof of attempt,
// acctErr left empty so the scenario says so), or a failed read (noted in
// acctErr: the accounting is gone).
func (r *runner) countBefore(ctx context.Context, s *scenario) (before map[string]uint64, counting bool) {
	if !s.attached {
		return nil, false
	}
	before, err := r.lab().Emitted(ctx, s.session)
	switch {
	case errors.Is(err, ErrUnsupported):
		return nil, false
	case err != nil:
		s.acctErr = err.Error()
		return nil, false
	}
	return before, true
}

// resolverDest is the counter of the resolver the sandbox is given: the
// profile's (Config.Resolver) or the lab's. A loopback stub (a filtering
// DNS on 127.0.0.1 inside the sandbox) has a counter of its own; an
// address the lab does not serve has none ("").
func resolverDest(resolver string, addrs lab.Addrs) string {
	if resolver == "" {
		resolver = lab.ResolverV4
	}
	a, err := netip.ParseAddr(resolver)
	if err != nil {
		return ""
	}
	if a.Unmap().IsLoopback() {
		return lab.LoopbackResolverDest
	}
	return addrs.DestOf(a.Unmap().String())
}

// destOf is the lab destination an attempt's first packet goes to: the
// address it names, or the resolver (its counter: resolver) when it names
// a host that must be looked up first. "" when the target is not one of
// addrs.
func destOf(st wire.Step, addrs lab.Addrs, resolver string) string {
	host := ""
	switch st.Kind {
	case wire.KindHTTP:
		u, err := url.Parse(st.Target)
		if err != nil {
			return ""
		}
		host = u.Hostname()
	case wire.KindTCP, wire.KindUDP:
		h, _, err := net.SplitHostPort(st.Target)
		if err != nil {
			return ""
		}
		host = h
	case wire.KindICMP:
		host = st.Target
	case wire.KindDNS:
		if st.Server == "" {
			return resolver
		}
		h, _, err := net.SplitHostPort(st.Server)
		if err != nil {
			return ""
		}
		host = h
	default:
		return ""
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return addrs.DestOf(a.Unmap().String())
	}
	if a, ok := legacyip.Parse(host); ok {
		return addrs.DestOf(a.String())
	}
	// A name: the first packet is the lookup, to the resolver the sandbox
	// was given.
	return resolver
}

// delta is what the kernel emitted between two readings.
func delta(before, after map[string]uint64) map[string]uint64 {
	d := map[string]uint64{}
	for k, v := range after {
		if v >= before[k] {
			d[k] = v - before[k]
		}
	}
	return d
}
