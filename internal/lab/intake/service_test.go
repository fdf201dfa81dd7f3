package intake_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/lab/intake"
)

type fixture struct {
	svc *intake.Service
	m   *intake.Minter
	now *time.Time
}

func newFixture(t *testing.T, v intake.Variant) *fixture {
	now := t0
	f := &fixture{now: &now}
	f.m = minter(t, func() time.Time { return *f.now })
	svc, err := intake.New(intake.Options{Key: f.m.PublicKey(), Now: func() time.Time { return *f.now }, Broken: v})
	if err != nil {
		t.Fatal(err)
	}
	f.svc = svc
	return f
}

func (f *fixture) do(t *testing.T, method, path, tok string, body []byte) int {
	t.Helper()
	r := httptest.NewRequest(method, path, bytes.NewReader(body))
	if tok != "" {
		r.Header.Set("Authorization", "Bearer "+tok)
	}
	w := httptest.NewRecorder()
	f.svc.ServeHTTP(w, r)
	return w.Code
}

const base = "/v1/tenants/t1/runs/r1/reports/p1"

func TestServiceDecisionsAndStore(t *testing.T) {
	for _, tc := range []struct {
		name    string
		method  string
		path    string
		sub     intake.Subject // the token's
		body    func(t *testing.T) []byte
		advance time.Duration
		want    int
		stored  bool // a result is stored for t1/r1/p1 afterwards
	}{
		{"valid result", "PUT", base + "/result", sub, func(t *testing.T) []byte { return body(t, nil) }, 0, 200, true},
		{"valid result by POST", "POST", base + "/result", sub, func(t *testing.T) []byte { return body(t, nil) }, 0, 200, true},
		{"extra field", "PUT", base + "/result", sub, func(t *testing.T) []byte { return body(t, func(m map[string]any) { m["x"] = 1 }) }, 0, 400, false},
		{"body names another report", "PUT", base + "/result", sub, func(t *testing.T) []byte { return body(t, func(m map[string]any) { m["report_id"] = "p2" }) }, 0, 403, false},
		{"body names another tenant", "PUT", base + "/result", sub, func(t *testing.T) []byte { return body(t, func(m map[string]any) { m["tenant_id"] = "t2" }) }, 0, 403, false},
		{"path names another run", "PUT", "/v1/tenants/t1/runs/r2/reports/p1/result", sub, func(t *testing.T) []byte { return body(t, nil) }, 0, 403, false},
		{"token for another report", "PUT", base + "/result", intake.Subject{Run: "r1", Report: "p2", Tenant: "t1"}, func(t *testing.T) []byte { return body(t, nil) }, 0, 403, false},
		{"expired token", "PUT", base + "/result", sub, func(t *testing.T) []byte { return body(t, nil) }, time.Hour, 401, false},
		{"too large", "PUT", base + "/result", sub, func(t *testing.T) []byte { return bytes.Repeat([]byte("a"), intake.MaxResultBody+1) }, 0, 413, false},
		{"no route", "DELETE", base, sub, func(t *testing.T) []byte { return nil }, 0, 404, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, intake.Correct)
			tok, _ := f.m.Mint(tc.sub, 0)
			*f.now = f.now.Add(tc.advance)
			if got := f.do(t, tc.method, tc.path, tok, tc.body(t)); got != tc.want {
				t.Fatalf("status %d, want %d", got, tc.want)
			}
			e, _ := f.svc.Store().Get(sub)
			if (e.Result != nil) != tc.stored {
				t.Fatalf("stored %+v, want stored=%v", e.Result, tc.stored)
			}
			if !tc.stored && len(f.svc.Store().All()) != 0 {
				t.Fatalf("something stored: %+v", f.svc.Store().All())
			}
			recs := f.svc.Records()
			if len(recs) != 1 || recs[0].Status != tc.want || recs[0].TokenHash != intake.TokenHash(tok) {
				t.Fatalf("records %+v", recs)
			}
			if recs[0].Accepted() != (tc.want == 200) || (recs[0].Stored != "") != tc.stored {
				t.Fatalf("record says accepted=%v stored=%q", recs[0].Accepted(), recs[0].Stored)
			}
		})
	}
}

func TestFinaliseLocksWritesNotReads(t *testing.T) {
	f := newFixture(t, intake.Correct)
	tok, _ := f.m.Mint(sub, 0)
	steps := []struct {
		method, path string
		body         []byte
		advance      time.Duration
		want         int
	}{
		{"PUT", base + "/result", body(t, nil), 0, 200},
		{"POST", base + "/evidence?name=log.txt", []byte("evidence"), 0, 200},
		{"POST", base + "/finalise", nil, 0, 200},
		{"PUT", base + "/result", body(t, func(m map[string]any) { m["summary"] = "changed" }), 0, 409},
		{"POST", base + "/evidence?name=late.txt", []byte("late"), 0, 409},
		{"POST", base + "/finalise", nil, 0, 409},
		{"GET", base, nil, 30 * time.Minute, 200},
		{"GET", base, nil, 30 * time.Minute, 401}, // the hour is up
	}
	for i, s := range steps {
		*f.now = f.now.Add(s.advance)
		if got := f.do(t, s.method, s.path, tok, s.body); got != s.want {
			t.Fatalf("step %d %s %s: %d, want %d", i, s.method, s.path, got, s.want)
		}
	}
	e, _ := f.svc.Store().Get(sub)
	if !e.Finalised || e.Result.Summary != "s" || len(e.Evidence) != 1 || e.Evidence[0].Name != "log.txt" || e.Writes != 2 {
		t.Fatalf("store after finalise: %+v", e)
	}
	for _, r := range f.svc.Records() {
		if strings.Contains(r.Body, tok) || r.TokenHash == tok {
			t.Fatal("a record holds the whole token")
		}
	}
}

func TestMissingAndGarbledToken(t *testing.T) {
	f := newFixture(t, intake.Correct)
	tok, _ := f.m.Mint(sub, 0)
	for _, bad := range []string{"", "Bearer", tok[:len(tok)-4], "ghi1.e30." + strings.Split(tok, ".")[2]} {
		r := httptest.NewRequest("GET", base, nil)
		if bad != "" {
			r.Header.Set("Authorization", "Bearer "+bad)
		}
		w := httptest.NewRecorder()
		f.svc.ServeHTTP(w, r)
		if w.Code != http.StatusUnauthorized {
			t.Errorf("token %.20q: %d, want 401", bad, w.Code)
		}
	}
}

func TestBrokenVariantsDoWhatTheySay(t *testing.T) {
	f := newFixture(t, intake.AcceptsExtraFields)
	tok, _ := f.m.Mint(sub, 0)
	if got := f.do(t, "PUT", base+"/result", tok, body(t, func(m map[string]any) { m["x"] = 1 })); got != 200 {
		t.Fatalf("accepts-extra-fields: %d", got)
	}
	if e, _ := f.svc.Store().Get(sub); len(e.Extra) != 1 {
		t.Fatalf("accepts-extra-fields stored %+v", e)
	}
	if _, err := intake.New(intake.Options{Key: f.m.PublicKey(), Broken: "accepts-anything"}); err == nil {
		t.Error("an unknown variant was accepted")
	}
}
