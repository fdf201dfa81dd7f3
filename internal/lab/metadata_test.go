package lab_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

func TestMetadataHeaderRules(t *testing.T) {
	l := upLab(t)
	nw := attach(t, l, "m1")
	c := client(nw)
	canary := l.Canaries()

	do := func(t *testing.T, method, url string, hdr map[string]string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, url, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	tests := []struct {
		name     string
		method   string
		url      string
		hdr      map[string]string
		status   int
		contains string // in the body ("" for none)
		endpoint string
		served   bool
	}{
		{"gcp without header", "GET", "http://169.254.169.254/computeMetadata/v1/instance/service-accounts/default/token?t=1", nil, 403, "", "metadata-gcp", false},
		{"gcp with header", "GET", "http://169.254.169.254/computeMetadata/v1/instance/service-accounts/default/token?t=2", map[string]string{"Metadata-Flavor": "Google"}, 200, canary.GCPAccessToken, "metadata-gcp", true},
		{"gcp header via proxy", "GET", "http://169.254.169.254/computeMetadata/v1/project/project-id?t=3", map[string]string{"Metadata-Flavor": "Google", "X-Forwarded-For": "1.2.3.4"}, 403, "", "metadata-gcp", false},
		{"azure without header", "GET", "http://169.254.169.254/metadata/instance?api-version=2021-02-01&t=4", nil, 400, "", "metadata-azure", false},
		{"azure with header", "GET", "http://169.254.169.254/metadata/instance?api-version=2021-02-01&t=5", map[string]string{"Metadata": "true"}, 200, "gatehouse-lab", "metadata-azure", true},
		{"azure token", "GET", "http://[fd00:ec2::254]/metadata/identity/oauth2/token?resource=x&t=6", map[string]string{"Metadata": "true"}, 200, canary.AzureAccessToken, "metadata-azure", true},
		{"aws v1 credentials", "GET", "http://169.254.169.254/latest/meta-data/iam/security-credentials/gatehouse-role?t=7", nil, 200, canary.AWSSecretAccessKey, "metadata-aws", true},
		{"aws token without ttl", "PUT", "http://169.254.169.254/latest/api/token?t=8", nil, 400, "", "metadata-aws", false},
		{"aws bad token", "GET", "http://169.254.169.254/latest/meta-data/?t=9", map[string]string{"X-aws-ec2-metadata-token": "forged"}, 401, "", "metadata-aws", false},
		{"wireserver goal state", "GET", "http://168.63.129.16/machine/?comp=goalstate&t=10", nil, 200, canary.WireServerSecret, "wireserver", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, body := do(t, tc.method, tc.url, tc.hdr)
			if status != tc.status || !strings.Contains(body, tc.contains) {
				t.Fatalf("got %d %q, want %d containing %q", status, body, tc.status, tc.contains)
			}
			tag := tc.url[strings.LastIndex(tc.url, "t="):]
			h := waitHit(t, l, "m1", func(h evidence.Hit) bool { return strings.HasSuffix(strings.Fields(h.Summary)[1], tag) })
			if h.Endpoint != tc.endpoint || h.Served != tc.served {
				t.Errorf("hit %s served=%v, want %s served=%v", h.Endpoint, h.Served, tc.endpoint, tc.served)
			}
		})
	}

	t.Run("imdsv2 token flow", func(t *testing.T) {
		status, tok := do(t, "PUT", "http://169.254.169.254/latest/api/token", map[string]string{"X-aws-ec2-metadata-token-ttl-seconds": "60"})
		if status != 200 || !strings.HasPrefix(tok, "GHCANARY-") {
			t.Fatalf("token: %d %q", status, tok)
		}
		status, body := do(t, "GET", "http://169.254.169.254/latest/meta-data/iam/security-credentials/gatehouse-role",
			map[string]string{"X-aws-ec2-metadata-token": tok})
		if status != 200 || !strings.Contains(body, canary.AWSAccessKeyID) {
			t.Fatalf("credentials with token: %d %q", status, body)
		}
		waitHit(t, l, "m1", func(h evidence.Hit) bool {
			return h.Endpoint == "metadata-aws" && h.Served && strings.Contains(h.Summary, "[imdsv2]")
		})
	})

	for _, v := range canary.All() {
		if !strings.HasPrefix(v, "GHCANARY-") {
			t.Errorf("canary %q lacks the GHCANARY- prefix", v)
		}
	}
}
