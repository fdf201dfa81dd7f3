package lab

import (
	"fmt"
	"net/netip"
	"strings"
)

// Fixed lab addresses. They come from documentation ranges (RFC 5737,
// RFC 3849) or are the well-known metadata addresses, bound only inside the
// lab namespace, so no packet to them can mean a real host. The
// public-looking callback and second authority are in public.go: they can
// be overridden, these cannot.
const (
	CallbackV4   = "203.0.113.10"
	CallbackV6   = "2001:db8:cafe::10"
	InferenceV4  = "203.0.113.100"
	IntakeV4     = "203.0.113.110" // the results-intake service (internal/lab/intake)
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
	// CatchAllPort is where the catch-all recorder listens on each callback
	// address; every other TCP and UDP port is sent to it (catchall.go).
	CatchAllPort = 9

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
	// Callback is every address of the callback server: the documentation
	// range ones first, then the public-looking ones (also in Public).
	Callback   []string `json:"callback"`
	Inference  string   `json:"inference"`
	Intake     string   `json:"intake"`
	Resolver   string   `json:"resolver"`
	Authority  string   `json:"authority"`
	Public     Public   `json:"public"`
	Metadata   []string `json:"metadata"`
	WireServer string   `json:"wireserver"`
	Alibaba    string   `json:"alibaba"`
	CanaryZone string   `json:"canary_zone"`
}

// DefaultAddrs are the addresses of a lab started without overrides.
func DefaultAddrs() Addrs { return addrsWith(DefaultPublic()) }

func addrsWith(p Public) Addrs {
	return Addrs{
		Callback:   []string{CallbackV4, CallbackV6, p.CallbackV4, p.CallbackV6},
		Inference:  InferenceV4,
		Intake:     IntakeV4,
		Resolver:   ResolverV4,
		Authority:  AuthorityV4,
		Public:     p,
		Metadata:   []string{MetadataV4, MetadataV6},
		WireServer: WireServerV4,
		Alibaba:    AlibabaV4,
		CanaryZone: CanaryZone,
	}
}

// fixed are the addresses no override may change or take.
var fixed = []string{CallbackV4, CallbackV6, InferenceV4, IntakeV4, ResolverV4, AuthorityV4,
	MetadataV4, MetadataV6, WireServerV4, AlibabaV4}

// all is every address the lab serves.
func (a Addrs) all() []string {
	return append(append([]string{}, fixed...), a.Public.CallbackV4, a.Public.CallbackV6, a.Public.AuthorityV4)
}

// loAddrs are the addresses put on the lab namespace's lo (there is no
// dummy interface module on our machines), as host routes only, so that no
// neighbouring address in those ranges becomes reachable.
func (a Addrs) loAddrs() []string {
	var out []string
	for _, s := range a.all() {
		if strings.Contains(s, ":") {
			out = append(out, s+"/128")
		} else {
			out = append(out, s+"/32")
		}
	}
	return out
}

// has reports whether ip is one of the addresses the lab serves.
func (a Addrs) has(ip netip.Addr) bool {
	ip = ip.Unmap()
	for _, s := range a.all() {
		if netip.MustParseAddr(s) == ip {
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
