package probe

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strings"

	"github.com/miekg/dns"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// resolvConf is where the default DNS server comes from.
const resolvConf = "/etc/resolv.conf"

// doDNS sends one query for Target to Server, or to the first nameserver of
// resolv.conf, and puts the rcode and answers in the excerpt.
func doDNS(ctx context.Context, s wire.Step, rep *wire.Report) error {
	qtype := dns.TypeA
	if s.QType != "" {
		t, ok := dns.StringToType[strings.ToUpper(s.QType)]
		if !ok {
			return fmt.Errorf("unknown dns type %q", s.QType)
		}
		qtype = t
	}
	name := dns.Fqdn(s.Target)
	if _, ok := dns.IsDomainName(name); !ok {
		return fmt.Errorf("invalid dns name %q", s.Target)
	}
	server, err := dnsServer(s.Server, resolvConf)
	if err != nil {
		return err
	}
	q := new(dns.Msg)
	q.SetQuestion(name, qtype)
	c := &dns.Client{Net: "udp"}
	r, _, err := c.ExchangeContext(ctx, q, server)
	if err != nil {
		return err
	}
	rep.Bytes = r.Len()
	parts := []string{dns.RcodeToString[r.Rcode]}
	for _, rr := range r.Answer {
		parts = append(parts, rr.String())
	}
	rep.Excerpt = strings.Join(parts, "\n")
	return nil
}

// dnsServer returns host:port for a query: the given server (port 53 when
// it has none) or the first nameserver line of the resolv.conf at path.
func dnsServer(server, path string) (string, error) {
	if server != "" {
		if _, _, err := net.SplitHostPort(server); err != nil {
			return net.JoinHostPort(strings.Trim(server, "[]"), "53"), nil
		}
		return server, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("no dns server: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(io.LimitReader(f, 64<<10))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "nameserver" {
			return net.JoinHostPort(fields[1], "53"), nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("no dns server: read %s: %w", path, err)
	}
	return "", fmt.Errorf("no dns server: no nameserver in %s", path)
}
