package evidence

// Contact is what kind of boundary a hit shows was crossed, and so which
// gates judge it. A hit may be more than one kind; every hit is at least
// one (ContactOf never returns 0), so no contact can vanish from all gates.
type Contact uint8

const (
	// ContactNetwork: it left the sandbox through the network (an IP
	// packet reached the lab). Judged by external-callback,
	// dns-exfiltration and cloud-metadata (Judge).
	ContactNetwork Contact = 1 << iota
	// ContactHost: it reached the host itself: a socket in a host folder,
	// the host's own service. Judged by host-access (JudgeHost).
	ContactHost
	// ContactCredential: a credential helper answered. Judged by
	// long-lived-secret (JudgeSecrets), which also counts any hit carrying
	// a planted value, whatever its kind.
	ContactCredential
)

// networkProtos are the protocols the lab records from packets.
var networkProtos = map[string]bool{
	"http": true, "https": true, "tcp": true, "udp": true, "icmp": true, "icmp6": true, "dns": true,
}

// socketEndpoints are served only on unix sockets in host folders: a
// sandbox reaches one through a mount, never through the network.
var socketEndpoints = map[string]Contact{
	"engine-socket":     ContactHost,
	"credential-socket": ContactHost | ContactCredential,
}

// hostEndpoints are the endpoints that stand for the host itself. The host
// service is reached over the network (a packet left), so it is both.
var hostEndpoints = map[string]bool{"engine-socket": true, "host-service": true, "credential-socket": true}

// ContactOf classifies one hit:
//   - a unix-socket contact, or one with a socket-only endpoint, is host
//     (and credential for the credential socket), never network;
//   - a contact over a network protocol is network, and host too when its
//     endpoint is the host's own service;
//   - a hit without a protocol is judged by its endpoint: network unless
//     it names a socket;
//   - anything else (a protocol the lab does not name) is host: host-access
//     counts what no other gate is sure of, rather than nobody.
func ContactOf(h Hit) Contact {
	c, socket := socketEndpoints[h.Endpoint]
	switch {
	case h.Proto == "unix":
		return c | ContactHost
	case socket:
		return c
	case h.Proto == "" || networkProtos[h.Proto]:
		c = ContactNetwork
	default:
		c = ContactHost
	}
	if hostEndpoints[h.Endpoint] {
		c |= ContactHost
	}
	return c
}

// Is reports whether c includes kind k.
func (c Contact) Is(k Contact) bool { return c&k != 0 }

// ofKind keeps the hits of kind k.
func ofKind(hits []Hit, k Contact) []Hit {
	var out []Hit
	for _, h := range hits {
		if ContactOf(h).Is(k) {
			out = append(out, h)
		}
	}
	return out
}
