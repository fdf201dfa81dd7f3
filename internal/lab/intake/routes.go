package intake

import (
	"net/http"
	"strings"
)

// Routes of the reference service. Every path names the tenant, run and
// report it acts on; they must be the token's (403 otherwise). A contract
// for another service maps the same operations to its own routes.
const (
	PathReport   = "/v1/tenants/{tenant}/runs/{run}/reports/{report}"          // GET: read-report
	PathEvidence = "/v1/tenants/{tenant}/runs/{run}/reports/{report}/evidence" // POST ?name=N: attach-evidence
	PathResult   = "/v1/tenants/{tenant}/runs/{run}/reports/{report}/result"   // POST or PUT: submit-result
	PathFinalise = "/v1/tenants/{tenant}/runs/{run}/reports/{report}/finalise" // POST: finalise
)

// routed is a request matched to an operation.
type routed struct {
	op, scope string
	sub       Subject
}

// route matches method and path. Segments are taken as they arrive
// (already unescaped by net/http) and must be non-empty.
func route(method, path string) (routed, bool) {
	seg := strings.Split(strings.TrimPrefix(path, "/"), "/")
	if len(seg) < 7 || seg[0] != "v1" || seg[1] != "tenants" || seg[3] != "runs" || seg[5] != "reports" {
		return routed{}, false
	}
	sub := Subject{Tenant: seg[2], Run: seg[4], Report: seg[6]}
	if sub.Tenant == "" || sub.Run == "" || sub.Report == "" {
		return routed{}, false
	}
	rest := strings.Join(seg[7:], "/")
	switch {
	case rest == "" && method == http.MethodGet:
		return routed{OpRead, ScopeRead, sub}, true
	case rest == "evidence" && method == http.MethodPost:
		return routed{OpAttach, ScopeAttach, sub}, true
	case rest == "result" && (method == http.MethodPost || method == http.MethodPut):
		return routed{OpSubmit, ScopeSubmit, sub}, true
	case rest == "finalise" && method == http.MethodPost:
		return routed{OpFinalise, ScopeSubmit, sub}, true
	}
	return routed{}, false
}
