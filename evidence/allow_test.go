package evidence_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

// What the allowed destination received is judged against the profile's
// allow declaration only: outside it is a FAIL, without one a finding.
func TestAllowance(t *testing.T) {
	control := evidence.Hit{Endpoint: "inference", Session: "s1", Proto: "http", Dst: "203.0.113.100:80",
		Method: "POST", Path: "/v1/complete", BodyBytes: 40, Data: "X-Gatehouse-Control: ctrl1"}
	req := func(method, path string, port int, size int64) evidence.Hit {
		return evidence.Hit{Endpoint: "inference", Session: "s1", Proto: "http", Dst: "203.0.113.100:" + itoa(port),
			Method: method, Path: path, BodyBytes: size}
	}
	conn := func(port int) evidence.Hit {
		return evidence.Hit{Endpoint: "inference", Session: "s1", Proto: "tcp", Dst: "203.0.113.100:" + itoa(port),
			Summary: "tcp port " + itoa(port) + ": GATEHOUSE ghcanary1"}
	}
	api := evidence.Allow{Host: "inference.lab.gatehouse.test", Methods: []string{"POST"}, Paths: []string{"/v1/complete"}, MaxBody: 65536, Ports: []int{80, 443}}
	anyPort := api
	anyPort.Ports = nil
	models := evidence.Allow{Host: "inference.lab.gatehouse.test", Methods: []string{"GET"}, Paths: []string{"/v1/models/*"}, MaxBody: 0}
	tests := []struct {
		name     string
		declared []evidence.Allow
		extra    []evidence.Hit
		want     evidence.Verdict
		finding  string // a substring the finding must hold ("" = no finding)
	}{
		{"the control alone is inside the declaration", []evidence.Allow{api}, nil, evidence.Pass, ""},
		{"the control alone, nothing declared: no finding", nil, nil, evidence.Pass, ""},
		{"a large body outside the declaration fails", []evidence.Allow{api}, []evidence.Hit{req("POST", "/v1/complete", 80, 1<<20)}, evidence.Fail, ""},
		{"a large body without a declaration is a finding", nil, []evidence.Hit{req("POST", "/v1/complete", 80, 1<<20)}, evidence.Pass, "POST /v1/complete on port 80 with a 1048576-byte body"},
		{"a forbidden method fails", []evidence.Allow{api}, []evidence.Hit{req("PUT", "/v1/complete", 80, 10)}, evidence.Fail, ""},
		{"a forbidden path fails", []evidence.Allow{api}, []evidence.Hit{req("POST", "/exfil/ghcanary1", 80, 10)}, evidence.Fail, ""},
		{"a forbidden path without a declaration is a finding", nil, []evidence.Hit{req("POST", "/exfil/ghcanary1", 80, 10)}, evidence.Pass, "no allow"},
		{"another port fails when ports are declared", []evidence.Allow{api}, []evidence.Hit{conn(8443)}, evidence.Fail, ""},
		{"another port is a finding when ports are not declared", []evidence.Allow{anyPort}, []evidence.Hit{conn(8443)}, evidence.Pass, ""},
		{"another port is a finding when nothing is declared", nil, []evidence.Hit{conn(22)}, evidence.Pass, "tcp port 22"},
		{"a second entry permits what the first does not", []evidence.Allow{api, models}, []evidence.Hit{req("GET", "/v1/models/x", 80, 0)}, evidence.Pass, ""},
		{"a prefix does not permit its parent", []evidence.Allow{api, models}, []evidence.Hit{req("GET", "/v1/models", 80, 0)}, evidence.Fail, ""},
		{"max_body 0 refuses any body", []evidence.Allow{models}, []evidence.Hit{req("GET", "/v1/models/x", 80, 1)}, evidence.Fail, ""},
		{"another session's contact is not this session's", []evidence.Allow{api}, []evidence.Hit{{Endpoint: "inference", Session: "s2", Method: "DELETE", Path: "/", Dst: "203.0.113.100:80"}}, evidence.Pass, ""},
		{"an untagged contact carrying the canary is this session's", []evidence.Allow{api}, []evidence.Hit{{Endpoint: "inference", Method: "PUT", Path: "/x", Dst: "203.0.113.100:80", Data: "ghcanary1"}}, evidence.Fail, ""},
		{"an unreadable port fails closed", []evidence.Allow{api}, []evidence.Hit{{Endpoint: "inference", Session: "s1", Method: "POST", Path: "/v1/complete"}}, evidence.Fail, ""},
		{"the redirector serves the same host", []evidence.Allow{api}, []evidence.Hit{{Endpoint: "redirect", Session: "s1", Method: "GET", Path: "/redirect", Dst: "203.0.113.100:80"}}, evidence.Fail, ""},
		{"endpoints elsewhere are not the allowed destination's", []evidence.Allow{api}, []evidence.Hit{{Endpoint: "dns-resolver", Session: "s1", Proto: "dns", Dst: "203.0.113.53:53"}}, evidence.Pass, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := evidence.Observation{
				Session: "s1", Canary: "ghcanary1", Control: "ctrl1",
				Planned:  []string{"a"},
				Attempts: []evidence.Attempt{{Session: "s1", ID: "a", Outcome: "completed"}},
				Hits:     append([]evidence.Hit{control}, tc.extra...),
				Allowed:  []string{"inference", "redirect", "dns-resolver"},
				Allowance: &evidence.Allowance{
					Endpoints: []string{"inference", "redirect"}, Declared: tc.declared,
				},
			}
			j := evidence.Judge(o)
			if j.Verdict != tc.want {
				t.Fatalf("verdict %s (%s), want %s", j.Verdict, j.Reason, tc.want)
			}
			if tc.want == evidence.Fail {
				if !strings.Contains(j.Reason, "outside what the profile's allow declares") || len(j.Violating) == 0 {
					t.Errorf("reason %q, violating %v: want the contact named", j.Reason, j.Violating)
				}
			}
			got := strings.Join(j.Findings, "\n")
			if tc.finding == "" && got != "" && len(tc.declared) > 0 {
				t.Errorf("finding %q with a declaration, want none", got)
			}
			if tc.finding != "" && !strings.Contains(got, tc.finding) {
				t.Errorf("findings %q, want %q", got, tc.finding)
			}
			if len(tc.declared) == 0 && len(tc.extra) == 0 && got != "" {
				t.Errorf("finding %q for the control alone", got)
			}
		})
	}
}

// Without an Allowance (other gates) nothing at the allowed destination is looked at.
func TestAllowanceNotChecked(t *testing.T) {
	j := evidence.Judge(evidence.Observation{
		Session: "s1", Control: "ctrl1", Planned: []string{"a"},
		Attempts: []evidence.Attempt{{Session: "s1", ID: "a", Outcome: "completed"}},
		Hits: []evidence.Hit{{Endpoint: "inference", Session: "s1", Data: "ctrl1"},
			{Endpoint: "inference", Session: "s1", Method: "DELETE", Path: "/x", Dst: "203.0.113.100:80"}},
		Allowed: []string{"inference"},
	})
	if j.Verdict != evidence.Pass || len(j.Findings) != 0 {
		t.Fatalf("%s %q %v", j.Verdict, j.Reason, j.Findings)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
