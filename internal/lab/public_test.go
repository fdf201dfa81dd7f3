package lab_test

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/lab"
)

// The defaults must be what "allow public, drop private and reserved"
// guards let through, or the public attempts test nothing new.
func TestDefaultPublicAddressesLookPublic(t *testing.T) {
	p := lab.DefaultPublic()
	for _, s := range []string{p.CallbackV4, p.CallbackV6, p.AuthorityV4} {
		a := netip.MustParseAddr(s)
		if a.IsPrivate() || a.IsLoopback() || a.IsLinkLocalUnicast() || a.IsMulticast() || a.IsUnspecified() || !a.IsGlobalUnicast() {
			t.Errorf("%s is not global unicast to Go's net/netip", s)
		}
	}
	got, err := lab.PublicFromEnv(func(string) string { return "" })
	if err != nil || got != p {
		t.Errorf("PublicFromEnv with nothing set = %+v, %v; want the defaults", got, err)
	}
}

func TestPublicOverrideValidation(t *testing.T) {
	tests := []struct {
		name    string
		v4, v6  string
		dns     string
		wantErr string // "" means accepted
		want    lab.Public
	}{
		{name: "defaults", want: lab.DefaultPublic()},
		{name: "own block, canonicalised", v4: "192.88.99.77", v6: "3FFE:0:0::77", dns: "192.88.99.78",
			want: lab.Public{CallbackV4: "192.88.99.77", CallbackV6: "3ffe::77", AuthorityV4: "192.88.99.78"}},
		{name: "garbage", v4: "callback", wantErr: "ParseAddr"},
		{name: "loopback", v4: "127.0.0.2", wantErr: "loopback"},
		{name: "unspecified v6", v6: "::", wantErr: "loopback, unspecified"},
		{name: "multicast", v4: "224.0.0.1", wantErr: "multicast"},
		{name: "v6 multicast", v6: "ff02::1", wantErr: "multicast"},
		{name: "link-local metadata", v4: "169.254.169.254", wantErr: "link-local"},
		{name: "private", v4: "10.1.2.3", wantErr: "private"},
		{name: "unique local", v6: "fd00::10", wantErr: "private"},
		{name: "documentation", v4: "203.0.113.7", wantErr: "non-public"},
		{name: "v6 documentation", v6: "2001:db8::7", wantErr: "non-public"},
		{name: "shared address space", v4: "100.64.0.1", wantErr: "non-public"},
		{name: "benchmarking", v4: "198.18.0.1", wantErr: "non-public"},
		{name: "broadcast", v4: "255.255.255.255", wantErr: "non-public"},
		{name: "wrong family", v4: "3ffe::1", wantErr: "not an IPv4"},
		{name: "mapped", v6: "::ffff:192.88.99.1", wantErr: "IPv4-mapped"},
		{name: "zone", v6: "3ffe::1%eth0", wantErr: "zone"},
		{name: "a fixed lab address", v4: "168.63.129.16", wantErr: "fixed lab address"},
		{name: "the seal's probe", v4: "8.8.8.8", wantErr: "seal check"},
		{name: "twice", v4: "192.88.99.9", dns: "192.88.99.9", wantErr: "already"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{lab.EnvPublicV4: tc.v4, lab.EnvPublicV6: tc.v6, lab.EnvPublicDNSV4: tc.dns}
			got, err := lab.PublicFromEnv(func(k string) string { return env[k] })
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.wantErr == "" && got != tc.want:
				t.Errorf("got %+v, want %+v", got, tc.want)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("err = %v, want one saying %q", err, tc.wantErr)
			}
		})
	}
}

// An override reaches every part of the lab: the address is served (here on
// an arbitrary port, through the catch-all), counted by the accounting, and
// reported by Addrs; the default is then not served.
func TestUpUsesThePublicOverride(t *testing.T) {
	needLab(t)
	ctx := context.Background()
	if _, err := lab.Up(ctx, lab.Options{Public: lab.Public{CallbackV4: "127.0.0.9"}}); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("Up accepted a loopback public address: %v", err)
	}
	l, err := lab.Up(ctx, lab.Options{Logf: t.Logf, Public: lab.Public{CallbackV4: "192.88.99.77"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close(context.WithoutCancel(ctx)) })
	if p := l.Addrs().Public; p.CallbackV4 != "192.88.99.77" || p.CallbackV6 != lab.PublicCallbackV6 {
		t.Fatalf("Addrs().Public = %+v", p)
	}
	nw := attach(t, l, "ovr")
	c, err := dial(ctx, nw, "tcp", "192.88.99.77:2222")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = c.Write([]byte("override-marker"))
	c.Close()
	h := waitHit(t, l, "ovr", func(h evidence.Hit) bool { return strings.Contains(h.Data, "override-marker") })
	if h.Dst != "192.88.99.77:2222" {
		t.Errorf("hit Dst %q", h.Dst)
	}
	em, err := l.Emitted(ctx, "ovr")
	if err != nil || em["callback4_public"] == 0 {
		t.Errorf("accounting did not count the override: %v %v", em, err)
	}
	if l.Addrs().DestOf("192.88.99.77") != "callback4_public" || l.Addrs().DestOf(lab.PublicCallbackV4) != "" {
		t.Error("DestOf does not follow the override")
	}
	if c, err := dial(ctx, nw, "tcp", lab.PublicCallbackV4+":80"); err == nil {
		c.Close()
		t.Error("the default public address is still served after an override")
	}
}
