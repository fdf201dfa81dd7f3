package agents_test

import (
	"net"
	"os"
	"strings"
)

// inetAddrs lists the IPv4/IPv6 addresses (with ports) in an strace log,
// once each: what the agent tried to reach over the network.
func inetAddrs(file string) []string {
	b, err := os.ReadFile(file)
	if err != nil {
		return []string{"unreadable strace log: " + err.Error()}
	}
	seen := map[string]bool{}
	out := []string{}
	for _, l := range strings.Split(string(b), "\n") {
		addr := ""
		for _, key := range []string{`inet_addr("`, `inet_pton(AF_INET6, "`} {
			if _, rest, ok := strings.Cut(l, key); ok {
				addr, _, _ = strings.Cut(rest, `"`)
			}
		}
		if addr == "" {
			continue
		}
		if _, rest, ok := strings.Cut(l, "htons("); ok {
			port, _, _ := strings.Cut(rest, ")")
			addr = net.JoinHostPort(addr, port)
		}
		if !seen[addr] {
			seen[addr] = true
			out = append(out, addr)
		}
	}
	return out
}

// capped keeps the first 4 MiB written to it.
type capped struct{ b []byte }

func (c *capped) Write(p []byte) (int, error) {
	if room := 4<<20 - len(c.b); room > 0 {
		c.b = append(c.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (c *capped) String() string { return string(c.b) }
