package intake_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/lab/intake"
)

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func minter(t testing.TB, now func() time.Time) *intake.Minter {
	t.Helper()
	m, err := intake.NewMinter(intake.MinterOptions{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

var sub = intake.Subject{Run: "r1", Report: "p1", Tenant: "t1"}

func TestVerify(t *testing.T) {
	m := minter(t, func() time.Time { return t0 })
	other := minter(t, func() time.Time { return t0 })
	tok, err := m.Mint(sub, 0)
	if err != nil {
		t.Fatal(err)
	}
	forged, _ := other.Mint(sub, 0)
	parts := strings.Split(tok, ".")
	swapped := parts[0] + "." + strings.Split(forged, ".")[1] + "." + parts[2]
	short, _ := m.Mint(sub, time.Minute)
	past, _ := m.Mint(sub, -time.Second)
	for _, tc := range []struct {
		name string
		tok  string
		at   time.Time
		want error
	}{
		{"valid", tok, t0, nil},
		{"valid until the last second of the hour", tok, t0.Add(time.Hour - time.Second), nil},
		{"expired at exp", tok, t0.Add(time.Hour), intake.ErrExpired},
		{"short ttl expired", short, t0.Add(2 * time.Minute), intake.ErrExpired},
		{"negative ttl already expired", past, t0, intake.ErrExpired},
		{"empty", "", t0, intake.ErrNoToken},
		{"other key", forged, t0, intake.ErrSignature},
		{"claims swapped", swapped, t0, intake.ErrSignature},
		{"signature flipped", parts[0] + "." + parts[1] + "." + flip(parts[2]), t0, intake.ErrSignature},
		{"wrong prefix", "ghi2." + parts[1] + "." + parts[2], t0, intake.ErrMalformed},
		{"two parts", parts[0] + "." + parts[1], t0, intake.ErrMalformed},
		{"not base64", parts[0] + ".!!!." + parts[2], t0, intake.ErrMalformed},
		{"huge", strings.Repeat("a", 10000), t0, intake.ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := intake.Verify(m.PublicKey(), tc.tok, tc.at)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if err == nil && c.Subject != sub {
				t.Fatalf("claims %+v", c)
			}
		})
	}
}

func flip(s string) string {
	b := []byte(s)
	i := len(b) / 2
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	return string(b)
}

func TestScopesAndTTL(t *testing.T) {
	m := minter(t, func() time.Time { return t0 })
	tok, _ := m.Mint(sub, 0)
	c, err := intake.Verify(m.PublicKey(), tok, t0)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{intake.ScopeRead, intake.ScopeAttach, intake.ScopeSubmit} {
		if !c.Allows(s) {
			t.Errorf("token lacks %s", s)
		}
	}
	if c.Allows("admin") || len(c.Scopes) != 3 {
		t.Errorf("scopes %v, want exactly the three", c.Scopes)
	}
	if got := time.Unix(c.Exp, 0).Sub(time.Unix(c.Iat, 0)); got != intake.DefaultTTL {
		t.Errorf("ttl %s, want %s", got, intake.DefaultTTL)
	}
	if _, err := m.Mint(intake.Subject{Run: "r"}, 0); err == nil {
		t.Error("minted a token without report and tenant")
	}
	if intake.TokenHash(tok) == "" || strings.Contains(intake.TokenHash(tok), tok) {
		t.Error("token hash shows the token")
	}
}

func FuzzVerify(f *testing.F) {
	m := minter(f, func() time.Time { return t0 })
	tok, _ := m.Mint(sub, 0)
	f.Add(tok)
	f.Add("ghi1..")
	f.Add("ghi1.e30.AAAA")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := intake.Verify(m.PublicKey(), s, t0)
		if err == nil && s != tok {
			// Only a token the minter signed verifies; a different string
			// that does would be a forgery (base64 padding bits aside).
			if c.Subject != sub {
				t.Fatalf("%q verified as %+v", s, c)
			}
		}
	})
}
