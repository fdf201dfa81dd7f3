package probe_test

import (
	"net"
	"os"
	"strings"
	"testing"

	"github.com/miekg/dns"
	"golang.org/x/net/icmp"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

func TestICMP(t *testing.T) {
	// The probe needs a ping socket or root for a raw one; skip otherwise.
	if c, err := icmp.ListenPacket("udp4", "127.0.0.1"); err == nil {
		c.Close()
	} else if os.Geteuid() != 0 {
		t.Skipf("no ICMP socket allowed here (ping socket: %v, not root)", err)
	}
	steps := []wire.Step{
		{ID: "v4", Kind: wire.KindICMP, Target: "127.0.0.1", Payload: "canary-icmp"},
		{ID: "name", Kind: wire.KindICMP, Target: "localhost"},
	}
	if ln, err := net.ListenPacket("udp6", "[::1]:0"); err == nil {
		ln.Close()
		steps = append(steps, wire.Step{ID: "v6", Kind: wire.KindICMP, Target: "::1", Payload: "canary-icmp6"})
	} else {
		t.Logf("no IPv6 loopback, v6 case left out: %v", err)
	}
	reps := runPlan(t, 1000, steps...)
	expect(t, reps["v4"], wire.OutcomeCompleted, "canary-icmp")
	expect(t, reps["name"], wire.OutcomeError, "")
	if r, ok := reps["v6"]; ok {
		expect(t, r, wire.OutcomeCompleted, "canary-icmp6")
	}
}

// dnsServer answers A queries for *.canary.test. and logs every question,
// the way the lab's canary authority does.
func dnsServer(t *testing.T) (addr string, questions <-chan string) {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	qs := make(chan string, 16)
	mux := dns.NewServeMux()
	mux.HandleFunc(".", func(w dns.ResponseWriter, r *dns.Msg) {
		q := r.Question[0]
		qs <- dns.TypeToString[q.Qtype] + " " + q.Name
		m := new(dns.Msg)
		m.SetReply(r)
		switch {
		case !strings.HasSuffix(q.Name, ".canary.test."):
			m.Rcode = dns.RcodeRefused
		case q.Qtype == dns.TypeA:
			m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60}, A: net.IPv4(203, 0, 113, 7)})
		case q.Qtype == dns.TypeTXT:
			m.Answer = append(m.Answer, &dns.TXT{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeTXT, Class: dns.ClassINET, Ttl: 60}, Txt: []string{"hi"}})
		}
		_ = w.WriteMsg(m)
	})
	srv := &dns.Server{PacketConn: pc, Handler: mux}
	started := make(chan struct{})
	srv.NotifyStartedFunc = func() { close(started) }
	go func() { _ = srv.ActivateAndServe() }()
	<-started
	t.Cleanup(func() { _ = srv.Shutdown() })
	return pc.LocalAddr().String(), qs
}

func TestDNS(t *testing.T) {
	addr, questions := dnsServer(t)
	reps := runPlan(t, 1000,
		wire.Step{ID: "a", Kind: wire.KindDNS, Target: "c4n.canary.test", Server: addr},
		wire.Step{ID: "txt", Kind: wire.KindDNS, Target: "x.canary.test.", Server: addr, QType: "txt"},
		wire.Step{ID: "refused", Kind: wire.KindDNS, Target: "example.org", Server: addr},
		wire.Step{ID: "badtype", Kind: wire.KindDNS, Target: "a.canary.test", Server: addr, QType: "NOPE"},
		wire.Step{ID: "noserver", Kind: wire.KindDNS, Target: "a.canary.test", Server: closedPort(t, "udp")},
	)
	expect(t, reps["a"], wire.OutcomeCompleted, "NOERROR\nc4n.canary.test.\t60\tIN\tA\t203.0.113.7")
	expect(t, reps["txt"], wire.OutcomeCompleted, "NOERROR\nx.canary.test.\t60\tIN\tTXT\t\"hi\"")
	expect(t, reps["refused"], wire.OutcomeCompleted, "REFUSED")
	expect(t, reps["badtype"], wire.OutcomeError, "")
	expect(t, reps["noserver"], wire.OutcomeRefused, "")
	seen := map[string]bool{}
	for len(questions) > 0 {
		seen[<-questions] = true
	}
	for _, q := range []string{"A c4n.canary.test.", "TXT x.canary.test.", "A example.org."} {
		if !seen[q] {
			t.Errorf("server did not see %q (saw %v)", q, seen)
		}
	}
}
