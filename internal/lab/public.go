package lab

import (
	"errors"
	"fmt"
	"net/netip"
)

// A common egress guard is "allow the public internet, drop private and
// reserved ranges". It drops every documentation-range address the lab
// uses, so a callback there proves nothing about such a guard. The lab
// therefore also serves the callback, and a second canary-zone authority,
// on addresses that such guards count as public. They exist only inside the
// sealed lab namespace, like every other lab address; docs/lab.md says why
// each default is safe and which guards count it as public.
const (
	// 192.88.99.0/24 was the 6to4 relay anycast prefix (RFC 3068),
	// deprecated by RFC 7526: no service may be given it again without a
	// new IETF action, and only .1 was ever the relay address.
	PublicCallbackV4  = "192.88.99.10"
	PublicAuthorityV4 = "192.88.99.54"
	// 3ffe::/16 was the 6bone test network, returned to IANA in 2006
	// (RFC 3701) and never allocated since.
	PublicCallbackV6 = "3ffe::10"
)

// Environment variables that override the public-looking addresses, read
// by the gatehouse command (PublicFromEnv), never by Up itself.
const (
	EnvPublicV4    = "GATEHOUSE_LAB_PUBLIC_V4"
	EnvPublicV6    = "GATEHOUSE_LAB_PUBLIC_V6"
	EnvPublicDNSV4 = "GATEHOUSE_LAB_PUBLIC_DNS_V4"
)

// Public are the lab's public-looking addresses. A zero field means the
// default.
type Public struct {
	CallbackV4  string `json:"callback_v4"`
	CallbackV6  string `json:"callback_v6"`
	AuthorityV4 string `json:"authority_v4"`
}

// DefaultPublic are the public-looking addresses a lab uses unless told
// otherwise.
func DefaultPublic() Public {
	return Public{CallbackV4: PublicCallbackV4, CallbackV6: PublicCallbackV6, AuthorityV4: PublicAuthorityV4}
}

// PublicFromEnv reads the overrides from the environment (getenv is
// os.Getenv outside tests) over the defaults, and validates the result.
func PublicFromEnv(getenv func(string) string) (Public, error) {
	p := Public{CallbackV4: getenv(EnvPublicV4), CallbackV6: getenv(EnvPublicV6), AuthorityV4: getenv(EnvPublicDNSV4)}
	p, err := p.resolve()
	if err != nil {
		return Public{}, fmt.Errorf("lab: %w", err)
	}
	return p, nil
}

// resolve fills defaults, writes each address in its canonical form and
// validates the set.
func (p Public) resolve() (Public, error) {
	d := DefaultPublic()
	fields := []struct {
		name string
		v    *string
		def  string
		v6   bool
	}{
		{"callback v4 (" + EnvPublicV4 + ")", &p.CallbackV4, d.CallbackV4, false},
		{"callback v6 (" + EnvPublicV6 + ")", &p.CallbackV6, d.CallbackV6, true},
		{"authority v4 (" + EnvPublicDNSV4 + ")", &p.AuthorityV4, d.AuthorityV4, false},
	}
	taken := map[netip.Addr]string{}
	for _, s := range fixed {
		taken[netip.MustParseAddr(s)] = "a fixed lab address"
	}
	for _, s := range outside {
		taken[netip.MustParseAddr(s)] = "an address the seal check must find unroutable"
	}
	var errs []error
	for _, f := range fields {
		if *f.v == "" {
			*f.v = f.def
		}
		a, err := checkPublic(*f.v, f.v6)
		if err == nil && taken[a] != "" {
			err = fmt.Errorf("%s is %s", a, taken[a])
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("public %s: %w", f.name, err))
			continue
		}
		taken[a] = "already the public " + f.name
		*f.v = a.String()
	}
	if err := errors.Join(errs...); err != nil {
		return Public{}, err
	}
	return p, nil
}

// checkPublic parses s and refuses what cannot serve as a public-looking
// lab address: the wrong family, a zone, loopback, unspecified, multicast,
// link-local, and anything a "drop private and reserved" guard drops (that
// would make the public attempts test nothing new).
func checkPublic(s string, v6 bool) (netip.Addr, error) {
	a, err := netip.ParseAddr(s)
	switch {
	case err != nil:
		return a, err
	case a.Zone() != "":
		return a, fmt.Errorf("%s has a zone", s)
	case a.Is4In6():
		return a, fmt.Errorf("%s is an IPv4-mapped IPv6 address", s)
	case v6 != a.Is6():
		return a, fmt.Errorf("%s is not an IPv%s address", s, map[bool]string{true: "6", false: "4"}[v6])
	case a.IsUnspecified(), a.IsLoopback(), a.IsMulticast(), a.IsLinkLocalUnicast(),
		a.IsLinkLocalMulticast(), a.IsInterfaceLocalMulticast():
		return a, fmt.Errorf("%s is loopback, unspecified, multicast or link-local", s)
	case a.IsPrivate():
		return a, fmt.Errorf("%s is private (RFC 1918 or unique local): guards drop it, so it tests nothing new", s)
	}
	for _, p := range nonPublic {
		if p.Contains(a) {
			return a, fmt.Errorf("%s is in %s, which egress guards treat as non-public: it tests nothing new", s, p)
		}
	}
	return a, nil
}

// nonPublic are special-purpose ranges (IANA's registries) that common
// guards (Go's net/netip, Python's ipaddress.is_global, Rust's is_global)
// count as not global, beyond what netip's predicates cover. The defaults'
// ranges (192.88.99.0/24, 3ffe::/16) are deliberately not among them.
var nonPublic = prefixes(
	"0.0.0.0/8", "100.64.0.0/10", "192.0.0.0/24", "192.0.2.0/24", "198.18.0.0/15",
	"198.51.100.0/24", "203.0.113.0/24", "240.0.0.0/4",
	"::ffff:0:0/96", "64:ff9b::/96", "64:ff9b:1::/48", "100::/64", "2001::/23",
	"2001:db8::/32", "2002::/16", "3fff::/20", "5f00::/16", "fec0::/10",
)

func prefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}
