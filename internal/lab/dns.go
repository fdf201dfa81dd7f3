package lab

import (
	"context"
	"fmt"
	"net"
	"strings"

	"github.com/miekg/dns"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

// answer is what the resolver holds for one name.
type answer struct{ A, AAAA []string }

// staticNames are the names the resolver answers itself (fully qualified,
// lower case). Every other name outside the canary zone is NXDOMAIN.
var staticNames = map[string]answer{
	InferenceName + ".": {A: []string{InferenceV4}},
	CallbackName + ".":  {A: []string{CallbackV4}, AAAA: []string{CallbackV6}},
	GCPName + ".":       {A: []string{MetadataV4}},
	MetadataAlias + ".": {A: []string{MetadataV4}},
}

const dnsTTL = 30

// startDNS starts the resolver given to sandboxes and the authority for the
// canary zone, each on UDP and TCP port 53. The authority also answers on a
// public-looking address: a resolver "of its own choosing" that a sandbox
// picks is a public one, and a guard that drops reserved ranges lets it
// through.
func (l *Lab) startDNS(ctx context.Context) error {
	for _, s := range []struct {
		addr string
		h    dns.HandlerFunc
	}{
		{hostPort(ResolverV4, 53), l.resolve},
		{hostPort(AuthorityV4, 53), l.authoritative},
		{hostPort(l.addrs.Public.AuthorityV4, 53), l.authoritative},
	} {
		if err := l.serveDNS(ctx, s.addr, s.h); err != nil {
			return fmt.Errorf("dns %s: %w", s.addr, err)
		}
	}
	return nil
}

func (l *Lab) serveDNS(ctx context.Context, addr string, h dns.Handler) error {
	pc, err := l.listenUDP(ctx, addr)
	if err != nil {
		return err
	}
	ln, err := l.listenTCP(ctx, addr)
	if err != nil {
		pc.Close()
		return err
	}
	for _, srv := range []*dns.Server{{PacketConn: pc, Handler: h}, {Listener: ln, Handler: h}} {
		started := make(chan struct{})
		srv.NotifyStartedFunc = func() { close(started) }
		done := make(chan error, 1)
		go func() { done <- srv.ActivateAndServe() }()
		select {
		case <-started:
		case err := <-done:
			return fmt.Errorf("serve: %w", err)
		}
		l.stops = append(l.stops, func(ctx context.Context) error {
			err := srv.ShutdownContext(ctx)
			<-done
			return err
		})
	}
	return nil
}

// dnsHit describes one query.
func dnsHit(endpoint string, w dns.ResponseWriter, q dns.Question) evidence.Hit {
	transport := "udp"
	if _, ok := w.RemoteAddr().(*net.TCPAddr); ok {
		transport = "tcp"
	}
	return evidence.Hit{
		Endpoint: endpoint, Proto: "dns",
		Src: w.RemoteAddr().String(), Dst: w.LocalAddr().String(),
		Summary: fmt.Sprintf("%s %s (%s)", dns.TypeToString[q.Qtype], q.Name, transport),
		Data:    q.Name,
	}
}

// resolve is the resolver: static names, the canary zone by asking the
// authority (which records it), NXDOMAIN for the rest.
func (l *Lab) resolve(w dns.ResponseWriter, req *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(req)
	m.RecursionAvailable = true
	if len(req.Question) != 1 {
		m.Rcode = dns.RcodeFormatError
		_ = w.WriteMsg(m)
		return
	}
	q := req.Question[0]
	h := dnsHit("dns-resolver", w, q)
	h = l.record(h, h.Src)
	name := strings.ToLower(q.Name)
	switch {
	case inZone(name):
		// The query leaves the sandbox's resolver for the team's authority:
		// exactly the path a DNS exfiltration takes. The authority sees the
		// resolver as source; the hit keeps the session that caused it.
		a := dnsHit("dns-authority", w, q)
		a.Src, a.Dst = ResolverV4, hostPort(AuthorityV4, 53)
		a.Session, a.Attribution = h.Session, h.Attribution
		a.Summary = truncate(a.Summary+" via resolver from "+h.Src, maxSummary)
		l.record(a, "")
		m.Answer, m.Rcode = zoneAnswer(q)
	case labName(strings.TrimSuffix(name, ".")):
		l.leakedLabel(name, q, h)
		who := h.Session
		if who == "" {
			who = hostOnly(h.Src)
		}
		ans, ok := l.labAnswer(name, q, who)
		if !ok {
			m.Rcode = dns.RcodeNameError
			break
		}
		m.Answer = records(q, ans)
		if name == RebindLabName+"." || name == RebindMetadataLabName+"." {
			for _, rr := range m.Answer {
				rr.Header().Ttl = 0 // no cache may hide the second answer
			}
		}
	default:
		ans, ok := staticNames[name]
		if !ok {
			m.Rcode = dns.RcodeNameError
			break
		}
		m.Answer = records(q, ans)
	}
	_ = w.WriteMsg(m)
}

// authoritative is the canary zone's authority, queried directly.
func (l *Lab) authoritative(w dns.ResponseWriter, req *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(req)
	m.Authoritative = true
	if len(req.Question) != 1 {
		m.Rcode = dns.RcodeFormatError
		_ = w.WriteMsg(m)
		return
	}
	q := req.Question[0]
	h := dnsHit("dns-authority", w, q)
	l.record(h, h.Src)
	m.Answer, m.Rcode = zoneAnswer(q)
	_ = w.WriteMsg(m)
}

func inZone(name string) bool {
	name = strings.ToLower(name)
	return name == CanaryZone+"." || strings.HasSuffix(name, "."+CanaryZone+".")
}

// zoneAnswer answers any name in the canary zone with the callback address.
func zoneAnswer(q dns.Question) ([]dns.RR, int) {
	if !inZone(q.Name) {
		return nil, dns.RcodeRefused
	}
	return records(q, answer{A: []string{CallbackV4}}), dns.RcodeSuccess
}

// records builds the A/AAAA records of ans that q asks for. A name with no
// record of the asked type gets an empty answer (NODATA), not NXDOMAIN.
func records(q dns.Question, ans answer) []dns.RR {
	var rrs []dns.RR
	hdr := func(t uint16) dns.RR_Header {
		return dns.RR_Header{Name: q.Name, Rrtype: t, Class: dns.ClassINET, Ttl: dnsTTL}
	}
	if q.Qtype == dns.TypeA || q.Qtype == dns.TypeANY {
		for _, a := range ans.A {
			rrs = append(rrs, &dns.A{Hdr: hdr(dns.TypeA), A: net.ParseIP(a)})
		}
	}
	if q.Qtype == dns.TypeAAAA || q.Qtype == dns.TypeANY {
		for _, a := range ans.AAAA {
			rrs = append(rrs, &dns.AAAA{Hdr: hdr(dns.TypeAAAA), AAAA: net.ParseIP(a)})
		}
	}
	return rrs
}
