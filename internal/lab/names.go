package lab

import (
	"fmt"
	"net"
	"strings"

	"github.com/miekg/dns"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

// Names under LabDomain exist so that a team can write a domain allowlist
// (srt's allowedDomains, Codex's network.domains) for the lab the way it
// would for the real world: an exact name, or "*.inference.lab.gatehouse.test"
// for a provider's wildcard. Proxies resolve these names on their side,
// through the session's resolver, so the lab sees every lookup.
const (
	LabDomain         = "lab.gatehouse.test"
	InferenceLabName  = "inference." + LabDomain
	CallbackLabName   = "callback." + LabDomain
	PublicLabName     = "callback-public." + LabDomain // the public-looking callback addresses
	MetadataLabName   = "metadata." + LabDomain        // an allowlisted-looking name for metadata
	ResolverLabName   = "resolver." + LabDomain
	AuthorityLabName  = "authority." + LabDomain
	WireServerLabName = "wireserver." + LabDomain
	IntakeLabName     = "intake." + LabDomain // the results-intake service

	// RebindLabName answers the inference address to a session's first A
	// query and the callback's to every later one; RebindMetadataLabName
	// answers the metadata address later. Both sit under the inference
	// wildcard, so an allowlist of "*.inference.lab.gatehouse.test" covers
	// them: a proxy that checks one lookup and connects after another is
	// sent where its check did not look.
	RebindLabName         = "rebind." + InferenceLabName
	RebindMetadataLabName = "rebind-metadata." + InferenceLabName
)

// labName reports whether a (lower-case, dot-less) host is LabDomain or
// under it.
func labName(host string) bool {
	return host == LabDomain || strings.HasSuffix(host, "."+LabDomain)
}

// labAnswer is the resolver's answer for a name under LabDomain (name is
// lower case, fully qualified). ok is false for a name the lab does not
// hold (NXDOMAIN). Rebinding names are answered per session.
func (l *Lab) labAnswer(name string, q dns.Question, who string) (answer, bool) {
	host := strings.TrimSuffix(name, ".")
	switch host {
	case InferenceLabName:
		return answer{A: []string{InferenceV4}}, true
	case CallbackLabName:
		return answer{A: []string{CallbackV4}, AAAA: []string{CallbackV6}}, true
	case PublicLabName:
		return answer{A: []string{l.addrs.Public.CallbackV4}, AAAA: []string{l.addrs.Public.CallbackV6}}, true
	case MetadataLabName:
		return answer{A: []string{MetadataV4}, AAAA: []string{MetadataV6}}, true
	case ResolverLabName:
		return answer{A: []string{ResolverV4}}, true
	case AuthorityLabName:
		return answer{A: []string{AuthorityV4}}, true
	case WireServerLabName:
		return answer{A: []string{WireServerV4}}, true
	case IntakeLabName:
		return answer{A: []string{IntakeV4}}, true
	case RebindLabName, RebindMetadataLabName:
		if q.Qtype != dns.TypeA {
			return answer{}, true // NODATA: only A queries count
		}
		if l.rebindCount(host, who) == 1 {
			return answer{A: []string{InferenceV4}}, true
		}
		if host == RebindMetadataLabName {
			return answer{A: []string{MetadataV4}}, true
		}
		return answer{A: []string{CallbackV4}}, true
	}
	switch {
	case strings.HasSuffix(host, "."+InferenceLabName):
		return answer{A: []string{InferenceV4}}, true
	case strings.HasSuffix(host, "."+CallbackLabName):
		return answer{A: []string{CallbackV4}, AAAA: []string{CallbackV6}}, true
	}
	return answer{}, false
}

// rebindCount counts the A queries for one rebinding name by one asker
// (the session the query was attributed to, else its source address), so
// sessions do not move each other's answers.
func (l *Lab) rebindCount(host, who string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.rebinds == nil {
		l.rebinds = map[string]int{}
	}
	k := host + "\x00" + who
	l.rebinds[k]++
	return l.rebinds[k]
}

// leakedLabel records a query for a name under LabDomain that carries a
// session tag in its labels as a hit on the domain's authority: a real
// domain's authority is where such a lookup ends up, whoever resolved it
// (the sandbox's resolver, or a proxy resolving a name the sandbox gave
// it). Proxies lower-case names, so the tag is matched lower-case.
func (l *Lab) leakedLabel(name string, q dns.Question, from evidence.Hit) {
	if !tagRE.MatchString(strings.ToLower(name)) {
		return
	}
	a := evidence.Hit{
		Endpoint: "dns-authority", Proto: "dns",
		Src: ResolverV4, Dst: hostPort(AuthorityV4, 53),
		Summary: fmt.Sprintf("%s %s (lab domain, via resolver from %s)", dns.TypeToString[q.Qtype], q.Name, from.Src),
		Data:    q.Name,
		Session: from.Session, Attribution: from.Attribution,
	}
	l.record(a, "")
}

// hostOnly drops the port of "host:port" (a bare host stays).
func hostOnly(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}
