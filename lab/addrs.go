package lab

import (
	"fmt"
	"net/netip"
)

// Fixed lab addresses. They come from documentation ranges (RFC 5737,
// RFC 3849) or are the well-known metadata addresses, bound only inside the
// lab namespace, so no packet to them can mean a real host.
const (
	CallbackV4   = "203.0.113.10"
	CallbackV6   = "2001:db8:cafe::10"
	InferenceV4  = "203.0.113.100"
	ResolverV4   = "203.0.113.53"
	AuthorityV4  = "203.0.113.54"
	MetadataV4   = "169.254.169.254"
	MetadataV6   = "fd00:ec2::254"
	WireServerV4 = "168.63.129.16"
	AlibabaV4    = "100.100.100.200"

	// Ports of the callback server.
	CallbackHTTPPort  = 80
	CallbackHTTPSPort = 443
	CallbackTCPPort   = 9000
	CallbackUDPPort   = 9001

	// DNS names the resolver answers.
	InferenceName = "inference.gatehouse.test"
	CallbackName  = "callback.gatehouse.test"
	GCPName       = "metadata.google.internal"
	MetadataAlias = "metadata.gatehouse.test" // a name an attacker points at metadata
	CanaryZone    = "oob.gatehouse.test"      // served by the authority

	maxSessions = 63 // 198.51.100.0/24 cut into /30s, index 0 unused
)

// Addrs lists the lab's addresses, for steps and reports.
type Addrs struct {
	Callback   []string `json:"callback"`
	Inference  string   `json:"inference"`
	Resolver   string   `json:"resolver"`
	Authority  string   `json:"authority"`
	Metadata   []string `json:"metadata"`
	WireServer string   `json:"wireserver"`
	Alibaba    string   `json:"alibaba"`
	CanaryZone string   `json:"canary_zone"`
}

// DefaultAddrs are the addresses every lab uses.
func DefaultAddrs() Addrs {
	return Addrs{
		Callback:   []string{CallbackV4, CallbackV6},
		Inference:  InferenceV4,
		Resolver:   ResolverV4,
		Authority:  AuthorityV4,
		Metadata:   []string{MetadataV4, MetadataV6},
		WireServer: WireServerV4,
		Alibaba:    AlibabaV4,
		CanaryZone: CanaryZone,
	}
}

// loAddrs are the addresses put on the lab namespace's lo (there is no
// dummy interface module on our machines), as host routes only, so that no
// neighbouring address in those ranges becomes reachable.
func loAddrs() []string {
	return []string{
		CallbackV4 + "/32", InferenceV4 + "/32", ResolverV4 + "/32", AuthorityV4 + "/32",
		MetadataV4 + "/32", WireServerV4 + "/32", AlibabaV4 + "/32",
		CallbackV6 + "/128", MetadataV6 + "/128",
	}
}

// isLabAddr reports whether a is one of the addresses the lab serves.
func isLabAddr(a netip.Addr) bool {
	a = a.Unmap()
	for _, s := range []string{CallbackV4, CallbackV6, InferenceV4, ResolverV4, AuthorityV4,
		MetadataV4, MetadataV6, WireServerV4, AlibabaV4} {
		if netip.MustParseAddr(s) == a {
			return true
		}
	}
	return false
}

// link is the address plan of one session's veth pair.
type link struct {
	LabV4, SessionV4 string // with /30
	LabV6, SessionV6 string // with /64
}

// linkFor returns the addresses of session index n (1..63). The IPv6 group
// is n written in decimal (a valid hex group for n <= 63) so that session 12
// reads as 2001:db8:100:12::2.
func linkFor(n int) (link, error) {
	if n < 1 || n > maxSessions {
		return link{}, fmt.Errorf("session index %d out of range 1..%d", n, maxSessions)
	}
	return link{
		LabV4:     fmt.Sprintf("198.51.100.%d/30", 4*n+1),
		SessionV4: fmt.Sprintf("198.51.100.%d/30", 4*n+2),
		LabV6:     fmt.Sprintf("2001:db8:100:%d::1/64", n),
		SessionV6: fmt.Sprintf("2001:db8:100:%d::2/64", n),
	}, nil
}
