package contract

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/lab/intake"
)

// Check names, in the order Run makes them.
const (
	CheckValid          = "valid-result-accepted"
	CheckExtraField     = "extra-field-rejected"
	CheckOtherReport    = "other-report-rejected"
	CheckOtherRun       = "other-run-rejected"
	CheckOtherTenant    = "other-tenant-rejected"
	CheckOversize       = "oversize-field-rejected"
	CheckMissingToken   = "missing-token-refused"
	CheckGarbledToken   = "garbled-token-refused"
	CheckWriteFinalised = "write-after-finalise-refused"
	CheckReadFinalised  = "read-after-finalise-allowed"
	CheckExpiredToken   = "expired-token-refused"
)

// Checks are every check, in order.
var Checks = []string{CheckValid, CheckExtraField, CheckOtherReport, CheckOtherRun, CheckOtherTenant,
	CheckOversize, CheckMissingToken, CheckGarbledToken, CheckWriteFinalised, CheckReadFinalised, CheckExpiredToken}

// Result is one check's verdict with the exchanges that decided it.
type Result struct {
	Name      string           `json:"name"`
	Verdict   evidence.Verdict `json:"verdict"`
	Reason    string           `json:"reason"`
	Exchanges []Exchange       `json:"exchanges"`
}

// Options configure Run. BaseURL, Mint and Contract are required.
type Options struct {
	BaseURL  string       // scheme://host[:port][/prefix], no trailing slash needed
	Contract Contract     // Reference() for the reference service
	Mint     Mint         // CommandMint or MinterMint
	Client   *http.Client // default: 15 s timeout, redirects not followed
	// ExpiredTTL is the lifetime asked for the token the expiry check
	// waits out (default 1 s); ExpiryWait is how long it waits after
	// minting before using it (default ExpiredTTL + 1.5 s, as exp is in
	// whole seconds).
	ExpiredTTL time.Duration
	ExpiryWait time.Duration
	// Sleep waits d (default: a timer, ended by ctx). Tests give one that
	// moves a fake clock.
	Sleep func(ctx context.Context, d time.Duration) error
	// ID names this run's tenant, run and reports (default random), so
	// two runs against one service never see each other's data.
	ID string
}

// Run makes every check against the service. It returns an error only
// when the options are wrong; what the service does is in the results.
func Run(ctx context.Context, o Options) ([]Result, error) {
	if o.BaseURL == "" || o.Mint == nil {
		return nil, errors.New("contract: run: BaseURL and Mint are required")
	}
	if err := o.Contract.Validate(); err != nil {
		return nil, err
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 15 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if o.ExpiredTTL <= 0 {
		o.ExpiredTTL = time.Second
	}
	if o.ExpiryWait <= 0 {
		o.ExpiryWait = o.ExpiredTTL + 1500*time.Millisecond
	}
	if o.Sleep == nil {
		o.Sleep = sleep
	}
	if o.ID == "" {
		o.ID = nonce()
	}
	g := &gate{o: o, cl: &client{base: strings.TrimRight(o.BaseURL, "/"), c: o.Contract, http: o.Client}}
	out := []Result{g.valid(ctx), g.extraField(ctx)}
	for _, k := range []string{"report", "run", "tenant"} {
		out = append(out, g.other(ctx, k))
	}
	out = append(out, g.oversize(ctx), g.missingToken(ctx), g.garbledToken(ctx))
	out = append(out, g.finalised(ctx)...)
	out = append(out, g.expired(ctx))
	// A service that refuses everything would pass every refusal check:
	// without the positive control they prove nothing.
	if out[0].Verdict != evidence.Pass {
		for i := range out[1:] {
			r := &out[i+1]
			if r.Verdict == evidence.Pass && r.Name != CheckReadFinalised {
				r.Verdict = evidence.Inconclusive
				r.Reason = "the service did not accept a valid result (" + CheckValid + "), so its refusal proves nothing: " + r.Reason
			}
		}
	}
	return out, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

type gate struct {
	o  Options
	cl *client
}

// subject is this run's subject for one check; other values are made by
// suffixing "-other".
func (g *gate) subject(check string) intake.Subject {
	return intake.Subject{Tenant: "gh-tenant-" + g.o.ID, Run: "gh-run-" + g.o.ID, Report: "gh-report-" + g.o.ID + "-" + check}
}

func (g *gate) mint(ctx context.Context, s intake.Subject, ttl time.Duration) (string, *Result) {
	tok, err := g.o.Mint(ctx, s, ttl)
	if err != nil {
		return "", &Result{Verdict: evidence.Inconclusive, Reason: "no token: " + err.Error()}
	}
	return tok, nil
}

func (g *gate) marker() string { return "gh-intake-marker-" + nonce() }

func named(name string, r *Result) Result { r.Name = name; return *r }

func inconclusive(name, reason string, exs ...Exchange) Result {
	return Result{Name: name, Verdict: evidence.Inconclusive, Reason: reason, Exchanges: exs}
}

// readBack reads sub with a fresh token and reports whether marker is in
// what the service returns. ok is false when the read did not succeed.
func (g *gate) readBack(ctx context.Context, sub intake.Subject, marker string) (Exchange, bool, bool) {
	tok, err := g.o.Mint(ctx, sub, 0)
	if err != nil {
		return Exchange{Op: intake.OpRead, Error: "no token for the read-back: " + err.Error()}, false, false
	}
	ex := g.cl.do(ctx, intake.OpRead, sub, "", tok, nil)
	if !success(ex) {
		return ex, false, false
	}
	return ex, bytes.Contains(ex.body, []byte(marker)), true
}

func success(ex Exchange) bool { return ex.Status >= 200 && ex.Status < 300 }
func refused(ex Exchange) bool { return ex.Status >= 400 && ex.Status < 500 }

// refusal judges a write that must be refused and leave nothing stored:
// the read-back of each subject in where must not show marker. strip
// allows the write to succeed as long as nothing of it is stored.
func (g *gate) refusal(ctx context.Context, name string, write Exchange, marker string, strip bool, where ...intake.Subject) Result {
	exs := []Exchange{write}
	if write.Status == 0 {
		return inconclusive(name, "no answer: "+write.Error, exs...)
	}
	for _, sub := range where {
		rb, stored, ok := g.readBack(ctx, sub, marker)
		exs = append(exs, rb)
		if stored {
			return Result{name, evidence.Fail, fmt.Sprintf("answered %d and STORED it: the read-back of report %s shows the marker", write.Status, sub.Report), exs}
		}
		if !ok {
			return inconclusive(name, fmt.Sprintf("answered %d, but the read-back of report %s failed, so storage is unknown", write.Status, sub.Report), exs...)
		}
	}
	switch {
	case refused(write):
		return Result{name, evidence.Pass, fmt.Sprintf("refused with %d and nothing stored", write.Status), exs}
	case success(write) && strip:
		return Result{name, evidence.Pass, fmt.Sprintf("accepted with %d, and the extra field was not stored (the contract strips)", write.Status), exs}
	case success(write):
		return Result{name, evidence.Fail, fmt.Sprintf("ACCEPTED with %d", write.Status), exs}
	}
	return inconclusive(name, fmt.Sprintf("answered %d: neither an acceptance nor a refusal", write.Status), exs...)
}

func (g *gate) valid(ctx context.Context) Result {
	sub := g.subject("valid")
	tok, bad := g.mint(ctx, sub, 0)
	if bad != nil {
		return named(CheckValid, bad)
	}
	m := g.marker()
	w := g.cl.do(ctx, intake.OpSubmit, sub, "", tok, g.cl.result(sub, m, nil))
	if !success(w) {
		return Result{CheckValid, evidence.Fail, fmt.Sprintf("a valid result was not accepted (status %d %s)", w.Status, w.Error), []Exchange{w}}
	}
	rb, stored, ok := g.readBack(ctx, sub, m)
	switch {
	case !ok:
		return Result{CheckValid, evidence.Fail, fmt.Sprintf("accepted, but the report cannot be read back (status %d %s)", rb.Status, rb.Error), []Exchange{w, rb}}
	case !stored:
		return Result{CheckValid, evidence.Fail, "accepted, but the read-back does not show it", []Exchange{w, rb}}
	}
	return Result{CheckValid, evidence.Pass, fmt.Sprintf("accepted with %d and read back", w.Status), []Exchange{w, rb}}
}

func (g *gate) extraField(ctx context.Context) Result {
	sub := g.subject("extra")
	tok, bad := g.mint(ctx, sub, 0)
	if bad != nil {
		return named(CheckExtraField, bad)
	}
	m := g.marker()
	// The marker is only in the extra field, so a read-back that shows it
	// shows the extra field stored.
	w := g.cl.do(ctx, intake.OpSubmit, sub, "", tok, g.cl.result(sub, "a result with an extra field", map[string]any{"gh_unauthorised": m}))
	return g.refusal(ctx, CheckExtraField, w, m, g.o.Contract.ExtraFields == "strip", sub)
}

// other aims a result at another tenant, run or report than the token's.
func (g *gate) other(ctx context.Context, key string) Result {
	name := map[string]string{"report": CheckOtherReport, "run": CheckOtherRun, "tenant": CheckOtherTenant}[key]
	if !g.o.Contract.names(key) {
		return inconclusive(name, "the contract names the "+key+" neither in the result path nor in a field, so no request can aim at another one")
	}
	sub := g.subject("other-" + key)
	tok, bad := g.mint(ctx, sub, 0)
	if bad != nil {
		return named(name, bad)
	}
	to := sub
	switch key {
	case "report":
		to.Report += "-other"
	case "run":
		to.Run += "-other"
	default:
		to.Tenant += "-other"
	}
	m := g.marker()
	w := g.cl.do(ctx, intake.OpSubmit, to, "", tok, g.cl.result(to, m, nil))
	return g.refusal(ctx, name, w, m, false, to, sub)
}

func (g *gate) oversize(ctx context.Context) Result {
	sub := g.subject("oversize")
	tok, bad := g.mint(ctx, sub, 0)
	if bad != nil {
		return named(CheckOversize, bad)
	}
	m := g.marker()
	big := m + strings.Repeat("x", g.o.Contract.SummaryMax+1-len(m))
	w := g.cl.do(ctx, intake.OpSubmit, sub, "", tok, g.cl.result(sub, big, nil))
	return g.refusal(ctx, CheckOversize, w, m, false, sub)
}

func (g *gate) missingToken(ctx context.Context) Result {
	sub := g.subject("no-token")
	return g.badToken(ctx, CheckMissingToken, sub, "")
}

func (g *gate) garbledToken(ctx context.Context) Result {
	sub := g.subject("garbled")
	tok, bad := g.mint(ctx, sub, 0)
	if bad != nil {
		return named(CheckGarbledToken, bad)
	}
	return g.badToken(ctx, CheckGarbledToken, sub, garble(tok))
}

// garble changes one character in the middle of a token (never a dot), so
// a signature or MAC over it no longer matches.
func garble(tok string) string {
	b := []byte(tok)
	for i := len(b) / 2; i < len(b); i++ {
		if b[i] == '.' {
			continue
		}
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		break
	}
	return string(b)
}

// badToken tries a read and a write with token; both must be refused and
// the write not stored.
func (g *gate) badToken(ctx context.Context, name string, sub intake.Subject, token string) Result {
	r := g.cl.do(ctx, intake.OpRead, sub, "", token, nil)
	if success(r) {
		return Result{name, evidence.Fail, fmt.Sprintf("a read was ANSWERED with %d", r.Status), []Exchange{r}}
	}
	m := g.marker()
	w := g.cl.do(ctx, intake.OpSubmit, sub, "", token, g.cl.result(sub, m, nil))
	res := g.refusal(ctx, name, w, m, false, sub)
	res.Exchanges = append([]Exchange{r}, res.Exchanges...)
	if res.Verdict == evidence.Pass && !refused(r) {
		return inconclusive(name, fmt.Sprintf("the read answered %d: neither an acceptance nor a refusal", r.Status), res.Exchanges...)
	}
	return res
}

// finalised checks the write lock and that it is not a read lock.
func (g *gate) finalised(ctx context.Context) []Result {
	sub := g.subject("finalise")
	tok, bad := g.mint(ctx, sub, 0)
	if bad != nil {
		return []Result{named(CheckWriteFinalised, bad), named(CheckReadFinalised, &Result{Verdict: bad.Verdict, Reason: bad.Reason})}
	}
	m1 := g.marker()
	w1 := g.cl.do(ctx, intake.OpSubmit, sub, "", tok, g.cl.result(sub, m1, nil))
	fin := g.cl.do(ctx, intake.OpFinalise, sub, "", tok, nil)
	if !success(w1) || !success(fin) {
		why := fmt.Sprintf("could not set up: the first result answered %d, finalise %d", w1.Status, fin.Status)
		return []Result{inconclusive(CheckWriteFinalised, why, w1, fin), inconclusive(CheckReadFinalised, why, w1, fin)}
	}
	// Read first: a broken service's later write would replace the result.
	r := g.cl.do(ctx, intake.OpRead, sub, "", tok, nil)
	read := Result{Name: CheckReadFinalised, Exchanges: []Exchange{fin, r}}
	switch {
	case success(r) && bytes.Contains(r.body, []byte(m1)):
		read.Verdict, read.Reason = evidence.Pass, fmt.Sprintf("read with the same token after finalise answered %d with the result", r.Status)
	case refused(r):
		read.Verdict, read.Reason = evidence.Fail, fmt.Sprintf("read after finalise REFUSED with %d: the write lock is a read lock", r.Status)
	case success(r):
		read.Verdict, read.Reason = evidence.Inconclusive, fmt.Sprintf("read after finalise answered %d without the stored result", r.Status)
	default:
		read.Verdict, read.Reason = evidence.Inconclusive, fmt.Sprintf("read after finalise answered %d %s", r.Status, r.Error)
	}
	m2 := g.marker()
	w2 := g.cl.do(ctx, intake.OpSubmit, sub, "", tok, g.cl.result(sub, m2, nil))
	write := g.refusal(ctx, CheckWriteFinalised, w2, m2, false, sub)
	write.Reason = "a result after finalise: " + write.Reason
	if write.Verdict == evidence.Pass {
		// Attaching evidence is a write too.
		m3 := g.marker()
		a := g.cl.do(ctx, intake.OpAttach, sub, m3, tok, []byte(`{"note":"`+m3+`"}`))
		att := g.refusal(ctx, CheckWriteFinalised, a, m3, false, sub)
		exs := append(write.Exchanges, att.Exchanges...)
		if att.Verdict == evidence.Pass {
			write.Reason += "; an evidence attachment after finalise: " + att.Reason
		} else {
			write = att
			write.Reason = "an evidence attachment after finalise: " + att.Reason
		}
		write.Exchanges = exs
	}
	write.Exchanges = append([]Exchange{w1, fin}, write.Exchanges...)
	return []Result{write, read}
}

func (g *gate) expired(ctx context.Context) Result {
	sub := g.subject("expired")
	tok, bad := g.mint(ctx, sub, g.o.ExpiredTTL)
	if bad != nil {
		return named(CheckExpiredToken, bad)
	}
	if err := g.o.Sleep(ctx, g.o.ExpiryWait); err != nil {
		return inconclusive(CheckExpiredToken, "interrupted while waiting for the token to expire: "+err.Error())
	}
	res := g.badToken(ctx, CheckExpiredToken, sub, tok)
	res.Reason = fmt.Sprintf("token minted for %s, used %s later: %s", g.o.ExpiredTTL, g.o.ExpiryWait, res.Reason)
	return res
}
