package evidence_test

import (
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

func TestAttemptOnRecord(t *testing.T) {
	tests := []struct {
		kind, outcome, err string
		want               bool
	}{
		{"find", "completed", "", true},
		{"hunt", "denied", "", true},
		{"hunt", "refused", "", true},
		{"find", "partial", "", false},
		{"find", "timeout", "", false},
		{"hunt", "error", "", false},
		{"hostcheck", "partial", "", false},
		{"hostcheck", "completed", "", true},
		// A file attempt's report is the attempt when the kernel answered
		// it: the place is not there, not a folder, refused, read-only.
		{"read", "error", "open /h/nonce: no such file or directory", true},
		{"read", "error", "open /h/nonce: not a directory", true},
		{"read", "denied", "open /h/nonce: permission denied", true},
		{"list", "completed", "", true},
		{"stash", "error", "open /x: read-only file system", true},
		{"stash", "error", "probe refuses: kernel interface /proc/x", true},
		// Not when the machine ran short (issue 22, C1): a read that ran
		// out of time, or failed for want of memory or I/O, never reached
		// the place, so it proves nothing about what is there.
		{"read", "timeout", "context deadline exceeded", false},
		{"list", "timeout", "", false},
		{"write", "timeout", "", false},
		{"stash", "timeout", "", false},
		{"read", "error", "read /h/nonce: input/output error", false},
		{"read", "error", "open /h/nonce: cannot allocate memory", false},
		{"list", "error", "readdirent /h: interrupted system call", false},
		{"read", "error", "open /h/nonce: too many open files", false},
		{"stash", "error", "write /x: resource temporarily unavailable", false},
		{"read", "error", "probe: attempt panicked: runtime error", false},
		{"stash", "error", "write /tmp/x: no space left on device", false},
		{"write", "error", "write /tmp/x: disk quota exceeded", false},
		{"http", "timeout", "", true},
	}
	for _, tt := range tests {
		if got := evidence.AttemptOnRecord(evidence.Attempt{Kind: tt.kind, Outcome: tt.outcome, Error: tt.err}); got != tt.want {
			t.Errorf("%s/%s (%q): %v, want %v", tt.kind, tt.outcome, tt.err, got, tt.want)
		}
	}
}

// A search that did not finish keeps its findings as proof of a read but
// leaves the gate INCONCLUSIVE when it found nothing.
func TestPartialSearchesInVerdicts(t *testing.T) {
	const aws = "GHCANARY-home-aws-00aa11bb22cc33dd"
	brokerOK := evidence.BrokerCheck{Checked: true, OwnAccepted: true, OtherSessionRefused: true, ExpiredRefused: true, RevokedRefused: true}
	obs := func(excerpt string) evidence.SecretsObservation {
		return evidence.SecretsObservation{
			Session: "s1", Control: "ctl1", Planted: []evidence.Planted{{Place: "home/.aws/credentials", Value: aws}},
			Planned:  []string{"home-files"},
			Attempts: []evidence.Attempt{{Session: "s1", ID: "home-files", Kind: "hunt", Outcome: "partial", Error: "partial: deadline reached", Excerpt: excerpt}},
			Hits:     []evidence.Hit{{Endpoint: "inference", Session: "s1", Data: "ctl1"}}, Allowed: []string{"inference"}, Broker: brokerOK,
		}
	}
	if j := evidence.JudgeSecrets(obs("")); j.Verdict != evidence.Inconclusive {
		t.Errorf("a partial hunt that found nothing: %s (%s), want INCONCLUSIVE", j.Verdict, j.Reason)
	}
	if j := evidence.JudgeSecrets(obs(aws + " /home/agent/.aws/credentials\n")); j.Verdict != evidence.Fail {
		t.Errorf("a partial hunt that found a canary: %s (%s), want FAIL", j.Verdict, j.Reason)
	}
	ex := evidence.ExchangeObservation{
		Parties:  []evidence.Party{{Session: "a", Planned: []string{"mount-points"}}, {Session: "b", Planned: []string{"mount-points"}}},
		Attempts: []evidence.Attempt{{Session: "a", ID: "mount-points", Kind: "find", Outcome: "timeout"}, {Session: "b", ID: "mount-points", Kind: "find", Outcome: "completed"}},
	}
	if j, _ := evidence.JudgeExchange(ex); j.Verdict != evidence.Inconclusive || !strings.Contains(j.Reason, "mount-points in a") {
		t.Errorf("a timed-out find: %s (%s), want INCONCLUSIVE naming it", j.Verdict, j.Reason)
	}
}
