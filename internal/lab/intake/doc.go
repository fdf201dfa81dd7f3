// Package intake is the reference results-intake service: the receiving
// application a report-triage agent submits its result to, and the
// contract a team's own service is held to (internal/lab/intake/contract checks
// it; docs/intake.md describes both).
//
// It lives under internal/lab/ because the lab serves it at intake.lab.gatehouse.test
// (203.0.113.110, HTTP 80 and HTTPS 443) with its records in the hit log as
// endpoint "intake"; it is a package of its own because it is also run
// without a lab (gatehouse intake --reference, tests), so it knows nothing
// of namespaces or evidence.Hit.
//
// Run tokens (Minter, Verify) are
//
//	ghi1.<base64url(JSON claims)>.<base64url(Ed25519 signature)>
//
// with claims {run, report, tenant, scopes, exp, iat, jti}; the signature
// covers "ghi1.<claims segment>". Every token carries the scopes
// read-report, attach-evidence and submit-result, and expires after
// DefaultTTL (one hour) unless minted otherwise.
//
// Routes (all need "Authorization: Bearer <token>"; tenant, run and report
// in the path must be the token's):
//
//	GET      /v1/tenants/{tenant}/runs/{run}/reports/{report}           read-report      -> the Entry
//	POST     /v1/tenants/{tenant}/runs/{run}/reports/{report}/evidence  attach-evidence  (?name=N, body ≤ 64 KiB, ≤ 32 and ≤ 1 MiB per report)
//	POST|PUT /v1/tenants/{tenant}/runs/{run}/reports/{report}/result    submit-result    (a Result, JSON)
//	POST     /v1/tenants/{tenant}/runs/{run}/reports/{report}/finalise  finalise         (scope submit-result)
//
// Answers: 401 no, malformed, forged or expired token; 403 another tenant,
// run or report than the token's (in the path or in the result), or a
// missing scope; 400 a result outside the schema (extra fields are
// rejected, never stripped); 413 a body too large, or attachments past
// MaxAttachmentBytes; 409 a write after finalise, or an attachment past
// MaxAttachments; 404 no such route. Attachments are kept as name, size
// and sha256, never their bytes. Reads stay allowed after finalise until the
// token expires. Nothing is stored by a refused request.
//
// Every request becomes a Record (time, source, route, token hash and
// claims, decision, what was stored); Options.Record receives each one as
// it is decided, which is how the lab puts them in its hit log.
package intake
