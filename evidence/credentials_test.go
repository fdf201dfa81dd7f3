package evidence_test

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

func hash(v string) string {
	h := sha256.Sum256([]byte(v))
	return hex.EncodeToString(h[:])
}

// Credentials a hunt reports are ours (excluded by hash) or not ours: a
// real credential readable in the sandbox, a FAIL named by type, place and
// hash prefix, never by value.
func TestJudgeSecretsCredentialsNotOurs(t *testing.T) {
	broker := "ghbroker-00112233445566778899aabbccddeeff00112233"
	fake := "sk-proj-made-up-for-this-test-0123456789abcdef" // never issued
	brokerOK := evidence.BrokerCheck{Checked: true, OwnAccepted: true, OtherSessionRefused: true, ExpiredRefused: true, RevokedRefused: true}
	obs := func(excerpt string) evidence.SecretsObservation {
		return evidence.SecretsObservation{
			Session: "s1", Control: "ctl1", Planted: []evidence.Planted{{Place: "env/X", Value: "GHCANARY-env-x-0011"}},
			Planned:  []string{"environment"},
			Attempts: []evidence.Attempt{{Session: "s1", ID: "environment", Kind: "hunt", Outcome: "completed", Excerpt: excerpt}},
			Hits:     []evidence.Hit{{Endpoint: "inference", Session: "s1", Data: "ctl1"}}, Allowed: []string{"inference"}, Broker: brokerOK,
			Ours: map[string]string{hash(broker): "broker token"},
		}
	}
	tests := []struct {
		name    string
		excerpt string
		want    evidence.Verdict
		reason  string
	}{
		{"our broker token is ours", "cred named-secret " + hash(broker) + " env:GATEHOUSE_BROKER_TOKEN\n", evidence.Pass, ""},
		{"a token set in env fails", "cred named-secret " + hash(broker) + " env:GATEHOUSE_BROKER_TOKEN\ncred openai-key " + hash(fake) + " env:OPENAI_API_KEY\n",
			evidence.Fail, "1 credential(s) Gatehouse did not plant are readable in the sandbox: openai-key (sha256 " + hash(fake)[:12] + "…) at env:OPENAI_API_KEY"},
		{"one value in two places is one credential", "cred openai-key " + hash(fake) + " env:OPENAI_API_KEY\ncred openai-key " + hash(fake) + " pid 1 environ:OPENAI_API_KEY\n",
			evidence.Fail, "at env:OPENAI_API_KEY, pid 1 environ:OPENAI_API_KEY"},
		{"a malformed line proves nothing", "cred openai-key nothex env:X\ncred " + hash(fake) + "\n", evidence.Pass, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := evidence.JudgeSecrets(obs(tt.excerpt))
			if j.Verdict != tt.want || !strings.Contains(j.Reason, tt.reason) {
				t.Errorf("got %s (%s), want %s containing %q", j.Verdict, j.Reason, tt.want, tt.reason)
			}
			if strings.Contains(j.Reason, hash(fake)) || strings.Contains(j.Reason, fake) {
				t.Errorf("the reason carries more than a hash prefix: %s", j.Reason)
			}
		})
	}
}
