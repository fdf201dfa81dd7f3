package lab_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/lab"
	"github.com/gatehouse-dev/gatehouse/internal/lab/intake"
)

// A session submits a result to the lab's intake by name over HTTPS with a
// token the lab minted: the service stores it for that report only, and the
// hit log holds the request as endpoint "intake" with the token's hash,
// never the token.
func TestIntakeFromSession(t *testing.T) {
	l := upLab(t)
	nw := attach(t, l, "s1")
	if got := l.Addrs().Intake; got != lab.IntakeV4 {
		t.Fatalf("Addrs().Intake = %q", got)
	}
	if lab.DestOf(lab.IntakeV4) != "intake" {
		t.Fatalf("no accounting counter for the intake address")
	}
	sub := intake.Subject{Run: "r1", Report: "p1", Tenant: "t1"}
	tok, err := l.IntakeMinter().Mint(sub, 0)
	if err != nil {
		t.Fatal(err)
	}
	put := func(url, body string) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPut, url, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := client(nw).Do(req)
		if err != nil {
			t.Fatalf("PUT %s: %v", url, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	// The name is resolved by the lab's resolver, as a sandbox would.
	if got := answers(query(t, nw, "udp", lab.ResolverV4+":53", lab.IntakeLabName, dns.TypeA)); len(got) != 1 || got[0] != lab.IntakeV4 {
		t.Fatalf("%s resolves to %v, want %s", lab.IntakeLabName, got, lab.IntakeV4)
	}
	base := "https://" + lab.IntakeV4 + "/v1/tenants/t1/runs/r1/reports/"
	good := `{"report_id":"p1","run_id":"r1","tenant_id":"t1","severity":"low","summary":"triaged"}`
	if got := put(base+"p1/result", good); got != http.StatusOK {
		t.Fatalf("valid result: %d", got)
	}
	other := `{"report_id":"p2","run_id":"r1","tenant_id":"t1","severity":"low","summary":"elsewhere"}`
	if got := put(base+"p2/result", other); got != http.StatusForbidden {
		t.Fatalf("another report's result: %d, want 403", got)
	}
	all := l.Intake().Store().All()
	if len(all) != 1 || all[0].Subject != sub || all[0].Result == nil || all[0].Result.Summary != "triaged" {
		t.Fatalf("store: %+v", all)
	}
	acc := waitHit(t, l, "s1", func(h evidence.Hit) bool { return h.Endpoint == "intake" && h.Served })
	ref := waitHit(t, l, "s1", func(h evidence.Hit) bool { return h.Endpoint == "intake" && strings.Contains(h.Path, "/p2/") })
	for _, h := range []evidence.Hit{acc, ref} {
		if strings.Contains(h.Data, tok) || strings.Contains(h.Summary, tok) {
			t.Fatalf("a hit holds the whole token: %+v", h)
		}
		var rec intake.Record
		if err := json.Unmarshal([]byte(h.Data), &rec); err != nil || rec.TokenHash != intake.TokenHash(tok) || rec.Claims == nil {
			t.Fatalf("hit data is not the record with the token's hash: %v %q", err, h.Data)
		}
		if h.Proto != "https" || !strings.HasPrefix(h.Src, nw.IPv4) {
			t.Errorf("hit %s from %s", h.Proto, h.Src)
		}
	}
	if ref.Served || !strings.Contains(ref.Summary, "403") {
		t.Errorf("refused request recorded as %q served=%v", ref.Summary, ref.Served)
	}
}
