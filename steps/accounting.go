package steps

import (
	"context"
	"net"
	"net/netip"
	"net/url"

	"gatehouse/lab"
	"gatehouse/probe"
)

// emitter is the lab's kernel-side accounting, when it has one (the real
// lab does; unit tests' fakes need not).
type emitter interface {
	Emitted(ctx context.Context, session string) (map[string]uint64, error)
}

// destOf is the lab destination an attempt's first packet goes to: the
// address it names, or the resolver when it names a host that must be
// looked up first. "" when the target is not a lab address.
func destOf(st probe.Step) string {
	host := ""
	switch st.Kind {
	case probe.KindHTTP:
		u, err := url.Parse(st.Target)
		if err != nil {
			return ""
		}
		host = u.Hostname()
	case probe.KindTCP, probe.KindUDP:
		h, _, err := net.SplitHostPort(st.Target)
		if err != nil {
			return ""
		}
		host = h
	case probe.KindICMP:
		host = st.Target
	case probe.KindDNS:
		if st.Server == "" {
			return lab.DestOf(lab.ResolverV4)
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
		return lab.DestOf(a.Unmap().String())
	}
	if a, ok := probe.LegacyIPv4(host); ok {
		return lab.DestOf(a.String())
	}
	// A name: the first packet is the lookup, to the resolver the sandbox
	// was given.
	return lab.DestOf(lab.ResolverV4)
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
