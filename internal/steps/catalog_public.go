package steps

import (
	"encoding/binary"
	"fmt"
	"net"
	"strconv"

	"github.com/gatehouse-dev/gatehouse/internal/lab"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// An aimedFamily's attempts need the lab's own addresses: the
// public-looking ones can be overridden (lab.Options.Public), so they are
// not constants.
type aimedFamily map[string]func(a lab.Addrs, canary string) wire.Step

// aimedFamilies add to families. The public-looking callback is what a
// guard that "allows the public internet but drops private and reserved
// ranges" lets through; the ports are the ones an allow-by-port rule
// opens "for git", "for QUIC", "for mail", and so on. The lab records every
// port of its callback addresses, so any of them arriving is a hit.
var aimedFamilies = map[string]aimedFamily{
	"reach the callback server": {
		"http-public":  func(a lab.Addrs, c string) wire.Step { return get("http://" + a.Public.CallbackV4 + "/c/" + c) },
		"https-public": func(a lab.Addrs, c string) wire.Step { return get("https://" + a.Public.CallbackV4 + "/c/" + c) },
		"tcp-public": func(a lab.Addrs, c string) wire.Step {
			return tcp(a.Public.CallbackV4, lab.CallbackTCPPort, "GATEHOUSE "+c+"\n")
		},
		"udp-public": func(a lab.Addrs, c string) wire.Step {
			return udp(a.Public.CallbackV4, lab.CallbackUDPPort, "GATEHOUSE "+c)
		},
		"icmp-public":       func(a lab.Addrs, c string) wire.Step { return icmp(a.Public.CallbackV4, c) },
		"http-public-ipv6":  func(a lab.Addrs, c string) wire.Step { return get("http://[" + a.Public.CallbackV6 + "]/c/" + c) },
		"https-public-ipv6": func(a lab.Addrs, c string) wire.Step { return get("https://[" + a.Public.CallbackV6 + "]/c/" + c) },
		"tcp-public-ipv6": func(a lab.Addrs, c string) wire.Step {
			return tcp(a.Public.CallbackV6, lab.CallbackTCPPort, "GATEHOUSE "+c+"\n")
		},
		"udp-public-ipv6": func(a lab.Addrs, c string) wire.Step {
			return udp(a.Public.CallbackV6, lab.CallbackUDPPort, "GATEHOUSE "+c)
		},
		"icmp-public-ipv6": func(a lab.Addrs, c string) wire.Step { return icmp(a.Public.CallbackV6, c) },
		// Common egress ports, each with a first message in its protocol's
		// style carrying the canary, to the public-looking callback.
		"tcp-22": func(a lab.Addrs, c string) wire.Step {
			return tcp(a.Public.CallbackV4, 22, "SSH-2.0-GATEHOUSE "+c+"\r\n")
		},
		"tcp-25": func(a lab.Addrs, c string) wire.Step {
			return tcp(a.Public.CallbackV4, 25, "EHLO "+c+".gatehouse.test\r\n")
		},
		"tcp-853":   func(a lab.Addrs, c string) wire.Step { return tcp(a.Public.CallbackV4, 853, "GATEHOUSE "+c+"\n") },
		"http-8080": func(a lab.Addrs, c string) wire.Step { return get("http://" + a.Public.CallbackV4 + ":8080/c/" + c) },
		"tcp-8443":  func(a lab.Addrs, c string) wire.Step { return tcp(a.Public.CallbackV4, 8443, "GATEHOUSE "+c+"\n") },
		// DNS to the callback itself, not to any resolver: an "allow udp/53
		// anywhere" rule lets a query reach any server.
		"udp-53": func(a lab.Addrs, c string) wire.Step {
			return dnsq(c+".u."+canaryZone, net.JoinHostPort(a.Public.CallbackV4, "53"), "A")
		},
		"udp-123": func(a lab.Addrs, c string) wire.Step { return udp(a.Public.CallbackV4, 123, "GATEHOUSE "+c) },
		"quic-443": func(a lab.Addrs, c string) wire.Step {
			s := udp(a.Public.CallbackV4, 443, "")
			s.Binary = quicInitial(c)
			return s
		},
	},
	"leak the session canary through DNS": {
		// A resolver of the agent's own choosing is a public one.
		"own-resolver-public": func(a lab.Addrs, c string) wire.Step {
			return dnsq(c+".p."+canaryZone, net.JoinHostPort(a.Public.AuthorityV4, "53"), "A")
		},
	},
}

func tcp(host string, port int, payload string) wire.Step {
	return wire.Step{Kind: wire.KindTCP, Target: net.JoinHostPort(host, strconv.Itoa(port)), Payload: payload}
}

func udp(host string, port int, payload string) wire.Step {
	return wire.Step{Kind: wire.KindUDP, Target: net.JoinHostPort(host, strconv.Itoa(port)), Payload: payload}
}

func icmp(host, payload string) wire.Step {
	return wire.Step{Kind: wire.KindICMP, Target: host, Payload: payload}
}

// quicInitial is a datagram that looks like a QUIC v1 Initial to anything
// that classifies traffic (long header, type Initial, version 1, padded to
// the 1200 bytes clients must send) and carries the canary in clear where
// a real one would carry the encrypted ClientHello.
func quicInitial(canary string) []byte {
	const size = 1200
	b := []byte{0xc3, 0, 0, 0, 1} // long header, Initial, 4-byte packet number; version 1
	b = append(b, 8)
	b = append(b, "gatehous"...) // destination connection id
	b = append(b, 0, 0)          // no source connection id, no token
	rest := size - len(b) - 2    // after the 2-byte length field
	b = binary.BigEndian.AppendUint16(b, 0x4000|uint16(rest))
	b = append(b, 0, 0, 0, 1) // packet number
	b = append(b, fmt.Sprintf("GATEHOUSE %s\n", canary)...)
	return append(b, make([]byte, size-len(b))...)
}
