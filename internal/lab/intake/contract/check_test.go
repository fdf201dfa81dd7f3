package contract_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/lab/intake"
	"github.com/gatehouse-dev/gatehouse/internal/lab/intake/contract"
)

// clock is a fake clock the service, the minter and the gate's waits share.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Sleep(_ context.Context, d time.Duration) error {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
	return nil
}

// reference starts the reference service (or a broken variant) on
// loopback and returns the gate's options for it.
func reference(t *testing.T, v intake.Variant) (contract.Options, *intake.Service) {
	t.Helper()
	clk := &clock{t: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	m, err := intake.NewMinter(intake.MinterOptions{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := intake.New(intake.Options{Key: m.PublicKey(), Now: clk.Now, Broken: v})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(svc)
	t.Cleanup(srv.Close)
	return contract.Options{BaseURL: srv.URL, Contract: contract.Reference(), Mint: contract.MinterMint(m), Sleep: clk.Sleep}, svc
}

func TestReferencePassesEveryCheck(t *testing.T) {
	o, svc := reference(t, intake.Correct)
	res, err := contract.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != len(contract.Checks) {
		t.Fatalf("%d results, want %d", len(res), len(contract.Checks))
	}
	for i, r := range res {
		if r.Name != contract.Checks[i] {
			t.Errorf("result %d is %s, want %s", i, r.Name, contract.Checks[i])
		}
		if r.Verdict != evidence.Pass {
			t.Errorf("%s: %s: %s\n%+v", r.Name, r.Verdict, r.Reason, r.Exchanges)
		}
		if len(r.Exchanges) == 0 {
			t.Errorf("%s: no exchange proves it", r.Name)
		}
	}
	// The store holds only what the contract allows: the valid result and
	// the first result of the finalised report, nothing with an extra field.
	for _, e := range svc.Store().All() {
		if len(e.Extra) > 0 || strings.HasSuffix(e.Report, "-other") || strings.HasSuffix(e.Run, "-other") || strings.HasSuffix(e.Tenant, "-other") {
			t.Errorf("stored out of scope: %+v", e)
		}
		if e.Result != nil && len(e.Result.Summary) > intake.MaxSummary {
			t.Errorf("stored an oversize summary for %s", e.Report)
		}
	}
}

// Each broken variant fails exactly its own check, with the request that
// proved it among the exchanges.
func TestBrokenVariantFailsItsCheck(t *testing.T) {
	for _, tc := range []struct {
		v     intake.Variant
		check string
		req   string // in the proving request
	}{
		{intake.AcceptsExtraFields, contract.CheckExtraField, "gh_unauthorised"},
		{intake.AcceptsOtherReport, contract.CheckOtherReport, "-other-report-other/result"},
		{intake.WritesAfterFinalise, contract.CheckWriteFinalised, "-finalise/result"},
		{intake.HonoursExpiredToken, contract.CheckExpiredToken, "-expired"},
	} {
		t.Run(string(tc.v), func(t *testing.T) {
			o, svc := reference(t, tc.v)
			res, err := contract.Run(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range res {
				want := evidence.Pass
				if r.Name == tc.check {
					want = evidence.Fail
				}
				if r.Verdict != want {
					t.Errorf("%s: %s (%s), want %s", r.Name, r.Verdict, r.Reason, want)
				}
				if r.Name != tc.check {
					continue
				}
				proved := false
				for _, ex := range r.Exchanges {
					if strings.Contains(ex.Request, tc.req) && ex.Status == 200 {
						proved = true
					}
				}
				if !proved {
					t.Errorf("%s: no accepted request containing %q among %+v", r.Name, tc.req, r.Exchanges)
				}
			}
			if tc.v == intake.AcceptsExtraFields {
				found := false
				for _, e := range svc.Store().All() {
					found = found || len(e.Extra) > 0
				}
				if !found {
					t.Error("the broken store holds no extra field, yet the check failed")
				}
			}
		})
	}
}

// A service that refuses everything must not pass the refusal checks.
func TestRefuseAllIsNotAPass(t *testing.T) {
	o, _ := reference(t, intake.Correct)
	o.Mint = func(ctx context.Context, s intake.Subject, ttl time.Duration) (string, error) {
		return "not-a-token", nil
	}
	res, err := contract.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Verdict == evidence.Pass {
			t.Errorf("%s passed against a service that refuses everything: %s", r.Name, r.Reason)
		}
	}
	if res[0].Verdict != evidence.Fail {
		t.Errorf("%s: %s, want FAIL", res[0].Name, res[0].Verdict)
	}
}

func TestTokenNeverShownWhole(t *testing.T) {
	o, _ := reference(t, intake.Correct)
	var toks []string
	mint := o.Mint
	o.Mint = func(ctx context.Context, s intake.Subject, ttl time.Duration) (string, error) {
		tok, err := mint(ctx, s, ttl)
		toks = append(toks, tok)
		return tok, err
	}
	res, _ := contract.Run(context.Background(), o)
	for _, r := range res {
		for _, ex := range r.Exchanges {
			for _, tok := range toks {
				if strings.Contains(ex.Request, tok) {
					t.Fatalf("%s: a request shows a whole token", r.Name)
				}
			}
		}
	}
}
