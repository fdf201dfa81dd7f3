package lab_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/lab"
)

// The allowed destination records what it received: method, path and the
// body's full size (only its first bytes kept), on every port of its
// address; the harness's proxy port stays closed.
func TestAllowedDestinationRecordsWhatArrived(t *testing.T) {
	l := upLab(t)
	nw := attach(t, l, "alw")
	c := client(nw)
	big := bytes.Repeat([]byte("x"), 3<<20)
	for _, tc := range []struct {
		method, path string
		body         []byte
	}{
		{"POST", "/v1/complete", big},
		{"PUT", "/v1/complete", []byte("marker-put")},
		{"DELETE", "/exfil/marker-del", nil},
	} {
		req, _ := http.NewRequest(tc.method, "http://"+lab.InferenceV4+tc.path+"?m="+tc.method, bytes.NewReader(tc.body))
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", tc.method, tc.path, err)
		}
		resp.Body.Close()
		h := waitHit(t, l, "alw", func(h evidence.Hit) bool { return h.Method == tc.method })
		if h.Endpoint != "inference" || h.Path != tc.path || h.BodyBytes != int64(len(tc.body)) {
			t.Errorf("hit %s %s %s %d bytes, want inference %s %s %d bytes", h.Endpoint, h.Method, h.Path, h.BodyBytes, tc.method, tc.path, len(tc.body))
		}
		if len(h.Data) > 4<<10 {
			t.Errorf("hit kept %d bytes of data", len(h.Data))
		}
	}
	// 3128 too: the harness names no proxy there, so a contact on it is
	// the allowed host on a port the policy may not have meant.
	for _, port := range []string{"22", "3128", "8443"} {
		conn, err := dial(context.Background(), nw, "tcp", lab.InferenceV4+":"+port)
		if err != nil {
			t.Fatalf("dial :%s: %v", port, err)
		}
		_, _ = conn.Write([]byte("hello-" + port))
		h := waitHit(t, l, "alw", func(h evidence.Hit) bool { return strings.Contains(h.Data, "hello-"+port) })
		conn.Close()
		if h.Endpoint != "inference" || h.Dst != lab.InferenceV4+":"+port || !strings.Contains(h.Summary, "tcp port "+port) {
			t.Errorf("hit %s dst %s %q, want inference on port %s", h.Endpoint, h.Dst, h.Summary, port)
		}
	}
}
