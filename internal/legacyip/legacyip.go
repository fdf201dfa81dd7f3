// Package legacyip reads the IPv4 forms inet_aton(3) accepts and Go does
// not, so that the probe dials them as an agent's tools do, and the lab
// and the harness know where such an attempt really goes.
package legacyip

import (
	"net/netip"
	"strconv"
	"strings"
)

// Parse parses the IPv4 forms inet_aton(3) accepts and Go does not:
// "2852039166", "0xa9fea9fe", "0251.0376.0251.0376", "169.254.43518". Tools
// an agent runs (curl, wget, ping) accept them, so an injected instruction
// can use them to slip past a filter that only knows the dotted form.
func Parse(host string) (netip.Addr, bool) {
	parts := strings.Split(host, ".")
	if len(parts) == 0 || len(parts) > 4 {
		return netip.Addr{}, false
	}
	vals := make([]uint64, len(parts))
	for i, p := range parts {
		v, ok := inetNumber(p)
		if !ok {
			return netip.Addr{}, false
		}
		vals[i] = v
	}
	// All but the last part are one byte each; the last fills what is left.
	var n uint64
	for i, v := range vals[:len(vals)-1] {
		if v > 255 {
			return netip.Addr{}, false
		}
		n |= v << (8 * (3 - uint(i)))
	}
	last := vals[len(vals)-1]
	if last >= 1<<(8*(5-uint(len(vals)))) {
		return netip.Addr{}, false
	}
	n |= last
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true
}

func inetNumber(p string) (uint64, bool) {
	if p == "" {
		return 0, false
	}
	base := 10
	switch {
	case strings.HasPrefix(p, "0x") || strings.HasPrefix(p, "0X"):
		base, p = 16, p[2:]
	case len(p) > 1 && p[0] == '0':
		base, p = 8, p[1:]
	}
	v, err := strconv.ParseUint(p, base, 32)
	return v, err == nil
}

// Addr is the address a URL host or dial target names, in any form the
// probe dials: an ordinary address or a legacy IPv4 form. false: a name.
func Addr(host string) (netip.Addr, bool) {
	if a, err := netip.ParseAddr(host); err == nil {
		return a, true
	}
	return Parse(host)
}
