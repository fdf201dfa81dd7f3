package lab_test

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/lab"
)

// needLab skips unless this process can create network namespaces.
func needLab(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs iproute2's ip command")
	}
}

// upLab starts a lab and checks, at the end of the test, that closing it
// left none of its namespaces behind.
func upLab(t *testing.T) *lab.Lab {
	t.Helper()
	needLab(t)
	ctx := context.Background()
	l, err := lab.Up(ctx, lab.Options{Logf: t.Logf})
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	t.Cleanup(func() {
		ctx := context.WithoutCancel(ctx)
		if err := l.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
		if left := labNamespaces(t, l.Name()); len(left) > 0 {
			t.Errorf("namespaces left after Close: %v", left)
		}
	})
	return l
}

// labNamespaces lists the namespaces of one lab (other labs on the machine,
// from other tests or people, are not ours to judge).
func labNamespaces(t *testing.T, name string) []string {
	t.Helper()
	all, err := lab.List(context.Background())
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	var out []string
	for _, n := range all {
		if n == name || strings.HasPrefix(n, name+"-") {
			out = append(out, n)
		}
	}
	return out
}

func attach(t *testing.T, l *lab.Lab, session string) lab.Network {
	t.Helper()
	nw, err := l.Attach(context.Background(), session)
	if err != nil {
		t.Fatalf("Attach %s: %v", session, err)
	}
	return nw
}

// dial opens a connection from inside the session namespace.
func dial(ctx context.Context, nw lab.Network, network, addr string) (net.Conn, error) {
	var c net.Conn
	err := lab.InNetns(nw.NetnsPath, func() (err error) {
		d := net.Dialer{Timeout: 3 * time.Second}
		c, err = d.DialContext(ctx, network, addr)
		return err
	})
	return c, err
}

// client is an HTTP client whose connections start in the session
// namespace. It does not follow redirects: the tests look at them.
func client(nw lab.Network) *http.Client {
	return &http.Client{
		Timeout: 5 * time.Second,
		Transport: &http.Transport{
			DialContext:     func(ctx context.Context, n, a string) (net.Conn, error) { return dial(ctx, nw, n, a) },
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // the lab's cert is self-signed on purpose
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// waitHit waits for a hit of the session that matches, since some (ICMP)
// are recorded apart from the reply the client sees.
func waitHit(t *testing.T, l *lab.Lab, session string, match func(evidence.Hit) bool) evidence.Hit {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		for _, h := range l.HitsFor(session) {
			if match(h) {
				return h
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no matching hit for session %s; hits: %+v", session, l.Hits())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
