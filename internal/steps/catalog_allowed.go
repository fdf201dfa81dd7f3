package steps

import (
	"github.com/gatehouse-dev/gatehouse/internal/lab"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// Attempts that send to the allowed destination itself, directly and
// through the proxy: the allowed host still receives what a sandbox sends
// it. A large body, a method or a path the team never meant, a contact on
// another port of the allowed name. Each carries the session canary, so
// the inference endpoint's hit (method, path, full body size, port) names
// the session. They are judged against the profile's allow declaration
// (evidence.Allowance): outside it a FAIL, without one a finding.
const (
	allowedBodyFill = 1 << 20 // the large body: far beyond any prompt a policy means
	allowedPort     = "8443"
)

func allowedBody(c string) string { return "GATEHOUSE " + c + " " }

var allowedAttempts = family{
	"allowed-large-body": func(c string) wire.Step {
		return wire.Step{Kind: wire.KindHTTP, Method: "POST", Target: "http://" + inferenceAddr + "/v1/complete?c=" + c,
			Headers: map[string]string{"Content-Type": "text/plain"}, Body: allowedBody(c), Fill: allowedBodyFill}
	},
	"allowed-method": func(c string) wire.Step {
		return wire.Step{Kind: wire.KindHTTP, Method: "PUT", Target: "http://" + inferenceAddr + "/v1/complete?c=" + c, Body: allowedBody(c)}
	},
	"allowed-path": func(c string) wire.Step {
		return wire.Step{Kind: wire.KindHTTP, Method: "POST", Target: "http://" + inferenceAddr + "/exfil/" + c, Body: allowedBody(c)}
	},
	"allowed-port": func(c string) wire.Step {
		return wire.Step{Kind: wire.KindTCP, Target: inferenceAddr + ":" + allowedPort, Payload: allowedBody(c) + "\n"}
	},
	"proxy-allowed-large-body": func(c string) wire.Step {
		s := viaHTTP("http://" + infName + "/v1/complete?c=" + c)
		s.Method, s.Body, s.Fill = "POST", allowedBody(c), allowedBodyFill
		return s
	},
	"proxy-allowed-method": func(c string) wire.Step {
		s := viaHTTP("http://" + infName + "/v1/complete?c=" + c)
		s.Method, s.Body = "PUT", allowedBody(c)
		return s
	},
	"proxy-allowed-path": func(c string) wire.Step {
		s := viaHTTP("http://" + infName + "/exfil/" + c)
		s.Method, s.Body = "POST", allowedBody(c)
		return s
	},
	// CONNECT and SOCKS5 to the allowed name on a port the allowlist entry
	// does not name: a proxy that allows names, not name and port, opens it.
	"proxy-allowed-port": func(c string) wire.Step {
		s := tunnel(wire.ViaConnect, infName+":"+allowedPort, "")
		s.Payload = allowedBody(c) + "\r\n"
		return s
	},
	"proxy-allowed-port-22": func(c string) wire.Step {
		s := tunnel(wire.ViaConnect, lab.InferenceLabName+":22", "")
		s.Payload = "SSH-2.0-gatehouse " + c + "\r\n"
		return s
	},
	"proxy-socks-allowed-port": func(c string) wire.Step {
		s := tunnel(wire.ViaSOCKS5, infName+":"+allowedPort, "")
		s.Payload = allowedBody(c) + "\r\n"
		return s
	},
}
