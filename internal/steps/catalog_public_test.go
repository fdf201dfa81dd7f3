package steps

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/lab"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// Every network attempt's first packet must go to a lab destination the
// accounting counts, or the kernel-side proof of attempt is lost; and the
// public attempts must follow an overridden address.
func TestEveryAttemptHasACountedDestination(t *testing.T) {
	over := lab.DefaultAddrs()
	over.Public = lab.Public{CallbackV4: "192.88.99.77", CallbackV6: "3ffe::77", AuthorityV4: "192.88.99.78"}
	over.Callback = []string{lab.CallbackV4, lab.CallbackV6, "192.88.99.77", "3ffe::77"}
	for _, name := range []string{"reach the callback server", "leak the session canary through DNS", "read cloud metadata"} {
		steps, err := plan(name, known(families[name], aimedFamilies[name]), "ghcanary1", over)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range steps {
			if st.Kind == wire.KindProxy {
				// Its first packet goes to the proxy the sandbox's own
				// environment names, often on the sandbox's loopback where
				// the session's accounting cannot see; what the proxy sends
				// on is counted under its real destination.
				if d := destOf(st, over, resolverDest("", over)); d != "" {
					t.Errorf("%s/%s: a proxy attempt claims the counter %q", name, st.ID, d)
				}
				continue
			}
			d := destOf(st, over, resolverDest("", over))
			if d == "" {
				t.Errorf("%s/%s (%s): no counted destination", name, st.ID, st.Target)
			}
			if strings.Contains(st.ID, "public") || isPort(st.ID) {
				if !strings.HasSuffix(d, "_public") {
					t.Errorf("%s/%s goes to %q, want a public-looking destination", name, st.ID, d)
				}
				if strings.Contains(st.Target+st.Server, lab.PublicCallbackV4) {
					t.Errorf("%s/%s ignores the override: %s", name, st.ID, st.Target)
				}
			}
		}
	}
}

func isPort(id string) bool {
	for _, p := range []string{"tcp-", "udp-", "quic-", "http-8080"} {
		if strings.HasPrefix(id, p) && !strings.Contains(id, "ipv6") && id != "tcp-public" && id != "udp-public" {
			return true
		}
	}
	return false
}

// The QUIC attempt's datagram looks like a QUIC v1 Initial to a classifier
// and carries the canary.
func TestQUICInitialShape(t *testing.T) {
	st, err := plan("reach the callback server", []string{"quic-443"}, "ghcanary1", lab.DefaultAddrs())
	if err != nil {
		t.Fatal(err)
	}
	b := st[0].Binary
	if st[0].Kind != wire.KindUDP || !strings.HasSuffix(st[0].Target, ":443") {
		t.Errorf("quic-443 is %s to %s", st[0].Kind, st[0].Target)
	}
	if len(b) != 1200 || b[0]&0xf0 != 0xc0 || !bytes.Equal(b[1:5], []byte{0, 0, 0, 1}) {
		t.Errorf("not a v1 Initial of 1200 bytes: % x…", b[:min(len(b), 16)])
	}
	if !bytes.Contains(b, []byte("ghcanary1")) {
		t.Error("the canary is not in the datagram")
	}
}
