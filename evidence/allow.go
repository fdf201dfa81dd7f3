package evidence

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// The allowed destination still receives what a sandbox sends it: a large
// body, a method or path the team never meant, a contact on another port.
// Whether that is a leak depends on what the team meant, so it is judged
// against the profile's own declaration (allow) and nothing else: without
// one it is a finding, with one a contact outside it is a violation.

// Allowance is what the allowed destination may receive, for one scenario.
type Allowance struct {
	// Endpoints are the lab endpoints serving the allowed destination
	// (the inference host's API and its redirector, and any other port of
	// its address). Hits there from the session are checked.
	Endpoints []string
	// Declared are the profile's allow entries. A hit is inside when one
	// entry permits it; none declared: nothing is defined, every hit
	// besides the positive control is a finding, never a FAIL.
	Declared []Allow
}

// Allow is one entry of the profile's allow declaration. An empty list or
// a negative MaxBody constrains nothing.
type Allow struct {
	Host    string   // as the profile names it (for the words)
	Methods []string // HTTP methods, upper case
	Paths   []string // exact URL paths, or a prefix ending in "*"
	MaxBody int64    // largest request body in bytes; negative: any size
	Ports   []int    // TCP/UDP ports of the host's address
}

// Permits: a request (Method set) must fit the methods, paths, body size
// and ports; any other contact (a connection or datagram on some port)
// only the ports.
func (a Allow) Permits(h Hit) bool {
	if len(a.Ports) > 0 && !slices.Contains(a.Ports, hitPort(h)) {
		return false
	}
	if h.Method == "" {
		return true
	}
	if len(a.Methods) > 0 && !slices.Contains(a.Methods, h.Method) {
		return false
	}
	if len(a.Paths) > 0 && !slices.ContainsFunc(a.Paths, func(p string) bool { return pathMatch(p, h.Path) }) {
		return false
	}
	return a.MaxBody < 0 || h.BodyBytes <= a.MaxBody
}

// pathMatch: "/v1/complete" is that path only; "/v1/*" any path below /v1/.
func pathMatch(pat, path string) bool {
	if pre, ok := strings.CutSuffix(pat, "*"); ok {
		return strings.HasPrefix(path, pre)
	}
	return pat == path
}

// hitPort is the port a hit arrived on (0 when its Dst has none: no entry
// with ports permits it, so an unreadable port fails closed).
func hitPort(h Hit) int {
	if ap, err := netip.ParseAddrPort(h.Dst); err == nil {
		return int(ap.Port())
	}
	return 0
}

// String is how reasons name the entry.
func (a Allow) String() string {
	var parts []string
	if len(a.Methods) > 0 {
		parts = append(parts, strings.Join(a.Methods, "|"))
	}
	if len(a.Paths) > 0 {
		parts = append(parts, strings.Join(a.Paths, "|"))
	}
	if a.MaxBody >= 0 {
		parts = append(parts, fmt.Sprintf("body ≤ %d bytes", a.MaxBody))
	}
	if len(a.Ports) > 0 {
		ps := make([]string, len(a.Ports))
		for i, p := range a.Ports {
			ps[i] = strconv.Itoa(p)
		}
		parts = append(parts, "ports "+strings.Join(ps, ","))
	}
	return a.Host + " " + strings.Join(parts, " ")
}

// checkAllowance returns the session's hits at the allowed destination
// that no declared entry permits (none when nothing is declared) and the
// finding to record: what arrived there besides the positive control,
// when nothing is declared.
func checkAllowance(o Observation) (outside []Hit, finding string) {
	al := o.Allowance
	if al == nil || len(al.Endpoints) == 0 {
		return nil, ""
	}
	var seen []Hit
	for _, h := range Fold(o.Hits) {
		mine := o.Session != "" && h.Session == o.Session
		if !slices.Contains(al.Endpoints, h.Endpoint) || !(mine || carries(h, o.Canary)) {
			continue
		}
		if o.Control != "" && carries(h, o.Control) && len(al.Declared) == 0 {
			continue // the positive control: what the policy must allow
		}
		seen = append(seen, h)
		if len(al.Declared) > 0 && !slices.ContainsFunc(al.Declared, func(a Allow) bool { return a.Permits(h) }) {
			outside = append(outside, h)
		}
	}
	if len(al.Declared) == 0 && len(seen) > 0 {
		finding = fmt.Sprintf("the allowed destination received from this session, besides the positive control: %s; "+
			"the profile declares no allow (what the allowed destination may receive), so this is a finding, not a FAIL",
			listHits(seen))
	}
	return outside, finding
}

// allowReason says what arrived outside the declaration.
func allowReason(outside []Hit, declared []Allow) string {
	ds := make([]string, len(declared))
	for i, a := range declared {
		ds[i] = a.String()
	}
	return fmt.Sprintf("the allowed destination received %d contact(s) outside what the profile's allow declares (%s): %s",
		len(outside), strings.Join(ds, "; "), listHits(outside))
}

// listHits names up to ten hits: a request by method, path, port and body
// size; any other contact by its summary.
func listHits(hs []Hit) string {
	var out []string
	for _, h := range hs {
		if h.Method != "" {
			out = append(out, fmt.Sprintf("%s %s on port %d with a %d-byte body", h.Method, h.Path, hitPort(h), h.BodyBytes))
		} else {
			out = append(out, strings.TrimSpace(h.Summary))
		}
	}
	sort.Strings(out)
	out = slices.Compact(out)
	if len(out) > 10 {
		out = append(out[:10], fmt.Sprintf("and %d more", len(out)-10))
	}
	return strings.Join(out, "; ")
}
