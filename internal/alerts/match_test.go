package alerts_test

import (
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/detect"
	"github.com/gatehouse-dev/gatehouse/internal/alerts"
)

// The samples' alerts match the attempts they describe, and only those:
// another session's alert, or one received outside the window, does not.
func TestSamplesMatchAttempts(t *testing.T) {
	from := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	session := []detect.SessionKey{{LoginUID: 4242}}
	attempts := map[string]detect.Attempt{
		"callback":   {ID: "callback", Keys: session, Kind: detect.KindConnect, Object: "203.0.113.10:80"},
		"credential": {ID: "credential", Keys: session, Kind: detect.KindOpen, Object: "/home/agent/.aws/credentials"},
		"ipv6":       {ID: "ipv6", Keys: session, Kind: detect.KindConnect, Object: "[2001:db8:cafe::10]:80"},
	}
	type sample struct {
		parse alerts.Parser
		raw   []byte
	}
	var all []sample
	for _, l := range lines(t, "falco_file.jsonl") {
		all = append(all, sample{alerts.ParseFalco, l})
	}
	for _, l := range lines(t, "tetragon.jsonl") {
		all = append(all, sample{alerts.ParseTetragon, l})
	}
	all = append(all, sample{alerts.ParseAudit, readFile(t, "audit.log")}, sample{alerts.ParseOCSF, readFile(t, "ocsf_finding.json")})

	matched := map[string]map[string]bool{} // attempt → sources that matched it
	for _, s := range all {
		es, err := s.parse(s.raw, from.Add(300*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			for id, a := range attempts {
				a.From, a.To = from, from.Add(time.Second)
				if detect.Match(e, a, 0) {
					if matched[id] == nil {
						matched[id] = map[string]bool{}
					}
					matched[id][e.Source] = true
				}
				other := a
				other.Keys = []detect.SessionKey{{LoginUID: 4243}}
				if detect.Match(e, other, 0) {
					t.Errorf("%s %s matched another session's attempt %s", e.Source, e.Rule, id)
				}
				late := a
				late.From, late.To = from.Add(2*time.Second), from.Add(3*time.Second)
				if detect.Match(e, late, 0) {
					t.Errorf("%s %s matched attempt %s outside its window", e.Source, e.Rule, id)
				}
			}
		}
	}
	want := map[string][]string{
		"callback":   {"falco", "tetragon", "audit", "ocsf"},
		"credential": {"falco", "tetragon", "audit"},
		"ipv6":       {"falco", "tetragon", "audit"},
	}
	for id, sources := range want {
		for _, s := range sources {
			if !matched[id][s] {
				t.Errorf("attempt %s not matched by %s (matched: %v)", id, s, matched[id])
			}
		}
		if len(matched[id]) != len(sources) {
			t.Errorf("attempt %s matched by %v, want exactly %v", id, matched[id], sources)
		}
	}
}
